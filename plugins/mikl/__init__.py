"""MIKL (Kowalski, Szafranski and Ralaivola, "Multiple Indefinite Kernel Learning with Mixed Norm
Regularization"), as parts.

* ``mixed_norm_prox``: the l_{pq;r} penalties and their proximal maps (Proposition 3), kind ``prox``;
* ``squared_hinge_gradient``: the smooth part, its gradient and a duality gap, kind ``oracle``;
* ``forward_backward``: proximal gradient, plain or accelerated with restart (Algorithms 1-2), kind ``optimizer``;
* ``proximal_newton``: proximal Newton with the squared hinge's generalised Hessian, kind ``optimizer``.

The solvers ``mikl`` (proximal Newton, the default) and ``mikl-forward-backward`` (the paper's
algorithms) assemble them in an ``OuterLoop``.
"""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.assembly.outer_loop import OuterLoop
    from kernelfuse.assembly.recipe import Recipe
    from kernelfuse.plugins.mikl.forward_backward import ForwardBackward
    from kernelfuse.plugins.mikl.mixed_norm_prox import MixedNormProx
    from kernelfuse.plugins.mikl.proximal_newton import ProximalNewton
    from kernelfuse.plugins.mikl.squared_hinge_gradient import SquaredHingeGradient

    registry.add("prox", MixedNormProx.name, MixedNormProx,
                 description="MIKL: prox of (lam/q)||alpha||_{pq;r}^q (l1, l2 squared, l21, l12 elitist "
                             "lasso), groups samples (r=1) or kernels (r=2)")
    registry.add("oracle", SquaredHingeGradient.name, SquaredHingeGradient,
                 description="MIKL: squared hinge at the model, its gradient, and a Fenchel duality gap")
    registry.add("optimizer", ForwardBackward.name, ForwardBackward,
                 description="MIKL: forward-backward proximal gradient, plain or FISTA with adaptive restart")
    registry.add("optimizer", ProximalNewton.name, ProximalNewton,
                 description="MIKL: proximal Newton with the squared hinge's generalised Hessian, "
                             "inner FISTA on a working set, line search on P")
    recipe = Recipe(
        "mikl-forward-backward", OuterLoop,
        parts={"optimizer": ("optimizer", "forward-backward"),
               "oracle": ("oracle", "squared-hinge-gradient")},
        description="MIKL: forward-backward proximal descent on indefinite kernels with l_{pq;r} "
                    "mixed norms (certified duality gap)",
        families=frozenset({"mikl"}),
        defaults={"max_iter": 20000},
    )
    registry.add("recipe", recipe.name, recipe, description=recipe.description)
    newton = Recipe(
        "mikl", OuterLoop,
        parts={"optimizer": ("optimizer", "proximal-newton"),
               "oracle": ("oracle", "squared-hinge-gradient")},
        description="MIKL: proximal Newton (generalised Hessian of the squared hinge) with l_{pq;r} "
                    "mixed norms (certified duality gap)",
        families=frozenset({"mikl"}),
        defaults={"max_iter": 500},
    )
    registry.add("recipe", newton.name, newton, description=newton.description)
