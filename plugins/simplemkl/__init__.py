"""SimpleMKL (Rakotomamonjy, Bach, Canu and Grandvalet, JMLR 2008), the baseline, as parts.

* ``reduced_gradient``: the reduced gradient over the kernel weights with a
  line search (section 3), kind ``optimizer``.

The solver ``simplemkl`` assembles it with mirrorVSKL's SVM oracle
(``vskl-bca``, which on ``l1_mkl_sq`` answers SimpleMKL's SVM) and an SVM solver.
"""

from __future__ import annotations

from kernelfuse.assembly.outer_loop import OuterLoop
from kernelfuse.assembly.recipe import Recipe
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.simplemkl.reduced_gradient import ReducedGradient

RECIPE = Recipe(
    "simplemkl", OuterLoop,
    parts={
        "optimizer": ("optimizer", "reduced-gradient"),
        "oracle": ("oracle", "vskl-bca"),
        "oracle.svm_solver": ("svm_solver", "active-set"),
    },
    description="SimpleMKL: reduced gradient with golden-section search, SVM inner solver",
    families=frozenset({"l1_mkl_sq"}),
)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("optimizer", ReducedGradient.name, ReducedGradient)
    registry.add("recipe", RECIPE.name, RECIPE, description=RECIPE.description)
