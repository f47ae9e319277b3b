"""SpicyMKL's warm start (``warm_start``): the same certified optimum as a cold solve, less work
along a regularisation path, a start in the solve's own units, and a clear refusal of a result
of another problem; the path's top, ``l1_mkl_c_max``."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import Problem, ValidationError
from kernelfuse.assembly.result import roundoff
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import l1_mkl_c_max

LOSSES = ["logistic", "squared", "squared-hinge", "hinge", "eps-insensitive"]


def path_problem(loss: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    K, y = breast_cancer_kernels(n=60, m=20, seed=seed)
    if loss in ("squared", "eps-insensitive"):  # real targets
        y = 0.7 * y + 0.3 * np.random.default_rng(seed).normal(size=y.size)
    return K, y


def solve_path(K: np.ndarray, y: np.ndarray, loss: str, Cs: np.ndarray, warm: bool, **params: float) -> list:
    results, previous = [], None
    for C in Cs:
        start = {"warm_start": previous} if warm and previous is not None else {}
        previous = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C, **start, **params)
        results.append(previous)
    return results


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("C2", [0.0, 0.3])
def test_a_warm_path_reaches_the_cold_certified_optima_with_less_work(loss, C2):
    """Down a 6-point path from C_max, every warm solve certifies the cold solve's optimum
    (within the sum of both gaps), with fewer Newton iterations and fewer kernel passes in all.
    (The outer iterations follow the penalty schedule, which the warm start keeps: they are not
    always fewer; docs/methods/spicymkl.md, "Warm starts".)"""
    K, y = path_problem(loss)
    Cs = l1_mkl_c_max(Problem.create(K, y, "l1_mkl", loss=loss, C=1.0)) * np.logspace(-0.5, -2.0, 6)
    cold = solve_path(K, y, loss, Cs, warm=False, C2=C2, tol=1e-6)
    warm = solve_path(K, y, loss, Cs, warm=True, C2=C2, tol=1e-6)
    for a, b in zip(cold, warm):
        assert a.converged and b.converged and b.gap <= 1e-6
        certified = a.gap * max(1.0, abs(a.objective)) + b.gap * max(1.0, abs(b.objective))
        assert abs(a.objective - b.objective) <= certified + roundoff(a.objective, y.size)

    def total(results: list, counter: str) -> float:
        return sum(r.counters[counter] for r in results)

    assert total(warm, "newton_steps") < total(cold, "newton_steps")
    assert total(warm, "kernel_passes") < total(cold, "kernel_passes")


def test_a_warm_start_begins_at_the_given_model_in_the_solves_units():
    """The first iterate is the warm model (its objective at the new C), also where the kernels are
    solved rescaled (entries far from 1: the start's coefficients mapped, coef' = scale coef)."""
    K, y = path_problem("logistic")
    for scale in (1.0, 1e8):
        previous = kernelfuse.solve(K * scale, y, solver="spicymkl", family="l1_mkl", C=0.2, tol=1e-8)
        warm = kernelfuse.solve(K * scale, y, solver="spicymkl", family="l1_mkl", C=0.1, tol=1e-8,
                                warm_start=previous)
        problem = Problem.create(K * scale, y, "l1_mkl", C=0.1)
        start = objectives.evaluate(problem, previous.coef, previous.intercept)
        assert warm.history[0].objective == pytest.approx(start, rel=1e-9), scale
        assert warm.converged


def test_a_result_of_another_problem_is_refused_naming_warm_start():
    K, y = path_problem("logistic")
    result = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=0.2)
    cases = [
        (dict(K=K[:, :50, :50], y=y[:50]), r"warm_start .* coefficients of shape \(20, 60\), not \(20, 50\)"),
        (dict(K=K[:10], y=y), r"warm_start .* coefficients of shape \(20, 60\), not \(10, 60\)"),
        (dict(K=K, y=y, loss="hinge"), r"warm_start .* loss 'logistic', not 'hinge'"),
    ]
    for inputs, message in cases:
        inputs = {"loss": "logistic", **inputs}
        with pytest.raises(ValidationError, match=message):
            kernelfuse.solve(inputs.pop("K"), inputs.pop("y"), solver="spicymkl", family="l1_mkl", C=0.1,
                             warm_start=result, **inputs)
    other_family = kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", C=1.0)
    with pytest.raises(ValidationError, match="warm_start .* family 'l1_mkl_sq', not 'l1_mkl'"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", C=0.1, warm_start=other_family)
    with pytest.raises(ValidationError, match="warm_start must be a Result"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", C=0.1, warm_start=result.coef)


@pytest.mark.parametrize("loss", ["logistic", "squared", "squared-hinge", "eps-insensitive"])
def test_c_max_is_where_the_model_becomes_zero(loss):
    """Just above C_max the optimum is the zero model (the intercept alone), just below it is
    not (a loss with a derivative at the intercept's optimum: exact)."""
    K, y = path_problem(loss, seed=1)
    c_max = l1_mkl_c_max(Problem.create(K, y, "l1_mkl", loss=loss, C=1.0))
    above = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=1.01 * c_max, tol=1e-8)
    below = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=0.99 * c_max, tol=1e-8)
    assert not above.coef.any() and below.coef.any()
