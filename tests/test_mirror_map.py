"""The entropic mirror map on a product of simplices."""

from __future__ import annotations

import numpy as np
import pytest

from kernelfuse import get_registry
from kernelfuse.plugins.prox.entropic_simplex import group_log_softmax


@pytest.fixture
def entropic():
    return get_registry().create("prox", "entropic")


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
