"""SVM inner solvers against an exact cvxpy solve of the SVM dual, and their KKT conditions."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import breast_cancer_kernels
from kernelfuse import get_registry
from kernelfuse.numerics.svm_dual import intercept_from_alpha, margins, svm_dual_value, svm_primal_value
from kernelfuse.plugins.svm import active_set
from kernelfuse.plugins.svm.active_set import RIDGE, ActiveSetSVM, KernelBlockFactor, singular_solve


def exact_dual(K, y, C, intercept):
    """max 1'a - 0.5 (a*y)' K (a*y), 0 <= a <= C (, y'a = 0), by cvxpy + Clarabel."""
    import cvxpy as cp

    w, V = np.linalg.eigh(K)
    keep = w > 1e-12 * w[-1]
    L = V[:, keep] * np.sqrt(w[keep])
    a = cp.Variable(y.size)
    constraints = [a >= 0, a <= C] + ([y @ a == 0] if intercept else [])
    problem = cp.Problem(cp.Maximize(cp.sum(a) - 0.5 * cp.sum_squares(L.T @ cp.multiply(a, y))),
                         constraints)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return problem.value


def kernel(seed, n=60, m=3):
    K, y = breast_cancer_kernels(n=n, m=m, seed=seed)
    d = np.random.default_rng(seed).dirichlet(np.ones(m))
    return np.tensordot(d, K, axes=1) * n, y


CASES = [(seed, C) for seed in range(3) for C in (0.1, 1.0, 100.0)]
TOLERANCE = {"active-set": 1e-9, "osqp": 1e-6, "libsvm": 1e-5}


@pytest.mark.parametrize("name", ["active-set", "osqp", "libsvm"])
@pytest.mark.parametrize("seed, C", CASES)
def test_solvers_reach_the_exact_svm_optimum(name, seed, C):
    K, y = kernel(seed)
    solver = get_registry().create("svm_solver", name)
    solution = solver.solve(K, y, C)
    alpha, b = solution.alpha, solution.intercept
    assert alpha.min() >= 0 and alpha.max() <= C and abs(alpha @ y) <= 1e-6 * max(C, 1)
    primal = svm_primal_value(K, y, C, alpha, b)
    dual = svm_dual_value(K, y, alpha)
    optimum = exact_dual(K, y, C, intercept=True)
    scale = max(1.0, abs(optimum))
    assert (primal - dual) / scale <= TOLERANCE[name]
    assert abs(dual - optimum) / scale <= max(TOLERANCE[name], 1e-8)


@pytest.mark.parametrize("name", ["active-set", "osqp"])
@pytest.mark.parametrize("seed, C", CASES[:4])
def test_without_intercept(name, seed, C):
    K, y = kernel(seed)
    solution = get_registry().create("svm_solver", name).solve(K, y, C, intercept=False)
    assert solution.intercept == 0.0
    optimum = exact_dual(K, y, C, intercept=False)
    dual = svm_dual_value(K, y, solution.alpha)
    primal = svm_primal_value(K, y, C, solution.alpha, 0.0)
    assert abs(dual - optimum) / max(1, abs(optimum)) <= TOLERANCE[name]
    assert (primal - dual) / max(1, abs(primal)) <= TOLERANCE[name]


def test_libsvm_refuses_no_intercept():
    K, y = kernel(0)
    with pytest.raises(ValueError, match="always fits an intercept"):
        get_registry().create("svm_solver", "libsvm").solve(K, y, 1.0, intercept=False)


def test_active_set_kkt_and_warm_start_on_a_nearby_kernel():
    K3, y = breast_cancer_kernels(n=80, m=3, seed=4)
    solver = ActiveSetSVM()
    first = solver.solve(np.tensordot([0.5, 0.3, 0.2], K3, axes=1) * 80, y, 10.0)
    K = np.tensordot([0.45, 0.33, 0.22], K3, axes=1) * 80
    warm = solver.solve(K, y, 10.0, warm_start=first)
    G = margins(K, y, warm.alpha, warm.intercept)
    free = (warm.alpha > 1e-9) & (warm.alpha < 10.0 - 1e-9)
    assert np.abs(G[free]).max() < 1e-8
    assert G[warm.alpha <= 1e-9].min() > -1e-8
    assert G[warm.alpha >= 10.0 - 1e-9].max(initial=0.0) < 1e-8
    assert warm.n_iter <= 10 and solver.fallbacks == 0
    assert warm.intercept == pytest.approx(intercept_from_alpha(K, y, 10.0, warm.alpha), abs=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_free_system_by_its_schur_complement_is_the_bordered_system(seed):
    """With an intercept a step solves ``[K_FF 1; 1' 0] [beta_F; b] = [rhs; -C 1'y_U]``: by a
    Cholesky factor of ``K_FF`` and the Schur complement of its border, a solution whose residual
    is a rounding of the data (backward stable), hence the bordered system's direct solution
    within what the system's condition allows (these systems reach ``cond`` 1e7: an
    entrywise 1e-9 is not guaranteed on another CPU's BLAS)."""
    K, y = kernel(seed)
    rng = np.random.default_rng(seed)
    lower = rng.random(y.size) < 0.5
    upper = ~lower & (rng.random(y.size) < 0.3)
    alpha, b = ActiveSetSVM._solve_on_sets(K, y, 1.0, lower, upper, None)
    free, at_c = np.flatnonzero(~(lower | upper)), np.flatnonzero(upper)
    n = free.size
    system = np.block([[K[np.ix_(free, free)], np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
    rhs = np.r_[y[free] - K[np.ix_(free, at_c)] @ y[at_c], -y[at_c].sum()]
    expected = np.linalg.solve(system, rhs)
    solution = np.r_[alpha[free] * y[free], b]
    rounding = 100 * (n + 1) * np.finfo(float).eps
    data = np.linalg.norm(system, 2) * np.linalg.norm(solution) + np.linalg.norm(rhs)
    assert np.linalg.norm(system @ solution - rhs) <= rounding * data
    assert (np.linalg.norm(solution - expected)
            <= rounding * np.linalg.cond(system) * np.linalg.norm(expected))
    assert np.all(alpha[at_c] == 1.0) and np.all(alpha[lower] == 0.0)


def test_a_warm_start_reaches_the_cold_starts_optimum():
    """Warm-started from the solution on a nearby kernel (a line search's previous trial), the
    dual optimum is the cold start's, to the solver's tolerance."""
    K3, y = breast_cancer_kernels(n=80, m=3, seed=7)
    solver = ActiveSetSVM()
    previous = solver.solve(np.tensordot([0.6, 0.3, 0.1], K3, axes=1) * 80, y, 5.0)
    K = np.tensordot([0.55, 0.3, 0.15], K3, axes=1) * 80
    warm, cold = solver.solve(K, y, 5.0, warm_start=previous), ActiveSetSVM().solve(K, y, 5.0)
    assert svm_dual_value(K, y, warm.alpha) == pytest.approx(svm_dual_value(K, y, cold.alpha), rel=1e-10)
    assert svm_primal_value(K, y, 5.0, warm.alpha, warm.intercept) == pytest.approx(
        svm_dual_value(K, y, warm.alpha), rel=1e-9)


def test_active_set_falls_back_and_stays_exact():
    K, y = kernel(1)
    solver = ActiveSetSVM(max_iter=1)
    bad_start = get_registry().create("svm_solver", "libsvm").solve(K[::-1, ::-1], y, 1.0)
    solution = solver.solve(K, y, 1.0, warm_start=bad_start)
    assert solver.fallbacks >= 1
    optimum = exact_dual(K, y, 1.0, intercept=True)
    assert svm_dual_value(K, y, solution.alpha) == pytest.approx(optimum, rel=1e-9)


def test_a_warm_start_hands_over_after_warm_max_iter_steps():
    K3, y = breast_cancer_kernels(n=80, m=3, seed=4)
    start = ActiveSetSVM().solve(np.tensordot([0.5, 0.3, 0.2], K3, axes=1) * 80, y, 10.0)
    K = np.tensordot([0.4, 0.33, 0.27], K3, axes=1) * 80  # 5 steps from the start
    patient, hasty = ActiveSetSVM(), ActiveSetSVM(warm_max_iter=1)
    slow = patient.solve(K, y, 10.0, warm_start=start)
    fast = hasty.solve(K, y, 10.0, warm_start=start)
    assert 1 < slow.n_iter <= 12 and patient.fallbacks == 0 and hasty.fallbacks == 1
    optimum = exact_dual(K, y, 10.0, intercept=True)
    for solution in (slow, fast):
        assert svm_dual_value(K, y, solution.alpha) == pytest.approx(optimum, rel=1e-9)


def test_duplicate_points_make_singular_systems_and_still_solve():
    """Titanic-like data: few distinct points, so K_FF is singular on the free set."""
    rng = np.random.default_rng(0)
    distinct = rng.normal(size=(6, 2))
    X = distinct[rng.integers(0, 6, size=50)]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=50) > 0, 1.0, -1.0)
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    solution = ActiveSetSVM().solve(K, y, 2.0)
    optimum = exact_dual(K, y, 2.0, intercept=True)
    assert svm_dual_value(K, y, solution.alpha) == pytest.approx(optimum, rel=1e-8)
    primal = svm_primal_value(K, y, 2.0, solution.alpha, solution.intercept)
    assert primal == pytest.approx(optimum, rel=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_block_factor_solves_nearby_free_sets_by_updates(seed, monkeypatch):
    """Free sets that drop and add a few points reuse the first factor, to the direct solve's
    accuracy; a set that moves by more than an eighth is factorised anew."""
    monkeypatch.setattr(active_set, "UPDATE_MIN", 0)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 5))
    K = np.exp(-0.3 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))  # condition about 1e4
    blocks = KernelBlockFactor(K)
    base = np.sort(rng.choice(120, 90, replace=False))
    blocks.solve(base, rng.normal(size=90))
    assert not blocks.approximate
    outside = np.setdiff1d(np.arange(120), base)
    for removed, added in ((4, 3), (0, 5), (6, 0), (5, 6)):
        free = np.sort(np.r_[rng.choice(base, 90 - removed, replace=False),
                             rng.choice(outside, added, replace=False)])
        rhs = rng.normal(size=free.size)
        x = blocks.solve(free, rhs)
        assert blocks.approximate
        direct = np.linalg.solve(K[np.ix_(free, free)], rhs)
        assert np.abs(x - direct).max() <= 1e-6 * np.abs(direct).max()
    far = np.sort(np.r_[base[20:], outside[:10]])
    blocks.solve(far, np.ones(far.size))
    assert not blocks.approximate


def test_without_intercept_block_updates_and_duplicate_points_reach_the_exact_optimum(monkeypatch):
    """Warm starts on a nearby kernel with duplicate points (singular free blocks: the ridged
    factor, refined) and factor updates on every step end at the exact optimum."""
    monkeypatch.setattr(active_set, "UPDATE_MIN", 0)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 3))
    X = np.r_[X, X[:10]]  # ten duplicate points
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=80) > 0, 1.0, -1.0)
    distances = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    kernels = [np.exp(-w * distances) for w in (0.1, 0.5, 2.0)]
    solver = ActiveSetSVM()
    start = solver.solve(sum(kernels) / 3, y, 1.0, intercept=False)
    for weights in ([0.4, 0.35, 0.25], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]):
        K = np.tensordot(weights, kernels, axes=1)
        solution = solver.solve(K, y, 1.0, intercept=False, warm_start=start)
        optimum = exact_dual(K, y, 1.0, intercept=False)
        assert svm_dual_value(K, y, solution.alpha) == pytest.approx(optimum, rel=1e-8)
        G = margins(K, y, solution.alpha, 0.0)
        free = (solution.alpha > 1e-9) & (solution.alpha < 1.0 - 1e-9)
        assert np.abs(G[free]).max() < 1e-8


@pytest.mark.parametrize("seed", [5, 19, 23])
def test_a_warm_start_that_cycles_retries_from_its_own_sets_before_the_cold_start(seed, monkeypatch):
    """ML-MKL-like weights far apart: the sets read off the stale duals on the new kernel flip
    between all at 0 and all at C; from the stale duals' own sets the steps converge."""
    from sklearn.datasets import load_digits

    digits, target = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    index = rng.choice(target.size, 200, replace=False)
    X, y = digits[index] / 16, np.where(target[index] < rng.integers(3, 8), 1.0, -1.0)
    distances = ((X[:, None] - X[None]) ** 2).sum(-1)
    kernels = np.stack([np.exp(-w * distances / distances.mean()) for w in (0.125, 0.25, 0.5, 1, 2, 4)])
    before, after = rng.dirichlet(np.full(6, 0.3)), rng.dirichlet(np.full(6, 0.3))
    solver = ActiveSetSVM()
    start = solver.solve(np.tensordot(before, kernels, 1), y, 1.0, intercept=False)

    def no_cold_start(*args):
        raise AssertionError("the retry from the warm start's own sets should have converged")

    monkeypatch.setattr(solver, "_cold_start", no_cold_start)
    K = np.tensordot(after, kernels, 1)
    solution = solver.solve(K, y, 1.0, intercept=False, warm_start=start)
    assert solver.fallbacks == 1
    optimum = exact_dual(K, y, 1.0, intercept=False)
    assert svm_dual_value(K, y, solution.alpha) == pytest.approx(optimum, rel=1e-8)


def digit_pairs(seed, gamma):
    """200 digits, two classes against the rest: libsvm's intercept is far from 0."""
    from sklearn.datasets import load_digits

    X, target = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    index = rng.choice(target.size, 200, replace=False)
    y = np.where(np.isin(target[index], rng.choice(10, 2, replace=False)), 1.0, -1.0)
    X = X[index] / 16
    return np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1)), y


@pytest.mark.parametrize("seed, gamma, C", [(0, 0.05, 10.0), (4, 0.01, 10.0), (6, 0.05, 1.0)])
def test_without_intercept_a_cycling_polish_hands_over_to_projected_newton(seed, gamma, C, monkeypatch):
    """From libsvm's start (a problem with an intercept) the active-set steps cycle; projected
    Newton steps solve the problem exactly, and OSQP is not needed."""
    from kernelfuse.plugins.svm.libsvm import LibSVM

    K, y = digit_pairs(seed, gamma)
    solver = ActiveSetSVM()
    start = LibSVM().solve(K, y, C)
    assert solver._newton(K, y, C, False, start.alpha, start.intercept) is None  # the steps cycle

    def no_osqp(*args):
        raise AssertionError("OSQP fallback used")

    monkeypatch.setattr(ActiveSetSVM, "_fallback", no_osqp)
    solution = solver.solve(K, y, C, intercept=False)
    optimum = exact_dual(K, y, C, intercept=False)
    assert svm_dual_value(K, y, solution.alpha) == pytest.approx(optimum, rel=1e-9)
    G = margins(K, y, solution.alpha, 0.0)
    assert (G[solution.alpha < 1e-9 * C] >= -1e-7).all() and (G[solution.alpha > C * (1 - 1e-9)] <= 1e-7).all()


def bordered(seed, n=40, copies=5):
    """The active-set step's system on a Gaussian block with duplicate points: ``[[K, 1], [1', 0]]``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n - copies, 3))
    X = np.r_[X, X[:copies]]
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    return np.block([[K, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])


@pytest.mark.parametrize("seed", range(4))
def test_singular_solve_finds_the_minimum_norm_solution_of_a_consistent_system(seed):
    system = bordered(seed)
    minimum_norm = np.linalg.pinv(system, rcond=1e-12) @ np.random.default_rng(seed).normal(size=41)
    rhs = system @ minimum_norm  # consistent: in the range
    x = singular_solve(system, rhs, 40)
    assert np.abs(system @ x - rhs).max() <= 1e-11 * np.abs(rhs).max()
    # The docstring's bound, a factor 10 spare: RIDGE over the smallest nonzero eigenvalue, plus
    # the roundoff of the right-hand side's null-space part over RIDGE.
    eigenvalues = np.abs(np.linalg.eigvalsh(system))
    smallest = eigenvalues[eigenvalues > 1e-12 * eigenvalues.max()].min()
    bound = RIDGE / smallest + np.finfo(float).eps / RIDGE
    assert np.linalg.norm(x - minimum_norm) <= 10 * bound * np.linalg.norm(minimum_norm)


@pytest.mark.parametrize("seed", range(4))
def test_singular_solve_answers_an_inconsistent_system_by_least_squares(seed):
    system = bordered(seed)
    rhs = np.random.default_rng(seed).normal(size=41)  # duplicate rows, different entries
    x = singular_solve(system, rhs, 40)
    expected = np.linalg.lstsq(system, rhs, rcond=None)[0]
    assert np.linalg.norm(system @ x - rhs) == pytest.approx(np.linalg.norm(system @ expected - rhs), rel=1e-8)


def test_libsvm_bounded_steps_report_a_feasible_unconverged_answer():
    """libsvm's SMO is bounded (``max_iter``): stopped early its answer is feasible (a valid
    lower bound on the dual optimum) and says converged=False."""
    from kernelfuse.plugins.svm.libsvm import LibSVM

    K, y = kernel(0)
    C = 100.0
    full = LibSVM().solve(K, y, C)
    cut = LibSVM(max_iter=3).solve(K, y, C)
    assert full.converged and 3 < full.n_iter
    assert not cut.converged and cut.n_iter == 3
    assert cut.alpha.min() >= 0 and cut.alpha.max() <= C and abs(cut.alpha @ y) <= 1e-9 * C
    optimum = exact_dual(K, y, C, intercept=True)
    assert svm_dual_value(K, y, cut.alpha) < optimum - 1e-3 * abs(optimum)
    assert abs(svm_dual_value(K, y, full.alpha) - optimum) <= TOLERANCE["libsvm"] * max(1.0, abs(optimum))


@pytest.mark.parametrize("name", ["active-set", "libsvm"])
def test_a_large_constant_part_of_the_kernel_changes_nothing(name):
    """With an intercept the dual ignores ``c 11'``; the solvers work on the centred kernel,
    so a constant part 1e8 times the rest (a constant group weighted by 1/gamma_j, VSKL with
    q = inf) leaves the answer and the decision values as on K alone."""
    K, y = kernel(1)
    C = 1.0
    solver = get_registry().create("svm_solver", name)
    plain = solver.solve(K, y, C)
    shifted = solver.solve(K + 1e8 * K.max(), y, C)
    optimum = exact_dual(K, y, C, intercept=True)
    assert abs(svm_dual_value(K, y, shifted.alpha) - optimum) <= TOLERANCE[name] * max(1.0, optimum)
    f_plain = K @ (plain.alpha * y) + plain.intercept
    f_shifted = (K + 1e8 * K.max()) @ (shifted.alpha * y) + shifted.intercept
    assert np.max(np.abs(f_shifted - f_plain)) <= 1e-3


def test_a_sigint_that_osqp_caught_after_its_last_check_is_raised_when_it_returns():
    """A SIGINT that lands while OSQP's handler is installed but after its last read of its flag
    (the last ADMM step, polishing, unscaling: here a solve that only listens) is not lost: the
    call raises KeyboardInterrupt when it returns; the next solve starts with the flag cleared."""
    import ctypes
    import os
    import signal
    from types import SimpleNamespace

    import osqp
    from osqp.interface import SolverStatus

    from kernelfuse.plugins.svm.osqp_qp import solve_passing_interrupts

    ext = osqp.OSQP().ext
    library = ctypes.CDLL(ext.__file__)

    def late_signal(raise_error):
        library.osqp_start_interrupt_listener()
        os.kill(os.getpid(), signal.SIGINT)
        library.osqp_end_interrupt_listener()
        return SimpleNamespace(info=SimpleNamespace(status_val=SolverStatus.OSQP_SOLVED))

    with pytest.raises(KeyboardInterrupt):
        solve_passing_interrupts(SimpleNamespace(ext=ext, solve=late_signal))
    K, y = kernel(0)
    assert get_registry().create("svm_solver", "osqp").solve(K, y, 1.0).converged
