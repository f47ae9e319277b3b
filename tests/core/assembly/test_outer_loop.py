"""OuterLoop's honest endings: a stalled optimiser, a broken oracle, an SVM system that fails, an
interrupt; what it keeps of the answers (BestModel)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from helpers import breast_cancer_kernels
from kernelfuse import ConvergenceWarning, Problem, SolverError
from kernelfuse.assembly.outer_loop import TRUNCATED, BestModel, OuterLoop
from kernelfuse.numerics.svm_dual import svm_dual_value, svm_primal_value
from kernelfuse.parts.optimizer import OuterOptimizer
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.plugins.mirror_maps.entropic_simplex import EntropicSimplices
from kernelfuse.plugins.mirror_vskl.vskl_bca import VSKLBlockCoordinateAscent
from kernelfuse.plugins.stopping.rules import CertifiedGap
from kernelfuse.plugins.svm.active_set import ActiveSetSVM


class Stuck(OuterOptimizer):
    """Never moves."""

    name = "stuck"

    def init(self, problem, point, answer):
        return None

    def step(self, point, answer, state, evaluate):
        return point, answer, state


class Broken(Oracle):
    """Answers NaN after ``good_calls`` calls."""

    name = "broken"
    families = frozenset({"l1_mkl_sq"})

    def __init__(self, good_calls: int = 1) -> None:
        self.good_calls = good_calls

    def init(self, problem):
        return np.full(problem.n_kernels, 1.0 / problem.n_kernels), 0

    def query(self, point, state):
        value = 1.0 if state < self.good_calls else math.nan
        answer = OracleAnswer(value=value, gradient=np.zeros_like(point),
                              coef=np.zeros((point.size, 20)), objective=20.0)
        return answer, state + 1



class Counting(Oracle):
    """A model and a bound at every point, each answer counting one truncated inner solve; counts
    its queries and its complete models."""

    name = "counting"
    families = frozenset({"l1_mkl_sq"})

    def __init__(self) -> None:
        self.queries = self.models = 0

    def init(self, problem):
        return np.full(problem.n_kernels, 1.0 / problem.n_kernels), None

    def query(self, point, state):
        self.queries += 1
        answer = OracleAnswer(value=1.0, gradient=np.ones_like(point), coef=np.zeros((point.size, 20)),
                              objective=100.0, lower_bound=0.0, counters={TRUNCATED: 1})
        return answer, state

    def model(self, point, state):
        self.models += 1
        return super().model(point, state)


class Averaging(OuterOptimizer):
    """Moves the point every step and vouches for the average of its iterates; Ctrl-C (a
    KeyboardInterrupt) strikes inside step ``interrupt_at``, after its oracle call."""

    name = "averaging"

    def __init__(self, interrupt_at: int = 0) -> None:
        self.interrupt_at = interrupt_at

    def init(self, problem, point, answer):
        return point.copy(), 1

    def step(self, point, answer, state, evaluate):
        total, count = state
        new = point + 0.1 * np.arange(point.size)
        new /= new.sum()
        answer = evaluate(new)
        if count == self.interrupt_at:
            raise KeyboardInterrupt
        return new, answer, (total + new, count + 1)

    def estimate(self, point, state):
        total, count = state
        return total / count

@pytest.fixture
def problem():
    K, y = breast_cancer_kernels(n=20, m=3, seed=0)
    return Problem.create(K, y, "l1_mkl_sq", C=5.0)


def test_a_stalled_optimizer_ends_stalled_with_a_warning(problem):
    solver = OuterLoop(optimizer=Stuck(), oracle=VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM()),
                       stop=CertifiedGap(), tol=1e-12)
    with pytest.warns(ConvergenceWarning, match="no further decrease"):
        result = solver.solve(problem)
    assert result.status == "stalled" and result.n_iter == 1
    assert result.gap > 1e-12  # the certificate says how far it is


def test_a_non_finite_oracle_answer_ends_numerical_failure_with_the_model_before_it(problem):
    from kernelfuse.plugins.mirror_vskl.mirror_descent import MirrorDescent

    solver = OuterLoop(optimizer=MirrorDescent(mirror_map=EntropicSimplices()), oracle=Broken(good_calls=1),
                       stop=CertifiedGap(), max_iter=5)
    with pytest.warns(ConvergenceWarning, match="numerical_failure.*non-finite value"):
        result = solver.solve(problem)
    assert result.status == "numerical_failure" and result.n_iter == 0
    assert np.array_equal(result.coef, np.zeros((3, 20)))
    assert result.objective == pytest.approx(5.0 * 20)  # recomputed: C * sum_i hinge(y_i, 0)


def test_a_non_finite_oracle_answer_at_the_start_raises(problem):
    from kernelfuse.plugins.mirror_vskl.mirror_descent import MirrorDescent

    solver = OuterLoop(optimizer=MirrorDescent(mirror_map=EntropicSimplices()), oracle=Broken(good_calls=0),
                       stop=CertifiedGap(), max_iter=5)
    with pytest.raises(SolverError, match="failed numerically with no model.*non-finite value"):
        solver.solve(problem)


def test_active_set_survives_a_failing_linear_system(monkeypatch):
    K3, y = breast_cancer_kernels(n=40, m=3, seed=1)
    K = K3.sum(axis=0) * 40
    solver = ActiveSetSVM()
    first = solver.solve(K, y, 2.0)
    calls = {"n": 0}
    original = ActiveSetSVM._solve_on_sets

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise np.linalg.LinAlgError("SVD did not converge")
        return original(*args, **kwargs)

    monkeypatch.setattr(ActiveSetSVM, "_solve_on_sets", staticmethod(flaky))
    again = solver.solve(K * 1.01, y, 2.0, warm_start=first)
    assert solver.fallbacks == 1
    primal = svm_primal_value(K * 1.01, y, 2.0, again.alpha, again.intercept)
    assert (primal - svm_dual_value(K * 1.01, y, again.alpha)) / primal < 1e-10


@pytest.mark.filterwarnings("ignore::kernelfuse.errors.ConvergenceWarning")  # max_iter on purpose
def test_history_rows_carry_the_optimisers_step():
    import kernelfuse

    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    K = np.stack([np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / w) for w in (0.5, 2.0)])
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    result = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=1.0,
                              mirror_map="entropic")
    steps = [row.counters["step"] for row in result.history]
    assert all(s > 0 for s in steps) and len(set(steps)) > 1  # Armijo steps grow and shrink
    sa = kernelfuse.solve(K, np.c_[y, -y], solver="mlmkl-sa", family="mlmkl_max", C=1.0, seed=0,
                          max_iter=20, tol=1e-12)
    assert sa.history[5].counters["step_kernels"] > 0 and sa.history[5].counters["step_labels"] > 0


def test_best_model_keeps_the_least_objective_with_a_model_the_highest_bound_and_the_sums():
    best = BestModel()
    assert best.answer is None and best.lower == -math.inf and math.isnan(best.best_gap(1.0))
    sampled = OracleAnswer(value=0.0, gradient=np.zeros(2), coef=None, objective=math.nan, lower_bound=1.0,
                           counters={"svm_calls": 1})
    first = OracleAnswer(value=0.0, gradient=np.zeros(2), coef=np.zeros(2), objective=4.0, lower_bound=2.0,
                         counters={"svm_calls": 2, TRUNCATED: 1})
    worse = OracleAnswer(value=0.0, gradient=np.zeros(2), coef=np.ones(2), objective=5.0,
                         counters={"svm_calls": 1})
    assert all(best.account(answer) is answer for answer in (sampled, first, worse))
    best.count({"svm_calls": 3})  # a value alone: its work, no model
    assert best.answer is first and best.objective == 4.0 and best.lower == 2.0
    assert best.totals == {"svm_calls": 7, TRUNCATED: 1} and best.truncated == 1
    assert best.best_gap(1.0) == pytest.approx(0.5) and best.best_gap(0.1) == pytest.approx(0.2)


def test_a_run_short_of_tol_names_its_truncated_inner_solves_and_answers_at_its_average(problem):
    oracle = Counting()
    solver = OuterLoop(optimizer=Averaging(), oracle=oracle, stop=CertifiedGap(), max_iter=2)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        result = solver.solve(problem)
    assert result.status == "max_iter" and result.n_iter == 2
    assert oracle.models == 1 and oracle.queries == 4  # the start, two steps, the average
    assert len(result.history) == 4 and result.history[-1].counters[TRUNCATED] == 4
    assert result.message.endswith("; 4 inner solves stopped at their iteration bound or the deadline "
                                   "(the history's svm_truncated)")


def test_an_interrupt_inside_a_step_asks_the_oracle_nothing_more(problem):
    oracle = Counting()
    solver = OuterLoop(optimizer=Averaging(interrupt_at=3), oracle=oracle, stop=CertifiedGap())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the caller asked for it: no warning
        result = solver.solve(problem)
    assert result.status == "interrupted" and result.n_iter == 2
    assert oracle.models == 0 and oracle.queries == 4  # the start, two steps, the trial cut short
    assert len(result.history) == 4 and result.history[-1].counters[TRUNCATED] == 4
    assert result.message.startswith("interrupted after 2 iterations; returning the best model so far; 4 inner")
