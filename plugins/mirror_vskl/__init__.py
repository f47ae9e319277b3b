"""mirrorVSKL (Aflalo et al., "Variable Sparsity Kernel Learning", JMLR 2011), as parts.

* ``mirror_descent``: mirror descent over the kernel weights, a product of
  simplices (section 4), kind ``optimizer``;
* ``vskl_bca``: the block-coordinate-ascent oracle and its certified bound, kind ``oracle``;
* ``local_quadratic``: projected Newton steps as a mirror map, kind ``mirror_map``
  (``mirror_map="entropic"`` is the paper's entropic map, ``plugins/mirror_maps``), from the
  SVM curvature of :mod:`kernelfuse.numerics.svm_curvature` (shared with ML-MKL's oracle) and the
  simplex QP of :mod:`kernelfuse.numerics.simplex_qp` (shared with the kernel geometry).

The solver ``mirror-vskl`` is the recipe assembling them in an ``OuterLoop``
(families ``vskl`` and ``l1_mkl_sq``).
"""

from __future__ import annotations

from kernelfuse.assembly.outer_loop import OuterLoop
from kernelfuse.assembly.recipe import Recipe
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.mirror_vskl.local_quadratic import LocalQuadraticSimplices
from kernelfuse.plugins.mirror_vskl.mirror_descent import MirrorDescent
from kernelfuse.plugins.mirror_vskl.vskl_bca import VSKLBlockCoordinateAscent

RECIPE = Recipe(
    "mirror-vskl", OuterLoop,
    parts={
        "optimizer": ("optimizer", "mirror-descent"),
        "optimizer.mirror_map": ("mirror_map", "local-quadratic"),
        "oracle": ("oracle", "vskl-bca"),
        "oracle.svm_solver": ("svm_solver", "active-set"),
    },
    description="mirrorVSKL: mirror descent on kernel weights (projected Newton steps; "
                "mirror_map='entropic': the paper's), BCA oracle, SVM inner solver",
    families=frozenset({"vskl", "l1_mkl_sq"}),
)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("optimizer", MirrorDescent.name, MirrorDescent)
    registry.add("oracle", VSKLBlockCoordinateAscent.name, VSKLBlockCoordinateAscent)
    registry.add("mirror_map", LocalQuadraticSimplices.name, LocalQuadraticSimplices)
    registry.add("recipe", RECIPE.name, RECIPE, description=RECIPE.description)
