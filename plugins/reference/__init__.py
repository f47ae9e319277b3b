"""The exact reference solver: every family of OBJECTIVES.md as a cvxpy program."""

from __future__ import annotations

from kernelfuse.assembly.recipe import Recipe
from kernelfuse.parts.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.plugins.reference.cvxpy_solver import CvxpyReference

    registry.add(
        "recipe",
        "cvxpy",
        Recipe("cvxpy", CvxpyReference, description=(CvxpyReference.__doc__ or "").splitlines()[0]),
    )
