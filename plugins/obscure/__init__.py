"""OBSCURE / UFO-MKL (Orabona, Jie and Caputo, "Multi Kernel Learning with Online-Batch Optimization"), as parts.

* ``group_norm_map``: the (2,p) group-norm mirror map and Lemma 1's projection, kind ``mirror_map``;
* ``expansion``: the dual iterate of section 3.1, as products ``K_m A_c`` (``kernel_expansion``,
  a stack or rows) or primal vectors ``Phi_m' A_c`` (``feature_expansion``, kernel factors);
* ``example_subgradient``: the per-example sub-gradient, kind ``sampler``;
* ``online_batch``: the online stage (Algorithm 1), the stochastic stage (Algorithm 2) and the
  dual coordinate stage (``dual_coordinate``), kind ``optimizer``;
* ``expansion_model``: the epoch's model, its ``pnorm_mkl`` objective and bound, kind ``oracle``.

Solvers: ``obscure`` and ``pegasos-mkl`` (the same parts, ``s_t = 0`` and no online stage).
"""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.assembly.outer_loop import OuterLoop
    from kernelfuse.assembly.recipe import Recipe
    from kernelfuse.plugins.obscure.example_subgradient import ExampleSubgradient
    from kernelfuse.plugins.obscure.expansion_model import ExpansionModel
    from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
    from kernelfuse.plugins.obscure.online_batch import OnlineBatch

    registry.add("mirror_map", GroupNormMirrorMap.name, GroupNormMirrorMap,
                 description="OBSCURE: (q/2)||w||_{2,p}^2 over kernel blocks; grad h* scales each block, "
                             "projection onto the (2,p) ball by scaling (Lemma 1)")
    registry.add("sampler", ExampleSubgradient.name, ExampleSubgradient,
                 description="OBSCURE: the loss's sub-gradient at one sampled example")
    registry.add("optimizer", OnlineBatch.name, OnlineBatch,
                 description="OBSCURE: online stage (Alg. 1), then stochastic proximal projected "
                             "sub-gradient epochs with adaptive steps (Alg. 2)")
    registry.add("oracle", ExpansionModel.name, ExpansionModel,
                 description="OBSCURE: the model of a kernel expansion under the (2,p) map and its objective")
    parts = {"optimizer": ("optimizer", "online-batch"), "oracle": ("oracle", "expansion-model"),
             "optimizer.sampler": ("sampler", "example-subgradient")}
    defaults = {"stop": "gap", "tol": 1e-3, "max_iter": 1000}
    for recipe in (
        Recipe("obscure", OuterLoop, parts=parts, families=frozenset({"pnorm_mkl"}), defaults=defaults,
               description="OBSCURE: p-norm MKL in the primal, online then stochastic stage "
                           "(binary hinge, multiclass Crammer-Singer)"),
        Recipe("pegasos-mkl", OuterLoop, parts=parts, families=frozenset({"pnorm_mkl"}),
               defaults={**defaults, "max_iter": 100, "optimizer.adaptive": False, "optimizer.online_epochs": 0,
                         "optimizer.stochastic_epochs": None},
               description="Pegasos-MKL: OBSCURE's stochastic stage with s_t = 0 and no online stage"),
    ):
        registry.add("recipe", recipe.name, recipe, description=recipe.description)
