"""Solvers composed only from registered parts (plugins/variants/recipes.py), against cvxpy."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from kernelfuse.errors import KernelfuseError
from kernelfuse.testing import check_solver


@pytest.mark.parametrize("solver, family", [
    ("mlmkl-max-md", "mlmkl_max"),
    ("mlmkl-max-averaged-md", "mlmkl_max"),
    ("mlmkl-simplemkl", "mlmkl_sum"),
])
def test_variant_reaches_the_cvxpy_optimum(solver, family):
    # tol 1e-3: mirror descent's steps grow like 1/tol (1e-4 took 20 s for these two problems)
    differences = check_solver(solver, family, seeds=(0, 1), C=1.0, tol=1e-3, rtol=1e-3)
    assert max(differences) <= 1e-3


def test_variants_certify_their_gap_and_refuse_other_families():
    from kernelfuse.testing import small_problem

    K, Y, _ = small_problem("mlmkl_max", 3, 30, 4)
    result = kernelfuse.solve(K, Y, solver="mlmkl-max-md", family="mlmkl_max", C=1.0, tol=1e-3)
    assert result.converged and 0.0 <= result.gap <= 1e-3
    assert result.kernel_weights.sum() == pytest.approx(1.0)
    # Its oracle solves the multi-label families only: another family is refused by name.
    with pytest.raises(KernelfuseError, match="l1_mkl_sq"):
        kernelfuse.solve(K, np.where(Y[:, 0] > 0, 1.0, -1.0), solver="mlmkl-max-md",
                         family="l1_mkl_sq", C=1.0)
    parts = kernelfuse.get_registry().get("recipe", "mlmkl-simplemkl").factory.parts
    assert dict(parts)["optimizer"] == ("optimizer", "reduced-gradient")
    assert np.isfinite(result.dual_objective)


@pytest.mark.parametrize("parts, message", [
    ({"optimizer": "mirror-descent", "optimizer.mirror_map": "prox:block-soft-threshold", "oracle": "vskl-bca"},
     "mirror_map 'block-soft-threshold' lacks grad_h()"),
    ({"optimizer": "mirror-descent", "optimizer.mirror_map": "entropic", "oracle": "vskl-bca",
      "oracle.svm_solver": "kernel:gaussian"},
     "svm_solver 'gaussian' lacks solve()"),
    ({"optimizer": "mirror-descent", "oracle": "vskl-bca", "oracle.svm_solver": "active-set"},
     "its optimizer 'mirror-descent' needs a mirror_map part (name it as role 'optimizer.mirror_map')"),
])
def test_a_part_of_the_wrong_sort_fails_as_the_solver_is_built(parts, message):
    from kernelfuse.assembly.composition import compose
    from kernelfuse.errors import IncompatiblePartsError

    with pytest.raises(IncompatiblePartsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compose(parts).build()
