"""kernelfuse.metrics' kernel metrics against hand computations, numpy and independent cvxpy programs."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from kernelfuse import ValidationError, metrics
from kernelfuse.numerics import geometry


def points(n: int, seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points in R^3 and labels by the sign of the first coordinate (pushed apart by ``shift``)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    X[:, 0] += shift * y
    return X, y


def test_alignment_by_hand_and_numpy() -> None:
    X, y = points(30, 0)
    K = X @ X.T
    assert metrics.alignment(np.outer(y, y), y) == pytest.approx(1.0)
    assert metrics.alignment(np.eye(30), y) == pytest.approx(1 / np.sqrt(30))   # trace / (sqrt(n) n)
    T = np.outer(y, y)
    assert metrics.alignment(K, y) == pytest.approx(np.sum(K * T) / np.sqrt(np.sum(K * K) * np.sum(T * T)))
    assert metrics.alignment(K, np.where(y > 0, "b", "a")) == pytest.approx(metrics.alignment(K, y))
    K2 = rbf_kernel(X)
    assert metrics.alignment(K, K2) == pytest.approx(np.sum(K * K2) / np.linalg.norm(K) / np.linalg.norm(K2))


def test_centered_alignment_is_the_alignment_of_H_K_H() -> None:
    X, y = points(25, 1)
    K = rbf_kernel(X, gamma=0.3)
    H = np.eye(25) - np.ones((25, 25)) / 25
    Kc, Tc = H @ K @ H, H @ np.outer(y, y) @ H
    expected = np.sum(Kc * Tc) / np.sqrt(np.sum(Kc * Kc) * np.sum(Tc * Tc))
    assert metrics.centered_alignment(K, y) == pytest.approx(expected, rel=1e-12)
    # centring removes a constant added to every entry, which the plain alignment sees
    assert metrics.centered_alignment(K + 5.0, y) == pytest.approx(expected, rel=1e-9)
    assert metrics.alignment(K + 5.0, y) != pytest.approx(metrics.alignment(K, y), rel=1e-3)


def test_radius_by_hand() -> None:
    two = np.array([[0.0, 0.0], [3.0, 4.0]])                       # distance 5: radius 2.5
    assert metrics.radius(two @ two.T) == pytest.approx(2.5, rel=1e-6)
    triangle = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, np.sqrt(3.0)]])   # side 2: radius 2 / sqrt(3)
    assert metrics.radius(triangle @ triangle.T) == pytest.approx(2 / np.sqrt(3), rel=1e-6)
    assert metrics.radius(np.eye(4)) == pytest.approx(np.sqrt(3 / 4), rel=1e-6)   # the simplex's vertices


def test_radius_matches_the_primal_ball_in_input_space() -> None:
    X, _ = points(40, 2)
    centre, r2 = cp.Variable(3), cp.Variable()
    cp.Problem(cp.Minimize(r2), [cp.sum_squares(X[i] - centre) <= r2 for i in range(40)]).solve(solver=cp.CLARABEL)
    ball = geometry.enclosing_ball(X @ X.T)
    assert ball.lower <= r2.value * (1 + 1e-6) and r2.value <= ball.upper * (1 + 1e-6)
    assert ball.upper - ball.lower <= 1e-6 * ball.upper
    assert metrics.radius(X @ X.T) == pytest.approx(np.sqrt(r2.value), rel=1e-6)


def test_hard_margin_by_hand_and_against_the_hard_margin_svm() -> None:
    two = np.array([[0.0, 0.0], [3.0, 4.0]])
    assert metrics.margin(two @ two.T, [1, -1]) == pytest.approx(2.5, rel=1e-6)   # half of the distance 5
    X, y = points(40, 3, shift=1.0)                    # separable: a gap of 2 along the first axis
    K = X @ X.T
    svm = SVC(C=1e8, kernel="precomputed", tol=1e-10).fit(K, y)
    beta = np.zeros(40)
    beta[svm.support_] = svm.dual_coef_[0]
    hulls = geometry.hull_distance(K, y)
    assert hulls.upper - hulls.lower <= 1e-6 * hulls.upper
    assert metrics.margin(K, y) == pytest.approx(1 / np.sqrt(beta @ K @ beta), rel=1e-5)
    assert metrics.margin(K, y) >= 1.0                 # the shift alone opens a gap of 2


def test_hard_margin_is_zero_when_the_hulls_meet() -> None:
    X = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])   # XOR: not linearly separable
    answer = geometry.hull_distance(X @ X.T, np.array([1.0, 1.0, -1.0, -1.0]))
    assert answer.lower == 0.0 and answer.upper < 1e-8
    assert metrics.margin(X @ X.T, [1, 1, -1, -1]) < 1e-4


def test_soft_margin_against_the_svm_dual_in_cvxpy() -> None:
    X, y = points(40, 4)
    K = rbf_kernel(X, gamma=0.5)
    alpha = cp.Variable(40)
    L = geometry.psd_factor(K)
    cp.Problem(cp.Maximize(cp.sum(alpha) - 0.5 * cp.sum_squares(L.T @ cp.multiply(y, alpha))),
               [alpha >= 0, alpha <= 2.0, y @ alpha == 0]).solve(solver=cp.CLARABEL)
    beta = alpha.value * y
    assert metrics.margin(K, y, C=2.0) == pytest.approx(1 / np.sqrt(beta @ K @ beta), rel=1e-5)


def test_bad_inputs_are_named() -> None:
    X, y = points(10, 5)
    K = X @ X.T
    with pytest.raises(ValidationError, match="exactly two classes"):
        metrics.alignment(K, np.arange(10) % 3)
    with pytest.raises(ValidationError, match=r"y must have shape \(10,\)"):
        metrics.margin(K, y[:5])
    with pytest.raises(ValidationError, match=r"one kernel matrix of shape \(n, n\)"):
        metrics.radius(np.stack([K, K]))
    with pytest.raises(ValidationError, match="not symmetric"):
        metrics.radius(K + np.triu(np.ones((10, 10)), 1))
    with pytest.raises(ValidationError, match="C must be"):
        metrics.margin(K, y, C=-1.0)


def test_a_warm_start_reaches_the_same_solutions() -> None:
    """The QPs started from the solutions of a nearby kernel (GRAM's steps) end where a cold start does."""
    X, y = points(50, 6, shift=0.3)
    K1, K2 = rbf_kernel(X, gamma=0.2), rbf_kernel(X, gamma=0.25)
    cold_ball, cold_hulls = geometry.enclosing_ball(K2), geometry.hull_distance(K2, y)
    warm_ball = geometry.enclosing_ball(K2, geometry.enclosing_ball(K1).g)
    warm_hulls = geometry.hull_distance(K2, y, geometry.hull_distance(K1, y).g)
    assert warm_ball.value == pytest.approx(cold_ball.value, rel=1e-9)
    assert warm_hulls.value == pytest.approx(cold_hulls.value, rel=1e-9)
    assert cold_hulls.lower <= warm_hulls.value <= cold_hulls.upper * (1 + 1e-9)
