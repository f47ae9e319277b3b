"""SpicyMKL (smooth losses) against the exact cvxpy optimum of l1_mkl, and its certificate."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from kernelfuse import IncompatiblePartsError, Problem, objectives
from kernelfuse.duality import l1_mkl_lower_bound

from helpers import breast_cancer_kernels

REL_TOL = 1e-6  # the tolerance for SpicyMKL against cvxpy


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("C", [0.02, 0.1, 0.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_spicymkl_reaches_the_cvxpy_optimum(loss, C, seed):
    K, y = breast_cancer_kernels(n=50, m=8, seed=seed)
    if loss == "squared":
        y = 0.7 * y + 0.1
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, C=C)
    result = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C)
    assert result.status == "converged" and result.gap <= 1e-6
    scale = max(1.0, abs(reference.objective))
    assert abs(result.objective - reference.objective) / scale <= REL_TOL
    assert result.dual_objective <= reference.objective + 1e-7 * scale  # a valid bound
    problem = Problem.create(K, y, "l1_mkl", loss=loss, C=C)
    assert objectives.evaluate(problem, result.coef, result.intercept) == pytest.approx(
        result.objective, rel=1e-12)
    # The selected kernels match cvxpy's where its weights are clearly non-zero.
    clear = reference.kernel_weights > 1e-3
    assert np.all(result.kernel_weights[clear] > 1e-4)
    assert np.all(result.kernel_weights[reference.kernel_weights < 1e-7] < 1e-3)


def test_lower_bound_is_feasible_and_valid():
    K, y = breast_cancer_kernels(n=40, m=5, seed=3)
    problem = Problem.create(K, y, "l1_mkl", loss="logistic", C=0.1)
    optimum = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss="logistic", C=0.1).objective
    rng = np.random.default_rng(0)
    for _ in range(20):
        rho = -y * rng.uniform(0.05, 0.95, size=y.size)
        bound, passes = l1_mkl_lower_bound(problem, rho)
        assert passes == 1
        assert bound <= optimum + 1e-9 or bound == -np.inf


def test_hinge_losses_and_the_elastic_net_are_refused_clearly():
    K, y = breast_cancer_kernels(n=30, m=3, seed=0)
    with pytest.raises(IncompatiblePartsError, match=r"loss 'hinge' lacks conjugate_derivative\(\)"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="hinge", C=0.1)
    with pytest.raises(IncompatiblePartsError, match="C2 = 0"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=0.1, C2=0.5)
