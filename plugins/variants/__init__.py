"""Solvers no seed paper has, assembled from registered parts only (kind ``solver``, :mod:`.recipes`)."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.variants.recipes import VARIANTS


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for recipe in VARIANTS:
        registry.add("recipe", recipe.name, recipe, description=recipe.description)
