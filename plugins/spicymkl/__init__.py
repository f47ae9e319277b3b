"""SpicyMKL (Suzuki and Tomioka, 2009), as parts.

* ``augmented_lagrangian``: the outer optimiser (eqs. 3-6, 10-11), kind ``optimizer``, moving a
  ``proximal_point`` (a centre and its penalties);
* ``smoothed_dual_newton``: the inner oracle, Newton on ``phi_gamma`` (eqs. 7-9, 12), kind
  ``oracle``, with its numerics: ``active_kernels`` (Remark 1, the free line search of section
  3.4), ``newton_system`` (dense, or Woodbury from kernel factors), ``dual_loss_terms`` (eq. 7,
  section 3.3) and ``kernel_norm_bounds`` (the kernels' norms between reads);
* block soft-thresholding is the radial prox of the problem's regulariser (``BlockL1.radial_prox``);
  any penalty ``sum_m h(||f_m||)`` with a radial prox (a ``SeparablePenalty``) is solved the same way,
  a family a plugin registers included (``SmoothedDualNewton.solves``).

The solver ``spicymkl`` is the recipe assembling them in an ``OuterLoop``.
"""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.assembly.outer_loop import OuterLoop
    from kernelfuse.assembly.recipe import Recipe
    from kernelfuse.plugins.spicymkl.augmented_lagrangian import AugmentedLagrangian
    from kernelfuse.plugins.spicymkl.smoothed_dual_newton import SmoothedDualNewton

    registry.add("optimizer", AugmentedLagrangian.name, AugmentedLagrangian,
                 description="SpicyMKL: proximal minimisation (dual augmented Lagrangian), "
                             "non-decreasing penalties")
    registry.add("oracle", SmoothedDualNewton.name, SmoothedDualNewton,
                 description="SpicyMKL: Newton on the smoothed dual over the active kernels")
    recipe = Recipe(
        "spicymkl", OuterLoop,
        parts={
            "optimizer": ("optimizer", "augmented-lagrangian"),
            "oracle": ("oracle", "smoothed-dual-newton"),
        },
        description="SpicyMKL: dual augmented Lagrangian with a Newton inner solver (l1_mkl, any "
                    "loss with a conjugate or a conjugate prox; elastic net)",
        families=frozenset({"l1_mkl"}),
        defaults={"max_iter": 50},
    )
    registry.add("recipe", recipe.name, recipe, description=recipe.description)
