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


def test_a_family_the_parts_could_take_but_the_recipe_does_not_declare_is_refused_by_name():
    import kernelfuse
    from kernelfuse import IncompatiblePartsError
    from kernelfuse.testing import small_problem

    K, Y, _ = small_problem("mlmkl_max", 0, n=20, n_kernels=3)
    refusal = "'mlmkl-sum' does not solve family 'mlmkl_max'; it solves mlmkl_sum"
    with pytest.raises(IncompatiblePartsError, match=refusal):
        kernelfuse.solve(K, Y, solver="mlmkl-sum", family="mlmkl_max")
    assert kernelfuse.solve(K, Y, solver="mlmkl-max-md", family="mlmkl_max", max_iter=3).family == "mlmkl_max"
