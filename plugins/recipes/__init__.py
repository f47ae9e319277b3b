"""Named solvers: each a recipe over registered parts (kind ``solver``).

* ``mirror-vskl``: mirror descent over the kernel weights (a product of
  simplices, one per group) + the block-coordinate-ascent oracle of
  mirrorVSKL + an SVM solver; families ``vskl`` and ``l1_mkl_sq``.  Its map
  is the ``local-quadratic`` one (projected Newton steps from the oracle's
  curvature); ``mirror_map="entropic"`` is the paper's entropic mirror
  descent.
* ``simplemkl``: SimpleMKL's reduced gradient + the same oracle and SVM
  solver; family ``l1_mkl_sq``.
* ``average``: the average-kernel SVM baseline;
* ``variants``: solvers no seed paper has, from the registered parts only
  (``mlmkl-max-md``, ``mlmkl-max-averaged-md``, ``mlmkl-simplemkl``).
"""

from __future__ import annotations

from kernelfuse.hookspecs import hookimpl
from kernelfuse.outer_loop import OuterLoop
from kernelfuse.plugins.recipes.average_kernel import AverageKernelSVM
from kernelfuse.plugins.recipes.variants import VARIANTS
from kernelfuse.recipe import Recipe

DEFAULT_SVM = ("svm_solver", "active-set")

RECIPES = (
    Recipe(
        "mirror-vskl", OuterLoop,
        parts={
            "optimizer": ("optimizer", "mirror-descent"),
            "optimizer.mirror_map": ("prox", "local-quadratic"),
            "oracle": ("oracle", "vskl-bca"),
            "oracle.svm_solver": DEFAULT_SVM,
        },
        description="mirrorVSKL: mirror descent on kernel weights (projected Newton steps; "
                    "mirror_map='entropic': the paper's), BCA oracle, SVM inner solver",
        families=frozenset({"vskl", "l1_mkl_sq"}),
    ),
    Recipe(
        "simplemkl", OuterLoop,
        parts={
            "optimizer": ("optimizer", "reduced-gradient"),
            "oracle": ("oracle", "vskl-bca"),
            "oracle.svm_solver": DEFAULT_SVM,
        },
        description="SimpleMKL: reduced gradient with golden-section search, SVM inner solver",
        families=frozenset({"l1_mkl_sq"}),
    ),
    Recipe(
        "average", AverageKernelSVM, parts={"svm_solver": DEFAULT_SVM},
        description="baseline: the SVM on the mean kernel (uniform weights)",
    ),
)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for recipe in RECIPES + VARIANTS:
        registry.add("solver", recipe.name, recipe, description=recipe.description)
