"""The two-stage solvers (MKLpy's one-step algorithms): each method's weights against its
formula computed independently (numpy, cvxpy, scikit-learn), and the honest report of the model."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import ValidationError, metrics
from kernelfuse.problem import objectives
from kernelfuse.problem.instance import Problem
from kernelfuse.testing import assert_within_certified

TWO_STAGE = ("fheuristic", "cka", "pwmk", "easymkl", "gram", "memo", "rmkl")


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return breast_cancer_kernels(60, 4, seed=2)


def solve(K: np.ndarray, y: np.ndarray, solver: str, **params: object) -> kernelfuse.Result:
    """The solve at ``C = 10``: ``completed`` or ``converged``, without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", kernelfuse.ConvergenceWarning)
        return kernelfuse.solve(K, y, solver=solver, C=10.0, **params)


def test_fheuristic_weights_are_the_normalised_alignments(data) -> None:
    K, y = data
    scores = np.array([y @ Km @ y / (y.size * np.linalg.norm(Km)) for Km in K])   # A(K_m, yy')
    np.testing.assert_allclose(solve(K, y, "fheuristic").kernel_weights, scores / scores.sum(), rtol=1e-10)
    np.testing.assert_allclose(scores, [metrics.alignment(Km, y) for Km in K], rtol=1e-10)


def test_cka_weights_solve_the_alignment_qp(data) -> None:
    K, y = data
    n = y.size
    H = np.eye(n) - np.ones((n, n)) / n
    centred = [H @ Km @ H for Km in K]
    M = np.array([[np.sum(A * B) for B in centred] for A in centred])
    a = np.array([y @ Kc @ y for Kc in centred])
    v = cp.Variable(K.shape[0], nonneg=True)
    cp.Problem(cp.Minimize(cp.quad_form(v, cp.psd_wrap(M)) - 2 * a @ v)).solve(solver=cp.CLARABEL)
    weights = solve(K, y, "cka").kernel_weights
    np.testing.assert_allclose(weights, v.value / v.value.sum(), atol=1e-6)
    # what the weights maximise: the centred alignment of the combination, over the simplex
    best = metrics.centered_alignment(np.tensordot(weights, K, axes=1), y)
    rng = np.random.default_rng(0)
    for d in [np.full(4, 0.25), *np.eye(4), *rng.dirichlet(np.ones(4), size=20)]:
        assert metrics.centered_alignment(np.tensordot(d, K, axes=1), y) <= best + 1e-9


def test_pwmk_weights_are_the_normalised_cross_validated_accuracies(data) -> None:
    K, y = data
    accuracy = np.array([cross_val_score(SVC(C=10.0, kernel="precomputed", tol=1e-8), Km, y, cv=3).mean()
                         for Km in K])
    np.testing.assert_allclose(solve(K, y, "pwmk").kernel_weights, accuracy / accuracy.sum(), atol=1e-12)
    shifted = accuracy - 0.5 * accuracy.min()
    np.testing.assert_allclose(solve(K, y, "pwmk", delta=0.5).kernel_weights, shifted / shifted.sum(), atol=1e-12)


@pytest.mark.parametrize("lam", [0.2, 0.0])   # the hard-margin SVM part; the simplex QP
def test_easymkl_weights_come_from_the_hull_distance_qp(data, lam) -> None:
    K, y = data
    K_lam = (1 - lam) * K.sum(axis=0) + lam * np.eye(y.size)
    g = cp.Variable(y.size, nonneg=True)
    v = cp.multiply(y, g)
    cp.Problem(cp.Minimize(cp.quad_form(v, cp.psd_wrap(K_lam))),
               [cp.sum(g[y > 0]) == 1, cp.sum(g[y < 0]) == 1]).solve(solver=cp.CLARABEL)
    forms = np.array([(g.value * y) @ Km @ (g.value * y) for Km in K])
    # lam = 0: K_lam singular, solved with the simplex QP's ridge of 1e-8 times its mean diagonal
    np.testing.assert_allclose(solve(K, y, "easymkl", lam=lam).kernel_weights, forms / forms.sum(),
                               atol=1e-6 if lam > 0 else 1e-5)


@pytest.mark.parametrize("solver", TWO_STAGE)
def test_the_report_is_honest(data, solver) -> None:
    """The SVM on K(d), reported in l1_mkl_sq units: the objective its model gives, a certified
    interval that holds the cvxpy optimum, ``converged`` only within ``tol``."""
    K, y = data
    steps = {"max_iter": 50} if solver in ("gram", "memo", "rmkl") else {}   # of 1000 by default
    result = solve(K, y, solver, **steps)
    d = result.kernel_weights
    assert d.min() >= 0 and d.sum() == pytest.approx(1.0)
    problem = Problem.create(K, y, "l1_mkl_sq", C=10.0)
    assert objectives.evaluate(problem, result.coef, result.intercept, d) == pytest.approx(result.objective, rel=1e-9)
    K_d = np.tensordot(d, K, axes=1)   # the model is the SVM on K(d)
    svm = SVC(C=10.0, kernel="precomputed", tol=1e-10).fit(K_d, y)
    np.testing.assert_allclose(np.einsum("mij,mj->i", K, result.coef) + result.intercept,
                               svm.decision_function(K_d), atol=1e-5)
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=10.0)
    assert_within_certified(result, reference)
    assert result.dual_objective <= reference.interval[1] + 1e-9
    assert result.status == ("converged" if result.gap <= 1e-6 else "completed")
    loose = solve(K, y, solver, tol=result.gap * 1.01, **steps)
    assert loose.status == "converged"


def test_bad_parameters_are_named(data) -> None:
    K, y = data
    with pytest.raises(ValidationError, match=r"lam must be in \[0, 1\], got 1.5"):
        solve(K, y, "easymkl", lam=1.5)
    with pytest.raises(ValidationError, match=r"delta must be in \[0, 1\], got -0.1"):
        solve(K, y, "pwmk", delta=-0.1)
    with pytest.raises(ValidationError, match="cv=40 folds need at least 40 examples"):
        solve(K, y, "pwmk", cv=40)


def _ratio(K: np.ndarray, y: np.ndarray, d: np.ndarray) -> float:
    """R^2 / D^2 of K(d) by two cvxpy programs written here: the ball's dual, the hulls' distance."""
    K_d = np.tensordot(d, K, axes=1)
    g = cp.Variable(y.size, nonneg=True)
    ball = cp.Problem(cp.Maximize(np.diag(K_d) @ g - cp.quad_form(g, cp.psd_wrap(K_d))), [cp.sum(g) == 1])
    ball.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12)
    h = cp.Variable(y.size, nonneg=True)
    hulls = cp.Problem(cp.Minimize(cp.quad_form(cp.multiply(y, h), cp.psd_wrap(K_d))),
                       [cp.sum(h[y > 0]) == 1, cp.sum(h[y < 0]) == 1])
    hulls.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12)
    return ball.value / hulls.value


def test_gram_steps_are_exponentiated_gradient_steps_on_the_radius_margin_ratio(data) -> None:
    K, y = data
    K = K * y.size   # unit diagonal
    d0 = np.full(4, 0.25)
    step = 1e-5
    gradient = np.array([(_ratio(K, y, d0 + step * e) - _ratio(K, y, d0 - step * e)) / (2 * step) for e in np.eye(4)])
    expected = d0 * np.exp(-0.01 * d0 * gradient)
    np.testing.assert_allclose(solve(K, y, "gram", max_iter=1).kernel_weights, expected / expected.sum(), atol=1e-6)
    none = solve(K, y, "gram", max_iter=0)
    assert none.n_iter == 0 and none.status == "completed" and np.allclose(none.kernel_weights, 0.25)
    assert solve(K, y, "gram", max_iter=3).n_iter == 3


def test_the_ball_and_hull_qps_on_the_kernel_are_those_on_its_factor(data) -> None:
    """The enclosing ball and the class hulls solved on ``K(d)`` itself (warm-started at a nearby
    ``d``, as GRAM's steps are) reach the optimum of the same QPs on its PSD factor."""
    from kernelfuse.numerics import geometry
    from kernelfuse.numerics.simplex_qp import SimplexQP

    K, y = data
    n = y.size
    for d, near in ((np.full(4, 0.25), None), (np.array([0.4, 0.3, 0.2, 0.1]), np.full(4, 0.25))):
        K_d = np.tensordot(d, K, axes=1)
        start = None if near is None else geometry.enclosing_ball(np.tensordot(near, K, axes=1)).g
        ball = geometry.enclosing_ball(K_d, start)
        start = None if near is None else geometry.hull_distance(np.tensordot(near, K, axes=1), y).g
        hulls = geometry.hull_distance(K_d, y, start)
        mu = 1e-8 * float(np.mean(np.diagonal(K_d)))
        R = np.sqrt(2.0) * geometry.psd_factor(K_d).T
        g = SimplexQP(R, mu, np.zeros(n, int)).solve(np.diagonal(K_d).copy(), np.full(n, 1.0 / n)).x
        assert ball.value == pytest.approx(float(np.diagonal(K_d) @ g - g @ K_d @ g), rel=1e-9)
        groups = (y > 0).astype(int)
        start = np.where(y > 0, 1.0 / np.sum(y > 0), 1.0 / np.sum(y < 0))
        h = SimplexQP(R * y, mu, groups).solve(np.zeros(n), start).x
        assert hulls.value == pytest.approx(float((h * y) @ K_d @ (h * y)), rel=1e-7)
        assert ball.lower <= ball.value <= ball.upper and hulls.lower <= hulls.value <= hulls.upper


@pytest.mark.parametrize("theta", [0.0, 0.5])
def test_a_memo_step_is_a_gradient_step_on_the_squared_hull_distance(data, theta) -> None:
    K, y = data
    K = K * y.size
    d0 = np.full(4, 0.25)
    h = cp.Variable(y.size, nonneg=True)
    cp.Problem(cp.Minimize(cp.quad_form(cp.multiply(y, h), cp.psd_wrap(np.tensordot(d0, K, axes=1)))),
               [cp.sum(h[y > 0]) == 1, cp.sum(h[y < 0]) == 1]).solve(solver=cp.CLARABEL)
    v = h.value * y
    Q = np.array([[np.sum(A * B) for B in K] for A in K])
    gradient = np.array([v @ Km @ v for Km in K]) + theta * (Q / (np.trace(Q) / 4)) @ d0
    expected = np.maximum(d0 + 0.01 * gradient, 0)
    np.testing.assert_allclose(solve(K, y, "memo", max_iter=1, theta=theta).kernel_weights,
                               expected / expected.sum(), atol=1e-7)


def test_an_rmkl_step_is_a_gradient_step_on_the_radius_scaled_margin_term(data) -> None:
    K, y = data
    K = K * y.size
    svm = SVC(C=10.0, kernel="precomputed", tol=1e-10).fit(K.mean(axis=0), y)
    alpha = np.zeros(y.size)
    alpha[svm.support_] = np.abs(svm.dual_coef_[0])
    v = np.where(y > 0, alpha / alpha[y > 0].sum(), -alpha / alpha[y < 0].sum())
    radii = []
    for Km in K:   # each kernel's enclosing ball by its dual in cvxpy
        g = cp.Variable(y.size, nonneg=True)
        ball = cp.Problem(cp.Maximize(np.diag(Km) @ g - cp.quad_form(g, cp.psd_wrap(Km))), [cp.sum(g) == 1])
        radii.append(ball.solve(solver=cp.CLARABEL))
    gradient = np.array([v @ Km @ v for Km in K]) + np.array(radii) / 10.0 * (v @ v)
    expected = np.maximum(0.25 + 0.01 * gradient, 0)
    np.testing.assert_allclose(solve(K, y, "rmkl", max_iter=1).kernel_weights, expected / expected.sum(), atol=1e-7)
