"""mirror-vskl, simplemkl and the average-kernel baseline against the exact cvxpy optimum.

Tolerance (the issue's): reported objective within 1e-4 relative of the cvxpy
optimum's certified interval, never below its lower bound
(:func:`kernelfuse.testing.assert_within_certified`); in practice the default
certified stop (relative gap 1e-6) lands within about 1e-6.  Every reported
objective is recomputed from the returned coefficients by ``Solver.solve``;
the lower bound must be valid (below the interval's upper end).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import ConvergenceWarning, UnknownNameError
from kernelfuse.assembly.result import roundoff
from kernelfuse.plugins.mirror_vskl.vskl_bca import VSKLBlockCoordinateAscent
from kernelfuse.plugins.simplemkl.reduced_gradient import max_step, reduced_direction
from kernelfuse.plugins.svm.active_set import ActiveSetSVM
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import exponents
from kernelfuse.problem.instance import Problem
from kernelfuse.testing import assert_within_certified

GROUPINGS = {
    "one": np.zeros(6, int),
    "pairs": np.array([0, 0, 1, 1, 2, 2]),
    "uneven": np.array([0, 1, 1, 1, 1, 2]),
    "singletons": np.arange(6),
}
REL_TOL = 1e-4


def check_against_reference(result, reference, problem):
    assert result.status == "converged"
    assert_within_certified(result, reference, REL_TOL)
    recomputed = objectives.evaluate(problem, result.coef, result.intercept)
    assert recomputed == pytest.approx(result.objective, rel=1e-12)


@pytest.mark.parametrize("mirror_map", ["local-quadratic", "entropic"])
@pytest.mark.parametrize("grouping", list(GROUPINGS))
@pytest.mark.parametrize("q", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mirror_vskl_reaches_the_cvxpy_optimum(seed, q, grouping, mirror_map):
    K, y = breast_cancer_kernels(n=40, m=6, seed=seed)
    groups = GROUPINGS[grouping]
    C = [2.0, 10.0, 50.0][seed]
    params = dict(family="vskl", groups=groups, C=C, q=q)
    reference = kernelfuse.solve(K, y, solver="cvxpy", **params)
    result = kernelfuse.solve(K, y, solver="mirror-vskl", mirror_map=mirror_map, **params)
    check_against_reference(result, reference, Problem.create(K, y, "vskl", groups=groups, C=C, q=q))
    assert result.gap <= 1e-6


def test_a_solver_better_than_the_references_model_is_inside_its_interval():
    """Issue 23's failure on AMD EPYC: Clarabel ended AlmostSolved 1.2e-7 above the optimum that
    mirror-vskl certified (gap 1.5e-14), and a test trusting Clarabel's number failed.  Where
    Clarabel stops differs between CPUs (7e-9 above on another EPYC, issue 42); what holds on
    any machine is the certificate: mirror-vskl's objective is within its own gap of the
    optimum, so at most the reference's objective (an upper bound of the optimum) up to that
    gap, and inside the reference's certified interval."""
    K, y = breast_cancer_kernels(n=40, m=6, seed=1)
    params = dict(family="vskl", groups=GROUPINGS["uneven"], C=10.0, q=3.0)
    reference = kernelfuse.solve(K, y, solver="cvxpy", tol=1e-7, **params)
    result = kernelfuse.solve(K, y, solver="mirror-vskl", **params)
    assert reference.status == result.status == "converged" and result.gap <= 1e-12
    assert result.objective <= reference.objective * (1 + result.gap) + 1e-12 * abs(reference.objective)
    assert_within_certified(result, reference, REL_TOL)


@pytest.mark.parametrize("solver", ["mirror-vskl", "simplemkl"])
@pytest.mark.parametrize("seed", range(6))
def test_l1_mkl_sq_solvers_reach_the_cvxpy_optimum(solver, seed):
    K, y = breast_cancer_kernels(n=50, m=5, seed=10 + seed)
    C = [0.5, 5.0, 50.0][seed % 3]
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=C)
    result = kernelfuse.solve(K, y, solver=solver, family="l1_mkl_sq", C=C)
    check_against_reference(result, reference, Problem.create(K, y, "l1_mkl_sq", C=C))
    # Kernel weights: d_m = ||f_m|| / sum ||f_k|| on the simplex.
    assert result.kernel_weights.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("family, params", [("l1_mkl_sq", {}), ("vskl", {"q": 2.0, "groups": GROUPINGS["pairs"]})])
def test_average_kernel_baseline_is_feasible_and_certified(family, params):
    K, y = breast_cancer_kernels(n=40, m=6, seed=3)
    reference = kernelfuse.solve(K, y, solver="cvxpy", family=family, C=5.0, **params)
    result = kernelfuse.solve(K, y, solver="average", family=family, C=5.0, **params)
    assert_within_certified(result, reference)  # feasible, and within its own certified gap
    np.testing.assert_allclose(result.coef, np.tile(result.coef[0], (6, 1)))
    assert result.counters["svm_calls"] == 1


def test_bca_gamma_is_the_closed_form_maximiser():
    """At the oracle's answer, gamma maximises 1'a - 0.5 sum_j gamma_j^-t v_j over the simplex."""
    K, y = breast_cancer_kernels(n=40, m=6, seed=5)
    groups = GROUPINGS["pairs"]
    for q in (2.0, 3.0, math.inf):
        problem = Problem.create(K, y, "vskl", groups=groups, C=5.0, q=q)
        oracle = VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM())
        point, state = oracle.init(problem)
        answer, state = oracle.query(point, state)
        t, _ = exponents(q)
        beta = answer.coef / (point * state.gamma[groups] ** (-t))[:, None]
        a = np.array([beta[m] @ K[m] @ beta[m] for m in range(6)])
        v = np.bincount(groups, weights=point * a)

        def phi(gamma, t=t, v=v):
            return -0.5 * np.sum(gamma ** (-t) * v)

        best = phi(state.gamma)
        for gamma in np.random.default_rng(0).dirichlet(np.ones(3), size=2000):
            assert phi(gamma) <= best + 1e-9 * abs(best)
        # The oracle's value is the SVM dual at its alpha and gamma, above the optimum.
        reference = kernelfuse.solve(K, y, solver="cvxpy", family="vskl", groups=groups, C=5.0, q=q)
        assert reference.status == "converged", reference.message
        lower, upper = reference.interval
        r = roundoff(upper, y.size)
        assert answer.value >= lower - r and answer.lower_bound <= upper + r


@pytest.mark.parametrize("rule", ["lipschitz-free", "theorem-3.1"])
def test_the_papers_step_rules_converge(rule):
    K, y = breast_cancer_kernels(n=40, m=5, seed=0)
    groups = np.array([0, 0, 1, 1, 1])
    params = dict(family="vskl", groups=groups, C=5.0, q=2.0)
    reference = kernelfuse.solve(K, y, solver="cvxpy", **params)
    result = kernelfuse.solve(K, y, solver="mirror-vskl", mirror_map="entropic", step_rule=rule,
                              max_iter=3000, **params)
    assert result.status == "converged"
    assert_within_certified(result, reference, REL_TOL)
    with pytest.raises(kernelfuse.ValidationError, match="mirror_map='entropic'"):
        kernelfuse.solve(K, y, solver="mirror-vskl", step_rule=rule, **params)


def test_parts_can_be_swapped_by_name_and_parameters_reach_them():
    K, y = breast_cancer_kernels(n=40, m=4, seed=1)
    base = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=5.0)
    for svm in ("osqp", "libsvm"):
        other = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=5.0,
                                 svm_solver=svm, tol=1e-5)
        assert other.objective == pytest.approx(base.objective, rel=1e-5)
    with pytest.raises(UnknownNameError, match="did you mean 'libsvm'"):
        kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", svm_solver="libsv")
    with pytest.raises(kernelfuse.ValidationError, match="step_rule must be one of"):
        kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", step_rule="polyak")
    with pytest.raises(UnknownNameError, match="did you mean 'step_rule'"):
        kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", stepsize=1.0)


def test_history_counters_and_monotone_certificates():
    K, y = breast_cancer_kernels(n=60, m=8, seed=2)
    result = kernelfuse.solve(K, y, solver="mirror-vskl", family="vskl", C=10.0, q=3.0,
                              groups=np.repeat([0, 1, 2, 3], 2))
    rows = result.history
    assert len(rows) == result.n_iter + 1
    assert all(b.objective <= a.objective for a, b in zip(rows, rows[1:]))
    assert all(b.dual_objective >= a.dual_objective for a, b in zip(rows, rows[1:]))
    counters = result.counters
    assert counters["svm_calls"] < counters["kernel_passes"] <= 2 * counters["svm_calls"]
    assert counters["svm_calls"] >= counters["oracle_calls"] >= result.n_iter + 1
    assert rows[-1].gap == pytest.approx(result.gap, abs=1e-12)


def test_max_iter_is_reported_with_a_warning():
    K, y = breast_cancer_kernels(n=40, m=6, seed=3)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        result = kernelfuse.solve(K, y, solver="mirror-vskl", family="vskl", C=10.0, q=2.0,
                                  groups=GROUPINGS["pairs"], max_iter=1, tol=1e-12)
    assert result.status == "max_iter" and result.n_iter == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=10.0)


def test_reduced_gradient_direction():
    rng = np.random.default_rng(0)
    for _ in range(50):
        d = rng.dirichlet(np.ones(6))
        d[rng.integers(0, 6)] = 0.0
        d /= d.sum()
        g = rng.normal(size=6)
        D, mu = reduced_direction(d, g)
        assert D.sum() == pytest.approx(0.0, abs=1e-12)
        assert g @ D <= 1e-12  # a descent direction
        assert mu == int(np.argmax(d))
        gamma, nu = max_step(d, D)
        if nu >= 0:
            assert (d + gamma * D).min() == pytest.approx(0.0, abs=1e-12)
            assert d[nu] + gamma * D[nu] == pytest.approx(0.0, abs=1e-12)


def test_reduced_gradient_step_when_two_weights_reach_zero_together():
    """A tie at the boundary leaves a falling weight at exactly 0 (gamma_max = 0): it is dropped
    from the direction, not searched over (this crashed on Ionosphere's kernel grid)."""
    from kernelfuse.parts.oracle import OracleAnswer
    from kernelfuse.plugins.simplemkl.reduced_gradient import ReducedGradient

    g = np.array([0.0, 1.0, 1.0, 0.5])

    def evaluate(d, value_only=False):  # J(d) = g . d + 0.1 ||d||^2, gradient g + 0.2 d
        return OracleAnswer(value=float(g @ d + 0.1 * d @ d), gradient=g + 0.2 * d,
                            coef=np.zeros((4, 1)), objective=0.0)

    d = np.array([0.4, 0.2, 0.2, 0.2])
    answer = evaluate(d)
    new, new_answer, _ = ReducedGradient().step(d, answer, None, evaluate)
    assert new.sum() == pytest.approx(1.0) and new.min() >= 0.0
    assert new_answer.value < answer.value
    assert new[1] == 0.0 and new[2] == 0.0


@pytest.mark.parametrize("m, seed", [(5, 10), (20, 3)])
def test_simplemkl_reads_every_kernel_only_at_the_steps_it_takes(m, seed):
    """SimpleMKL's line search compares SVM objectives (each forms ``K(d)``: at most one pass);
    every kernel's quadratic form (one full pass) is computed once per iteration, at the step
    taken, as the toolbox's gradient after its line search.  The optimum is unchanged."""
    K, y = breast_cancer_kernels(n=60, m=m, seed=seed)
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=5.0)
    result = kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", C=5.0)
    check_against_reference(result, reference, Problem.create(K, y, "l1_mkl_sq", C=5.0))
    counts = [(row.counters["svm_calls"], row.counters["kernel_passes"]) for row in result.history]
    assert counts[0][0] == 1 and counts[0][1] <= 2.0  # the start: one SVM, K(d) and the forms
    for (svm_before, passes_before), (svm, passes) in zip(counts, counts[1:]):
        trials = svm - svm_before
        assert passes - passes_before <= trials + 1.0 + 1e-12
        if trials:  # a step was taken: its forms were read once
            assert passes - passes_before >= 1.0
    svm_calls, passes = counts[-1]
    assert svm_calls >= 10 * result.n_iter  # the line searches dominate the SVM calls...
    assert passes <= svm_calls + result.n_iter + 1  # ...and no longer the passes (two per trial before)


def test_vskl_oracle_value_alone_and_its_completion():
    """The capability ``value``: the SVM objective alone (no form, at most one pass), and the
    query at that point completing it from the same SVM: the answer a fresh query gives."""
    K, y = breast_cancer_kernels(n=40, m=6, seed=2)
    problem = Problem.create(K, y, "l1_mkl_sq", C=5.0)
    oracle = VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM())
    point, state = oracle.init(problem)
    trial = np.array([0.5, 0.0, 0.2, 0.1, 0.0, 0.2])
    alone, state = oracle.value(trial, state)
    assert alone.counters["svm_calls"] == 1 and alone.counters["kernel_passes"] <= 1.0
    completed, state = oracle.query(trial, state)
    assert completed.counters["svm_calls"] == 0 and completed.counters["kernel_passes"] == 1.0
    fresh, _ = VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM()).query(trial, oracle.init(problem)[1])
    assert completed.value == alone.value == pytest.approx(fresh.value, rel=1e-12)
    np.testing.assert_allclose(completed.gradient, fresh.gradient, rtol=1e-9, atol=1e-12)
    assert completed.objective == pytest.approx(fresh.objective, rel=1e-10)
    assert completed.lower_bound == pytest.approx(fresh.lower_bound, rel=1e-10)
    again, _ = oracle.query(trial, state)  # the completion is used once: a new query solves again
    assert again.counters["svm_calls"] == 1


def test_vskl_oracle_values_along_a_line_search_are_the_fresh_values():
    """The capability ``value`` along a line search (its kernels combined from the held ones,
    each SVM warm-started at the nearest trial): the SVM objective a fresh oracle gives at each
    trial, from the stack and a cold SVM, and the completion at the step taken is the fresh answer."""
    K, y = breast_cancer_kernels(n=50, m=8, seed=4)
    problem = Problem.create(K, y, "l1_mkl_sq", C=5.0)
    oracle = VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM())
    d, state = oracle.init(problem)
    _, state = oracle.query(d, state)
    edge = np.array([0.3, 0.0, 0.2, 0.1, 0.05, 0.15, 0.1, 0.1])
    trials = [edge, *(d + t * (edge - d) for t in (0.382, 0.618, 0.236, 0.5))]
    for trial in trials:
        alone, state = oracle.value(trial, state)
        fresh, _ = VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM()).query(trial, oracle.init(problem)[1])
        assert alone.value == pytest.approx(fresh.value, rel=1e-9)
    assert alone.counters["kernel_passes"] < 1.0  # a trial between held kernels reads no stack
    completed, state = oracle.query(trials[-1], state)
    assert completed.counters["svm_calls"] == 0
    assert completed.objective == pytest.approx(fresh.objective, rel=1e-9)
    assert completed.lower_bound == pytest.approx(fresh.lower_bound, rel=1e-9)
    np.testing.assert_allclose(completed.gradient, fresh.gradient, rtol=1e-8, atol=1e-12)


def test_simplemkl_refuses_several_groups():
    """Its recipe solves l1_mkl_sq only (its reduced gradient works on one simplex)."""
    K, y = breast_cancer_kernels(n=30, m=4, seed=0)
    with pytest.raises(kernelfuse.IncompatiblePartsError, match="does not solve family 'vskl'; it solves l1_mkl_sq"):
        kernelfuse.solve(K, y, solver="simplemkl", family="vskl", groups=[0, 0, 1, 1])


def _random_subset_gaussians(N, M, seed, d=20):
    """Gaussian kernels on random feature subsets of two overlapping classes (unit trace)."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
    X = rng.standard_normal((N, d)) * np.where(y[:, None] > 0, 1.0, 2.0) + (y[:, None] > 0) * 0.3
    K = np.empty((M, N, N))
    for m in range(M):
        cols = rng.choice(d, size=rng.integers(1, d + 1), replace=False)
        width = 5.0 * rng.chisquare(1) + 0.1
        K[m] = np.exp(-((X[:, None, cols] - X[None, :, cols]) ** 2).sum(-1) / (2 * width**2))
        K[m] /= np.trace(K[m])
    return K, y


def test_simplemkl_cleans_tiny_weights_as_its_toolbox_does():
    # Without the toolbox's numerical cleaning a weight left near 1e-11 capped every step near
    # 1e-14 and the search stalled at a certified gap of 0.11 on an Intel Xeon (this problem,
    # found by search); whether the uncleaned search stalls depends on the CPU's rounding
    # (issue 42: an AMD EPYC did not), so only the cleaned run's certificate is asserted.
    K, y = _random_subset_gaussians(80, 30, seed=5)
    kw = dict(solver="simplemkl", family="l1_mkl_sq", C=1000.0, stop="gap", tol=1e-3, check_psd=False)
    clean = kernelfuse.solve(K, y, **kw)
    assert clean.status == "converged" and clean.gap <= 1e-3
    weights = np.asarray(clean.kernel_weights)
    assert np.all((weights == 0) | (weights > 1e-8)) and weights.sum() == pytest.approx(1.0)
    reference = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=1000.0, tol=1e-6,
                                 check_psd=False)
    assert reference.dual_objective <= clean.objective <= reference.objective * (1 + 2e-3)
    D, _ = reduced_direction(np.array([0.5, 0.5 - 1e-11, 1e-11]), np.array([-1.0, -2.0, 0.0]), 1e-8)
    assert D[2] == 0.0 and D.sum() == pytest.approx(0.0)
