"""A recipe and the solver it builds declare one set of families."""

from __future__ import annotations

import pytest

from kernelfuse import FAMILIES, get_registry


@pytest.mark.parametrize("name", get_registry().names("recipe"))
def test_every_recipe_builds_a_solver_of_its_declared_families(name):
    """One set of flags: the built solver solves the families its recipe declares, by name, and
    no other built-in family (its parts may, at other settings: another recipe picks those)."""
    recipe = get_registry().get("recipe", name).factory
    built = recipe.build(get_registry())
    assert built.families == recipe.families
    assert {f for f, family in FAMILIES.items() if built.solves(family)} == set(recipe.families)
