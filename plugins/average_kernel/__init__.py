"""The average-kernel SVM, the baseline every MKL paper compares with (kind ``solver``: ``average``)."""

from __future__ import annotations

from kernelfuse.assembly.recipe import Recipe
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.average_kernel.average_kernel import AverageKernelSVM

RECIPE = Recipe(
    "average", AverageKernelSVM, parts={"svm_solver": ("svm_solver", "active-set")},
    description="baseline: the SVM on the mean kernel (uniform weights)",
)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("recipe", RECIPE.name, RECIPE, description=RECIPE.description)
