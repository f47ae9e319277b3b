"""The entropic mirror map on a product of simplices, and the (2,p) group-norm map at its edges."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kernelfuse import get_registry
from kernelfuse.plugins.mirror_maps.entropic_simplex import group_log_softmax
from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
from kernelfuse.problem.regularizers import lp_norm


@pytest.fixture
def entropic():
    return get_registry().create("mirror_map", "entropic")


def random_point(rng, groups):
    x = rng.uniform(0.05, 1.0, size=groups.size)
    return x / np.bincount(groups, weights=x)[groups]


def test_conjugate_gradient_inverts_the_gradient(entropic):
    rng = np.random.default_rng(0)
    groups = np.array([0, 0, 1, 1, 1, 2])
    x = random_point(rng, groups)
    np.testing.assert_allclose(entropic.grad_h_conjugate(entropic.grad_h(x), groups), x, rtol=1e-12)
    # On each simplex, grad h* is invariant to a constant shift per group.
    theta = rng.normal(size=6)
    shifted = theta + np.array([5.0, 5.0, -3.0, -3.0, -3.0, 100.0])
    np.testing.assert_allclose(entropic.grad_h_conjugate(theta, groups),
                               entropic.grad_h_conjugate(shifted, groups), rtol=1e-12)


def test_softmax_is_stable_for_huge_arguments(entropic):
    groups = np.array([0, 0, 0, 1, 1])
    theta = np.array([1e5, 1e5 - 1.0, -1e5, -7e4, -7e4])
    x = entropic.grad_h_conjugate(theta, groups)
    assert np.isfinite(x).all()
    np.testing.assert_allclose(np.bincount(groups, weights=x), [1.0, 1.0])
    assert x[0] / x[1] == pytest.approx(np.e)
    np.testing.assert_allclose(np.exp(group_log_softmax(theta, groups)), x)


def test_divergence_is_kl_and_nonnegative(entropic):
    rng = np.random.default_rng(1)
    groups = np.array([0, 0, 0, 1, 1])
    for _ in range(20):
        x, z = random_point(rng, groups), random_point(rng, groups)
        kl = np.sum(x * np.log(x / z))
        assert entropic.divergence(x, z) == pytest.approx(kl)
        assert entropic.divergence(x, z) >= 0
        assert entropic.divergence(x, x) == pytest.approx(0.0, abs=1e-15)
    # Bregman identity: D(x, z) = h(x) - h(z) - <grad h(z), x - z> on the simplices.
    h = lambda v: np.sum(v * np.log(v))  # noqa: E731
    assert entropic.divergence(x, z) == pytest.approx(h(x) - h(z) - entropic.grad_h(z) @ (x - z))


#: Dual values the mirror-descent steps can reach, with the softmax of groups [0, 0, 0], [1, 1], [2].
HUGE_DUALS = [
    ([1e300] * 6, [1 / 3, 1 / 3, 1 / 3, 0.5, 0.5, 1.0]),
    ([-1e300] * 6, [1 / 3, 1 / 3, 1 / 3, 0.5, 0.5, 1.0]),
    ([1e300, -1e300, 0.0, -1e300, 1e300, -1e300], [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]),
    ([1.7e308, -1.7e308, 1e300, 2.0, 3.0, -1.7e308], [1.0, 0.0, 0.0, 1 / (1 + np.e), np.e / (1 + np.e), 1.0]),
    ([-np.inf, 1e300, -1e300, -np.inf, 0.0, 5.0], [0.0, 1.0, 0.0, 0.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("theta, expected", HUGE_DUALS)
def test_softmax_of_huge_dual_values_is_finite_and_normalised(entropic, theta, expected):
    """Log-sum-exp after the group maximum: no overflow, not even in ``theta - max`` near +-1.7e308
    (rounded to -inf, weight 0); underflow to 0 is the exact weight in double and is allowed."""
    groups = np.array([0, 0, 0, 1, 1, 2])
    with warnings.catch_warnings(), np.errstate(over="raise", divide="raise", invalid="raise"):
        warnings.simplefilter("error")
        x = entropic.grad_h_conjugate(np.array(theta), groups)
    assert np.isfinite(x).all() and x.min() >= 0.0
    np.testing.assert_allclose(x, expected, rtol=1e-15, atol=0.0)
    np.testing.assert_allclose(np.bincount(groups, weights=x), 1.0, rtol=1e-15)


@pytest.mark.parametrize("p", [1.01, 1.5, 2.0])
def test_group_norm_map_at_zero_blocks(p):
    """The (2,p) map with zero blocks, and at 0 itself: exact zeros, no 0/0, no warning."""
    mirror_map = GroupNormMirrorMap(p)
    theta = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    zero = np.zeros_like(theta)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        w = mirror_map.grad_h_conjugate(theta)
        back = mirror_map.grad_h(w)
        at_zero = (mirror_map.grad_h_conjugate(zero), mirror_map.grad_h(zero))
        values = (mirror_map.h(zero), mirror_map.divergence(zero, zero), mirror_map.divergence(w, zero),
                  mirror_map.divergence(zero, w), mirror_map.dual_norm(np.zeros(4)), lp_norm(np.zeros(4), p))
        weights = mirror_map.weights(np.zeros(4))
        factor = mirror_map.projection_factor(0.0, 0.0)
    assert np.all(w[[0, 2]] == 0.0) and np.all(back[[0, 2]] == 0.0)
    np.testing.assert_allclose(back, theta, rtol=1e-9, atol=1e-12)
    assert all(np.all(a == 0.0) for a in at_zero) and np.all(weights == 0.0) and factor == 1.0
    h_zero, d_zero, d_w_zero, d_zero_w, dual, norm = values
    assert h_zero == d_zero == dual == norm == 0.0
    assert d_w_zero == pytest.approx(mirror_map.h(w))  # grad h(0) = 0 and h(0) = 0
    assert d_zero_w == pytest.approx(np.sum(w * theta) - mirror_map.h(w))  # h(w) + h*(theta) = <w, theta>
