"""OBSCURE / Pegasos-MKL certify what they return: the ``pnorm_mkl`` dual bound, statuses, generated problems."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels, pnorm_reference, random_pnorm_problem, wine_kernels
from kernelfuse import Problem, get_registry
from kernelfuse.plugins.obscure.expansion_model import dual_point
from kernelfuse.problem import duality, objectives
from kernelfuse.testing import assert_within_certified

LAM = 0.003



@pytest.mark.parametrize("p", [1.2, 1.5, 2.0])
@pytest.mark.parametrize("data", ["binary", "multiclass"])
def test_the_dual_bound_is_below_the_optimum_and_closes_there(data, p):
    """Weak duality at random points (feasible or not, of any scale), and no gap at the end of
    the dual coordinate stage: the exact bound (one kernel pass) at the iterate's dual point
    equals the oracle's cheap one there and both meet the optimum."""
    K, y = (breast_cancer_kernels if data == "binary" else wine_kernels)(n=40, m=4, seed=0)
    problem = Problem.create(K, y, "pnorm_mkl", p=p, lam=LAM)
    best = pnorm_reference(K, y, p, LAM)
    rng = np.random.default_rng(0)
    shape = problem.coef_shape[1:]
    for scale in (0.01, 0.3, 1.0, 5.0):
        for _ in range(5):
            bound, passes = duality.pnorm_mkl_lower_bound(problem, scale * rng.normal(size=shape))
            assert passes == 1 and bound <= best.objective * (1 + 1e-9)

    registry = get_registry()
    oracle = registry.create("oracle", "expansion-model")
    optimizer = registry.create("optimizer", "online-batch", seed=0)
    point, oracle_state = oracle.init(problem)

    def evaluate(trial):
        return oracle.query(trial, oracle_state)[0]

    answer = evaluate(point)
    state = optimizer.init(problem, point, answer)
    lower = []
    for _ in range(300):
        point, answer, state = optimizer.step(point, answer, state, evaluate)
        lower.append(answer.lower_bound)
        assert answer.lower_bound <= best.objective * (1 + 1e-9)
        if answer.objective - answer.lower_bound <= 1e-9:
            break
    assert state.stage == "dual" and answer.objective - answer.lower_bound <= 1e-9
    exact, _ = duality.pnorm_mkl_lower_bound(problem, dual_point(problem, state.mirror_map, point))
    assert answer.lower_bound <= exact + 1e-12 and exact == pytest.approx(answer.lower_bound, abs=1e-10)
    assert answer.objective == pytest.approx(best.objective, rel=1e-6)
    stage = lower[state.online_epochs_done + state.stochastic_epochs_done:]
    assert all(b >= a - 1e-12 for a, b in zip(stage, stage[1:]))  # coordinate ascent on the dual


@pytest.mark.parametrize("seed", [1, 2, 4, 5])
def test_obscure_certifies_problems_no_test_was_written_for(seed):
    """Generated problems (tests/helpers.py): scikit-learn data, random kernel grids, p in [1.1, 2],
    small lam.  Default settings: converged means a certified gap <= tol = 1e-3, and the
    objective lies in the cvxpy reference's interval widened by that gap."""
    case = random_pnorm_problem(seed, max_n=70, max_m=10)
    K, y, p, lam = case["K"], case["y"], case["p"], case["lam"]
    best = pnorm_reference(K, y, p, lam)
    result = kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", p=p, lam=lam, seed=seed)
    assert result.status == "converged" and 0.0 <= result.gap <= 1e-3
    assert result.gap == pytest.approx((result.objective - result.dual_objective) / max(1.0, result.objective))
    assert_within_certified(result, best)
    problem = Problem.create(K, y, "pnorm_mkl", p=p, lam=lam)
    assert objectives.evaluate(problem, result.coef) == pytest.approx(result.objective, rel=1e-12)


@pytest.mark.filterwarnings("ignore:solver .* stopped with status")
@pytest.mark.parametrize("solver", ["obscure", "pegasos-mkl"])
def test_a_status_says_what_stopped_the_run(solver):
    """``converged`` only with a certified gap <= tol; otherwise the status names the limit, and
    the gap reported is finite and honest either way."""
    K, y = wine_kernels(n=40, m=4, seed=1)
    best = pnorm_reference(K, y, 1.5, LAM)
    short = kernelfuse.solve(K, y, solver=solver, family="pnorm_mkl", p=1.5, lam=LAM, max_iter=3, seed=0)
    assert short.status == "max_iter" and 1e-3 < short.gap < 1.0
    assert short.dual_objective <= best.objective <= short.objective
    timed = kernelfuse.solve(K, y, solver=solver, family="pnorm_mkl", p=1.5, lam=LAM, tol=1e-14,
                             time_limit=0.05, seed=0)
    assert timed.status == "time_limit" and np.isfinite(timed.gap)
    default = kernelfuse.solve(K, y, solver=solver, family="pnorm_mkl", p=1.5, lam=LAM, seed=0)
    assert (default.status == "converged") == (default.gap <= 1e-3)
    assert_within_certified(default, best)
    if solver == "obscure":
        assert default.status == "converged"
