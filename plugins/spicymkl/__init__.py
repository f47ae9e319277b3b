"""SpicyMKL (Suzuki and Tomioka, 2009): parts and the ``spicymkl`` recipe."""

from __future__ import annotations

from kernelfuse.hookspecs import hookimpl


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    from kernelfuse.plugins.spicymkl.solver import as_recipe

    recipe = as_recipe()
    registry.add("solver", recipe.name, recipe, description=recipe.description)
