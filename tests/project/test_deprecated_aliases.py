"""Modules and names that moved stay importable from their old place, with a DeprecationWarning."""

import importlib
import sys

import pytest


@pytest.mark.parametrize("old, new, name", [
    ("kernelfuse.kernels.geometry", "kernelfuse.numerics.geometry", "alignment"),
    ("kernelfuse.kernels.simplex_qp", "kernelfuse.numerics.simplex_qp", "SimplexQP"),
    ("kernelfuse.parts.svm_curvature", "kernelfuse.numerics.svm_curvature", "svm_curvature_factor"),
])
def test_a_moved_module_is_an_alias(old, new, name):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize("name", ["intercept_from_alpha", "centred_kernel", "svm_dual_value", "margins"])
def test_the_svm_duals_numerics_moved_from_the_contract(name):
    from kernelfuse.numerics import svm_dual
    from kernelfuse.parts import svm_solver

    with pytest.warns(DeprecationWarning, match=f"svm_solver.{name} moved to kernelfuse.numerics.svm_dual"):
        moved = getattr(svm_solver, name)
    assert moved is getattr(svm_dual, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        svm_solver.nothing  # noqa: B018


@pytest.mark.parametrize("name, new", [("part_with", "kernelfuse.assembly.requirements"),
                                       ("compose", "kernelfuse.assembly.composition"),
                                       ("ROLE_KINDS", "kernelfuse.assembly.composition")])
def test_the_recipes_helpers_moved_apart(name, new):
    from kernelfuse.assembly import recipe

    with pytest.warns(DeprecationWarning, match=f"recipe.{name} moved to {new}.{name}"):
        moved = getattr(recipe, name)
    assert moved is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        recipe.nothing  # noqa: B018
