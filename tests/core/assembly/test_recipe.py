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


def test_a_recipe_of_several_families_solves_its_default_unless_told():
    import numpy as np

    import kernelfuse
    from kernelfuse import IncompatiblePartsError, Recipe
    from kernelfuse.assembly.outer_loop import OuterLoop
    from kernelfuse.testing import small_problem

    K, Y, _ = small_problem("mlmkl_sum", 0, n=20, n_kernels=3)
    assert kernelfuse.solve(K, Y, solver="mlmkl-sum", max_iter=3).family == "mlmkl_sum"
    worst = kernelfuse.solve(K, Y, solver="mlmkl-sum", family="mlmkl_max", mirror_map="entropic", max_iter=3)
    assert worst.family == "mlmkl_max" and np.isfinite(worst.objective)
    assert kernelfuse.MultiLabelMKLClassifier(solver="mlmkl-sum").family_name() == "mlmkl_sum"
    with pytest.raises(IncompatiblePartsError, match="default family 'vskl' is not one of"):
        Recipe("x", OuterLoop, parts={}, families=frozenset({"l1_mkl"}), default_family="vskl")
