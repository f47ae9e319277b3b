"""The exact reference solver (cvxpy + Clarabel) against OBJECTIVES.md.

Kernels come from the breast-cancer data (standardised features, Gaussian and
linear kernels on feature subsets), N = 40, M = 3-4, fixed seeds.  Checks:

* consistency: the objective core recomputes from the returned model equals
  the reported one and cvxpy's optimal value (1e-7 relative), and the gap to
  Clarabel's dual objective is at most 1e-6, for every family and variant;
* independent optima: libsvm (sklearn ``SVC``) for ``l1_mkl_sq`` with one
  kernel and for ``vskl`` with singleton groups and q = 1; a box-constrained
  dual QP solved exactly by BVLS (bracketed by its own primal and dual values)
  for ``pnorm_mkl`` with p = 2 and for ``mlmkl`` at the returned weights;
  L-BFGS on the smooth ``mikl`` with p = q = 2;
* structure: ``vskl`` with one group is ``l1_mkl_sq``; ``l1_mkl`` and
  ``l1_mkl_sq`` share minimisers under ``C_l1 = sum_m ||f_m*|| / C_sq``;
  random perturbations of the returned model never lower the objective;
  other kernel weights never beat ``mlmkl``'s.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.optimize import lsq_linear, minimize
from sklearn.datasets import load_breast_cancer
from sklearn.svm import SVC

import kernelfuse
from kernelfuse.assembly.result import roundoff
from kernelfuse.errors import ConvergenceWarning, SolverError
from kernelfuse.plugins.reference.certificate import lower_bound
from kernelfuse.plugins.reference.cvxpy_solver import CvxpyReference, certified
from kernelfuse.problem import objectives
from kernelfuse.problem.instance import Problem

N = 40
#: Reported objective vs cvxpy's optimal value (relative).
VALUE_TOL = 1e-7
#: |objective - dual| / max(1, |objective|).
GAP_TOL = 1e-6


def _gauss(Z: np.ndarray, gamma: float) -> np.ndarray:
    sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * sq / Z.shape[1])


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    X, labels = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(7)
    idx = rng.choice(labels.size, N, replace=False)
    X = X[idx]
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(labels[idx] == 1, 1.0, -1.0)
    K = np.stack([
        _gauss(X[:, 0:4], 0.5),
        _gauss(X[:, 4:10], 2.0),
        X[:, 10:14] @ X[:, 10:14].T,
        _gauss(X[:, 20:26], 1.0),
    ])
    K_trace = K / np.trace(K, axis1=1, axis2=2)[:, None, None]
    # Indefinite and non-symmetric kernels for mikl.
    A = np.stack([
        K[0] - 0.7 * K[1],
        K[2] + 0.3 * np.triu(K[3]),
        np.tanh(0.5 * X[:, 0:3] @ X[:, 3:6].T),
    ])
    multiclass = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    Y = np.stack([y, np.sign(X[:, 1] + 0.2), np.sign(X[:, 3] - 0.1)], axis=1)
    return {"X": X, "y": y, "K": K, "K_trace": K_trace, "A": A,
            "multiclass": multiclass, "Y": Y, "real": X[:, 5].copy()}


def _problem(data: dict, case: dict) -> Problem:
    case = dict(case)
    K = data[case.pop("kernels", "K")]
    y = data[case.pop("targets", "y")]
    family = case.pop("family")
    return Problem.create(K, y, family, loss=case.pop("loss", None),
                          groups=case.pop("groups", None), **case)


def _solve(data: dict, case: dict) -> kernelfuse.Result:
    """``kernelfuse.solve`` as a user calls it."""
    case = dict(case)
    K = data[case.pop("kernels", "K")]
    y = data[case.pop("targets", "y")]
    return kernelfuse.solve(K, y, solver="cvxpy", check_psd=True, **case)


def _decision(K: np.ndarray, coef: np.ndarray, b: float = 0.0) -> np.ndarray:
    return objectives.decision_values(objectives.kernel_products(K, coef), b)


# ------------------------------------------------------------------ cases

CASES = (
    [dict(family="l1_mkl", C=0.3, loss=loss) for loss in ("hinge", "logistic", "squared-hinge")]
    + [dict(family="l1_mkl", C=1.0, loss=loss, targets="real")
       for loss in ("squared", "eps-insensitive")]
    + [dict(family="l1_mkl", C=0.3, C2=0.5, loss="hinge"),
       dict(family="l1_mkl", C=0.3, C2=2.0, loss="logistic")]
    + [dict(family="l1_mkl_sq", C=0.5), dict(family="l1_mkl_sq", C=50.0, kernels="K_trace")]
    + [dict(family="vskl", C=2.0, q=q, groups=[0, 0, 1, 1]) for q in (1, 2, 3, math.inf)]
    + [dict(family="vskl", C=2.0, q=2, groups=[0, 1, 2, 0])]
    + [dict(family="pnorm_mkl", lam=0.05, p=p) for p in (1.01, 1.25, 1.5, 2.0)]
    + [dict(family="pnorm_mkl", lam=0.05, p=p, targets="multiclass")
       for p in (1.01, 1.25, 1.5, 2.0)]
    + [dict(family="mikl", lam=0.5, p=p, q=q, r=r, kernels="A")
       for p in (1, 2) for q in (1, 2) for r in (1, 2)]
    + [dict(family="mikl", lam=0.5, p=1, q=2, r=1), dict(family="mikl", lam=0.5, p=2, q=1, r=2)]
    + [dict(family=f, C=c, targets="Y") for f in ("mlmkl_sum", "mlmkl_max") for c in (0.5, 5.0)]
)


def _case_id(case: dict) -> str:
    return case["family"] + ":" + ",".join(f"{k}={v}" for k, v in case.items() if k != "family")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_objective_is_consistent_and_certified(data, case):
    problem = _problem(data, case)
    result = _solve(data, case)
    assert result.status == "converged", result.message
    assert result.solver == "cvxpy" and result.family == case["family"]
    assert result.coef.shape == problem.coef_shape

    # Recomputed from the returned model = reported objective.
    recomputed = objectives.evaluate(problem, result.coef, result.intercept, result.kernel_weights)
    assert recomputed == pytest.approx(result.objective, rel=1e-12, abs=1e-12)
    # = cvxpy's optimal value of the cone program.
    solution = CvxpyReference().solve_program(problem)
    assert abs(result.objective - solution.cvxpy_value) <= VALUE_TOL * max(1.0, abs(result.objective))
    assert solution.objective == pytest.approx(result.objective, rel=1e-12)
    # Certified by the dual objective, and reported consistently.
    assert math.isfinite(result.dual_objective)
    assert abs(result.gap) <= GAP_TOL
    assert result.gap == pytest.approx(
        (result.objective - result.dual_objective) / max(1.0, abs(result.objective))
    )
    assert len(result.history) == 1
    assert result.history[0].objective == pytest.approx(result.objective, rel=1e-12)
    assert result.history[0].dual_objective == result.dual_objective

    fam = problem.family
    if not fam.has_intercept:
        assert result.intercept == 0.0
    if fam.target == "multilabel":
        d = result.kernel_weights
        assert d is not None and d.min() >= 0.0 and abs(d.sum() - 1.0) <= 1e-8
        # A kernel with no weight carries no function.
        norms = objectives.squared_norms(result.coef, objectives.kernel_products(problem.K, result.coef))
        assert np.all(norms[d == 0.0] == 0.0)
    # Non-trivial problems: some component is active.
    if fam.requires_psd:
        assert objectives.rkhs_norms(problem.K, result.coef).max() > 1e-2
    else:
        assert np.abs(result.coef).max() > 1e-2


# ------------------------------------------------------------------ independent optima


def _svc_bracket(K: np.ndarray, y: np.ndarray, C: float) -> tuple[float, float]:
    """libsvm's SVM primal (at its expansion) and dual objective, both in double precision."""
    svc = SVC(kernel="precomputed", C=C, tol=1e-10).fit(K, y)
    a = np.zeros(y.size)
    a[svc.support_] = svc.dual_coef_[0]  # y_i alpha_i
    f = K @ a + svc.intercept_[0]
    quad = a @ K @ a
    primal = 0.5 * quad + C * np.maximum(0.0, 1.0 - y * f).sum()
    dual = np.abs(a).sum() - 0.5 * quad
    return primal, dual


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_l1_mkl_sq_with_one_kernel_is_the_svm(data, C):
    K, y = data["K"][1], data["y"]
    result = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=C)
    primal, dual = _svc_bracket(K, y, C)
    # libsvm's alpha is feasible to its tolerance: its dual bounds ours from below
    # and its primal from above (libsvm caches the kernel in single precision).
    scale = abs(result.objective)
    assert dual <= result.objective + 1e-9 * scale
    assert result.objective <= primal + 1e-9 * scale
    assert (result.objective - dual) / scale <= 1e-7
    assert (primal - dual) / scale <= 1e-6


def test_vskl_singleton_groups_q1_is_the_svm_on_the_sum_kernel(data):
    # 0.5 sum_m ||f_m||^2 minimised over decompositions of f is 0.5 ||f||^2 in sum_m K_m.
    K, y, C = data["K"], data["y"], 1.0
    result = kernelfuse.solve(K, y, solver="cvxpy", family="vskl", C=C, q=1, groups=[0, 1, 2, 3])
    primal, dual = _svc_bracket(K.sum(0), y, C)
    scale = abs(result.objective)
    assert dual <= result.objective + 1e-9 * scale <= primal + 2e-9 * scale
    assert (result.objective - dual) / scale <= 1e-7


def _box_qp_svm(K: np.ndarray, y: np.ndarray, C: float) -> tuple[float, float]:
    """SVM without intercept, ``max_{0 <= a <= C} sum(a) - 0.5 (a y)' K (a y)``.

    Solved exactly by bounded-variable least squares (scipy's BVLS active-set
    method): with ``Q = diag(y) K diag(y) = R'R`` and ``R'b = 1`` the dual is
    ``-0.5 ||R a - b||^2 + const``.  Returns the primal ``0.5 f'K^+f + C sum
    hinge`` at ``f = K (a y)`` and the dual value at ``a``: an upper and a lower
    bound on the SVM optimum.
    """
    Q = (y[:, None] * K) * y[None, :]
    lam, V = np.linalg.eigh(Q)
    # A singular Q is lifted by 1e-11 of its top eigenvalue: ``a`` stays feasible,
    # so both returned values remain bounds (only less tight).
    lam = np.maximum(lam, 1e-11 * lam[-1])
    R = np.sqrt(lam)[:, None] * V.T
    b = (V.T @ np.ones(y.size)) / np.sqrt(lam)
    a = lsq_linear(R, b, bounds=(0.0, C), method="bvls", tol=1e-15, max_iter=10000).x
    a = np.clip(a, 0.0, C)
    ay = a * y
    f = K @ ay
    quad = ay @ f
    primal = 0.5 * quad + C * np.maximum(0.0, 1.0 - y * f).sum()
    return primal, a.sum() - 0.5 * quad


def test_pnorm_mkl_p2_is_the_svm_on_the_sum_kernel(data):
    # (lam/2) sum_m ||f_m||^2 + mean hinge = lam * SVM(sum K, C = 1/(lam N)), no intercept.
    K, y, lam = data["K"], data["y"], 0.05
    result = kernelfuse.solve(K, y, solver="cvxpy", family="pnorm_mkl", lam=lam, p=2)
    primal, dual = _box_qp_svm(K.sum(0), y, 1.0 / (lam * N))
    primal, dual = lam * primal, lam * dual
    assert (primal - dual) / abs(dual) <= 1e-8  # the QP itself is accurate
    assert dual - 1e-9 <= result.objective <= primal + 1e-9


@pytest.mark.parametrize("family", ["mlmkl_sum", "mlmkl_max"])
def test_mlmkl_equals_svms_at_its_weights_and_no_weights_do_better(data, family):
    K, Y, C = data["K"], data["Y"], 5.0
    result = kernelfuse.solve(K, Y, solver="cvxpy", family=family, C=C)
    combine = np.sum if family == "mlmkl_sum" else np.max

    def svms(d: np.ndarray) -> tuple[float, float]:
        Kd = np.tensordot(d, K, axes=1)
        brackets = np.array([_box_qp_svm(Kd, Y[:, k], C) for k in range(Y.shape[1])])
        return float(combine(brackets[:, 0])), float(combine(brackets[:, 1]))

    upper, lower = svms(result.kernel_weights)
    scale = abs(result.objective)
    assert (upper - lower) / scale <= 1e-8
    assert lower - 1e-8 * scale <= result.objective <= upper + 1e-8 * scale
    rng = np.random.default_rng(3)
    for d in [*np.eye(K.shape[0]), np.full(K.shape[0], 1 / K.shape[0]),
              *rng.dirichlet(np.ones(K.shape[0]), size=4)]:
        _, lower_d = svms(d)
        assert lower_d >= result.objective - 1e-8 * scale


def test_mikl_kernels_are_indefinite_and_non_symmetric(data):
    A = data["A"]
    assert np.linalg.eigvalsh(A[0])[0] < -1.0  # clearly indefinite
    assert np.abs(A[1] - A[1].T).max() > 0.1 and np.abs(A[2] - A[2].T).max() > 0.1
    with pytest.raises(ValueError):  # the PSD families refuse them
        kernelfuse.solve(A, data["y"], solver="cvxpy", family="l1_mkl_sq")


def test_mikl_p2_q2_matches_lbfgs(data):
    # Smooth and strongly convex: sum sqhinge(y, sum_t K_t' alpha_t) + (lam/2) ||alpha||^2.
    A, y, lam = data["A"], data["y"], 0.5
    result = kernelfuse.solve(A, y, solver="cvxpy", family="mikl", lam=lam, p=2, q=2, r=1)
    M = A.shape[0]

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        coef = x.reshape(M, N)
        f = np.einsum("mji,mj->i", A, coef)
        slack = np.maximum(0.0, 1.0 - y * f)
        grad_f = -2.0 * y * slack
        grad = np.einsum("mji,i->mj", A, grad_f) + lam * coef
        return float(slack @ slack + 0.5 * lam * x @ x), grad.ravel()

    res = minimize(fun, np.zeros(M * N), jac=True, method="L-BFGS-B",
                   options={"ftol": 1e-16, "gtol": 1e-11, "maxiter": 20000})
    assert result.objective == pytest.approx(res.fun, rel=1e-8)
    assert result.objective <= res.fun + 1e-10


# ------------------------------------------------------------------ structure


@pytest.mark.parametrize("q", [1, 2, math.inf])
def test_vskl_with_one_group_is_l1_mkl_sq(data, q):
    K, y = data["K"], data["y"]
    sq = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=2.0)
    vskl = kernelfuse.solve(K, y, solver="cvxpy", family="vskl", C=2.0, q=q, groups=[5, 5, 5, 5])
    assert vskl.objective == pytest.approx(sq.objective, rel=1e-7)
    # Each model is optimal for the other family too.
    p_sq = Problem.create(K, y, "l1_mkl_sq", C=2.0)
    assert objectives.evaluate(p_sq, vskl.coef, vskl.intercept) == pytest.approx(sq.objective, rel=1e-7)


@pytest.mark.parametrize("C", [0.3, 3.0])
def test_l1_mkl_and_l1_mkl_sq_share_minimisers(data, C):
    # Stationarity of 0.5 S^2 + C hinge is that of hinge + (S*/C) S, S = sum_m ||f_m||.
    K, y = data["K"], data["y"]
    sq = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=C)
    total = objectives.rkhs_norms(K, sq.coef).sum()
    C_l1 = total / C
    l1 = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", C=C_l1)
    p_l1 = Problem.create(K, y, "l1_mkl", C=C_l1)
    assert objectives.evaluate(p_l1, sq.coef, sq.intercept) == pytest.approx(l1.objective, rel=1e-7)
    # l1_mkl's minimiser may differ (its minimisers form a face); the map from its
    # own S1 = sum_m ||f_m|| takes it back: it minimises l1_mkl_sq with C = S1 / C_l1.
    C_back = objectives.rkhs_norms(K, l1.coef).sum() / C_l1
    back = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=C_back)
    p_back = Problem.create(K, y, "l1_mkl_sq", C=C_back)
    assert objectives.evaluate(p_back, l1.coef, l1.intercept) == pytest.approx(back.objective, rel=1e-7)
    # The map matters: the other reading, C * S*, gives a different problem.
    p_other = Problem.create(K, y, "l1_mkl", C=C * total)
    other = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", C=C * total)
    assert objectives.evaluate(p_other, sq.coef, sq.intercept) > other.objective * (1 + 1e-3)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_random_perturbations_never_lower_the_objective(data, case):
    problem = _problem(data, case)
    result = _solve(data, case)
    rng = np.random.default_rng(11)
    tol = 1e-7 * max(1.0, abs(result.objective))
    coef, b, d = result.coef, result.intercept, result.kernel_weights
    for scale in (1e-2, 1e-4, 1e-6):
        for _ in range(5):
            delta = rng.normal(size=coef.shape)
            delta *= scale * max(np.abs(coef).max(), 1.0) / np.abs(delta).max()
            new_b = b + scale * rng.normal() if problem.family.has_intercept else 0.0
            new_d = d
            if d is not None:
                support = d > 0
                delta[~support] = 0.0  # a kernel without weight must stay empty
                new_d = np.where(support, d * np.exp(scale * rng.normal(size=d.shape)), 0.0)
                new_d /= new_d.sum()
            value = objectives.evaluate(problem, coef + delta, new_b, new_d)
            assert value >= result.objective - tol


@pytest.mark.parametrize("family,targets,params", [
    ("l1_mkl_sq", "y", {"C": 1.0}),
    ("pnorm_mkl", "multiclass", {"lam": 0.05, "p": 1.5}),
    ("mlmkl_sum", "Y", {"C": 1.0}),
])
def test_a_zero_kernel_gets_no_function_and_changes_nothing(data, family, targets, params):
    y = data[targets]
    with_zero = np.concatenate([data["K"][:2], np.zeros((1, N, N))])
    result = kernelfuse.solve(with_zero, y, solver="cvxpy", family=family, **params)
    plain = kernelfuse.solve(data["K"][:2], y, solver="cvxpy", family=family, **params)
    assert result.status == "converged" and abs(result.gap) <= GAP_TOL
    assert np.all(result.coef[2] == 0.0)
    assert result.objective == pytest.approx(plain.objective, rel=1e-7)


# ------------------------------------------------------------------ honesty and plumbing


@pytest.mark.parametrize("case", CASES[::6], ids=_case_id)
def test_converged_always_means_certified(data, case):
    # At tol = 1e-14 Clarabel cannot certify 1000 * tol everywhere: the solver
    # must then say "numerical_failure" (or raise), never "converged" with a larger gap.
    tol = 1e-14
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = _solve(data, {**case, "tol": tol})
    except SolverError:
        return
    failed_warnings = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    if result.status == "converged":
        assert abs(result.gap) <= 1e3 * tol
        assert not failed_warnings
    else:
        assert failed_warnings, "a failed solve must warn"
        assert result.status == "numerical_failure"
        assert "no attempt certified" in result.message
        problem = _problem(data, case)
        assert objectives.evaluate(
            problem, result.coef, result.intercept, result.kernel_weights
        ) == pytest.approx(result.objective, rel=1e-12)


def test_iteration_limit_raises_a_clear_error(data):
    with pytest.raises(SolverError, match="MaxIterations.*raise max_iter"):
        kernelfuse.solve(data["K"], data["y"], solver="cvxpy", family="l1_mkl", C=0.3, max_iter=2)


def test_registered_with_its_description_and_parameters():
    from kernelfuse.parts.registry import get_registry

    recipe = get_registry().get("recipe", "cvxpy").factory
    assert recipe.description.startswith("Exact reference")
    assert recipe.families == frozenset(kernelfuse.FAMILIES)
    assert {"tol", "max_iter", "verbose"} <= recipe.parameters()


def test_importing_the_plugin_does_not_import_cvxpy():
    code = ("import sys, kernelfuse.plugins.reference.cvxpy_solver; "
            "print('cvxpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ the certificate


@pytest.mark.parametrize("case", CASES[::3], ids=_case_id)
def test_the_certificate_is_a_lower_bound_from_any_dual_point(data, case):
    """The family's bound at random dual points never passes the certified upper end: it is a
    bound by weak duality, not by Clarabel's accuracy (whose dual objective passed the
    optimum by 1e-6 on some machines)."""
    problem = _problem(data, case)
    result = _solve(data, case)
    lower, upper = result.interval
    assert result.dual_objective == lower and "certified interval" in result.message
    rng = np.random.default_rng(3)
    shape = (N,) if len(problem.coef_shape) == 2 else (N, problem.coef_shape[1])
    for scale in (0.1, 1.0, 10.0):
        for _ in range(3):
            assert lower_bound(problem, scale * rng.normal(size=shape)) <= upper + roundoff(upper, N)


def test_a_lower_bound_above_the_objective_is_round_off_or_invalid():
    ok, message = certified(10.0, 10.0 + 1e-14, 1e-6, N)
    assert ok and "round-off" in message and "certified interval [10, 10]" in message
    ok, message = certified(10.0, 10.0 + 1e-9, 1e-6, N)
    assert not ok and message.startswith("invalid certificate")
    ok, message = certified(10.0, 9.0, 1e-6, N)
    assert not ok and "exceeds 1e-06" in message


def test_an_invalid_certificate_is_a_numerical_failure(data, monkeypatch):
    import kernelfuse.plugins.reference.cvxpy_solver as module

    monkeypatch.setattr(module, "lower_bound", lambda problem, u: 1e6)
    with pytest.warns(ConvergenceWarning, match="numerical_failure.*invalid certificate"):
        result = _solve(data, dict(family="l1_mkl_sq", C=0.5))
    assert result.status == "numerical_failure" and result.n_iter > 0
