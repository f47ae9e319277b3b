"""Sample weights in the problem: checked once, naming ``sample_weight``; refused by the solvers
that do not declare them, naming those that do."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from kernelfuse import ValidationError
from kernelfuse.problem import objectives
from kernelfuse.problem.instance import Problem


def data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    K = np.stack([np.outer(X[:, j], X[:, j]) + 0.01 * np.eye(n) for j in range(2)])
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return K, y


@pytest.mark.parametrize("weights", [
    -np.ones(12), np.r_[np.ones(11), np.nan], np.r_[np.ones(11), np.inf], np.ones(11), np.ones((12, 1)),
    np.zeros(12), ["a"] * 12, {"w": 1}, object(),
], ids=["negative", "nan", "inf", "short", "2-d", "all-zero", "strings", "dict", "object"])
def test_bad_weights_are_refused_naming_sample_weight(weights):
    K, y = data()
    with pytest.raises(ValidationError, match="sample_weight"):
        Problem.create(K, y, "l1_mkl", sample_weight=weights)
    with pytest.raises(ValidationError, match="sample_weight"):
        kernelfuse.solve(K, y, solver="spicymkl", sample_weight=weights)


def test_unit_weights_are_the_unweighted_problem_and_the_callers_array_is_kept():
    K, y = data()
    weights = np.ones(12)
    weighted = Problem.create(K, y, "l1_mkl", loss="logistic", sample_weight=weights)
    plain = Problem.create(K, y, "l1_mkl", loss="logistic")
    assert plain.sample_weight is None and weighted.sample_weight is not weights
    coef = np.random.default_rng(1).normal(size=plain.coef_shape)
    assert objectives.evaluate(weighted, coef, 0.3) == pytest.approx(objectives.evaluate(plain, coef, 0.3), rel=1e-12)
    scaled = Problem.create(K, y, "l1_mkl", loss="logistic", sample_weight=2.0)  # a number: every weight
    np.testing.assert_array_equal(scaled.sample_weight, np.full(12, 2.0))


@pytest.mark.parametrize("family", ["l1_mkl", "l1_mkl_sq", "pnorm_mkl"])
def test_repeating_rows_is_integer_weights_in_the_objective(family):
    """``P_w(coef) = P_repeated(coef split over the copies)``: the same decision values and norms."""
    K, y = data()
    weights = np.random.default_rng(2).integers(1, 4, size=12).astype(float)
    rows = np.repeat(np.arange(12), weights.astype(int))
    weighted = Problem.create(K, y, family, sample_weight=weights)
    repeated = Problem.create(K[:, rows][:, :, rows], y[rows], family)
    coef = np.random.default_rng(3).normal(size=weighted.coef_shape)
    split = coef[:, rows] / weights[rows]
    if family == "pnorm_mkl":  # its loss is a mean: (1/N) sum_i w_i loss_i against (1/N') over N' rows
        expected = objectives.evaluate(repeated, split) - repeated.regularizer.value(
            objectives.rkhs_norms(repeated.K, split))
        expected = expected * rows.size / 12 + weighted.regularizer.value(objectives.rkhs_norms(weighted.K, coef))
    else:
        expected = objectives.evaluate(repeated, split, 0.2)
    intercept = 0.0 if family == "pnorm_mkl" else 0.2
    assert objectives.evaluate(weighted, coef, intercept) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("solver, family, takers", [
    ("simplemkl", "l1_mkl_sq", "cvxpy"), ("average", "vskl", "cvxpy"), ("obscure", "pnorm_mkl", "no registered"),
    ("cvxpy", "mikl", "no registered"),
])
def test_solvers_without_weights_refuse_them_by_name(solver, family, takers):
    K, y = data()
    with pytest.raises(ValidationError, match="sample_weight") as error:
        kernelfuse.solve(K, y, solver=solver, family=family, sample_weight=np.ones(12))
    assert repr(solver) in str(error.value) and takers in str(error.value)


def test_a_built_solver_refuses_by_its_declared_capability():
    K, y = data()
    solver = kernelfuse.get_registry().get("recipe", "simplemkl").factory.build()
    assert "l1_mkl_sq" not in solver.weighted_families
    with pytest.raises(ValidationError, match="sample_weight: solver 'simplemkl'"):
        kernelfuse.solve(K, y, solver=solver, family="l1_mkl_sq", sample_weight=np.ones(12))
