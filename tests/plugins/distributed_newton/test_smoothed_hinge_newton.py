"""The parts of the distributed pnorm_mkl solve checked on the host: the smoothed hinge, the
regulariser's derivatives in the features' weights and its dual map (no cluster)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelfuse.distributed.model import block_norms
from kernelfuse.plugins.distributed_newton.smoothed_hinge_newton import (
    SmoothedHinge,
    combined_dual_value,
    dual_map,
    penalty_derivatives,
)
from kernelfuse.problem.duality import mean_loss_dual_value
from kernelfuse.problem.regularizers import BlockLp


@pytest.mark.parametrize("mu", [1.0, 0.3, 1e-3])
def test_the_smoothed_hinge_is_within_mu_over_two_below_the_hinge(mu):
    rng = np.random.default_rng(0)
    y, f = np.where(rng.random(500) < 0.5, 1.0, -1.0), rng.normal(scale=2.0, size=500)
    smoothed, hinge = SmoothedHinge(mu).value(y, f), np.maximum(0.0, 1.0 - y * f)
    assert np.all(smoothed <= hinge + 1e-15) and np.all(hinge <= smoothed + mu / 2 + 1e-15)
    step = 1e-7 * mu
    numeric = (SmoothedHinge(mu).value(y, f + step) - SmoothedHinge(mu).value(y, f - step)) / (2 * step)
    np.testing.assert_allclose(SmoothedHinge(mu).derivative(y, f), numeric, atol=1e-5)
    mass = SmoothedHinge(mu).mass(y, f)
    assert np.all((mass >= 0) & (mass <= 1))  # a dual point of the exact hinge


@pytest.mark.parametrize("seed", range(5))
def test_the_regularisers_gradient_and_hessian_in_the_weights(seed):
    rng = np.random.default_rng(seed)
    widths = rng.integers(1, 6, size=int(rng.integers(1, 6)))
    offsets = np.concatenate(([0], np.cumsum(widths)))
    penalty = BlockLp(p=float(rng.uniform(1.05, 2.0)), weight=float(10 ** rng.uniform(-3, 1)))
    v = rng.normal(size=offsets[-1])
    live = np.ones(v.size, dtype=bool)
    gradient, hessian = penalty_derivatives(penalty, v, offsets, live)

    def value(w):
        return penalty.value(block_norms(w, offsets))

    step = 1e-6
    basis = np.eye(v.size)
    numeric = np.array([(value(v + step * e) - value(v - step * e)) / (2 * step) for e in basis])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-8 * penalty.weight)
    second = np.array([(penalty_derivatives(penalty, v + step * e, offsets, live)[0]
                        - penalty_derivatives(penalty, v - step * e, offsets, live)[0]) / (2 * step) for e in basis])
    np.testing.assert_allclose(hessian, second, rtol=1e-5, atol=1e-6 * penalty.weight)
    assert np.linalg.eigvalsh(hessian).min() > 0  # convex, and strictly where every block is non-zero
    u = rng.normal(size=v.size)
    np.testing.assert_allclose(penalty_derivatives(penalty, dual_map(penalty, u, offsets), offsets, live)[0], u,
                               rtol=1e-8, atol=1e-10)  # the dual map inverts the gradient


def test_the_norm_derivatives_of_the_p_norm_penalty():
    penalty = BlockLp(p=1.4, weight=0.7)
    norms = np.array([0.5, 1.2, 0.3, 2.0])
    gradient, hessian = penalty.norm_derivatives(norms)
    step, basis = 1e-6, np.eye(norms.size)
    np.testing.assert_allclose(gradient, [(penalty.value(norms + step * e) - penalty.value(norms - step * e))
                                          / (2 * step) for e in basis], rtol=1e-7)
    np.testing.assert_allclose(hessian, [(penalty.norm_derivatives(norms + step * e)[0]
                                          - penalty.norm_derivatives(norms - step * e)[0]) / (2 * step)
                                         for e in basis], rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_the_combined_certificate_is_a_dual_bound_at_least_each_points(seed):
    """Any combination of the hinge's dual points with weights summing to at most 1 is one: its
    value lies below P at every model (weak duality), and the best is no worse than each point's."""
    rng = np.random.default_rng(seed)
    N, widths = 60, rng.integers(1, 5, size=3)
    offsets = np.concatenate(([0], np.cumsum(widths)))
    Phi, y = rng.normal(size=(N, offsets[-1])), np.where(rng.random(N) < 0.5, 1.0, -1.0)
    penalty = BlockLp(p=float(rng.uniform(1.1, 2.0)), weight=float(10 ** rng.uniform(-3, 0)))
    points = rng.random((5, N)) * (rng.random((5, N)) < 0.7)  # masses a_j in [0, 1]
    masses, gradients = points.mean(axis=1), -(points * y) @ Phi / N
    bound = combined_dual_value(penalty, offsets, masses, gradients)
    for mass, gradient in zip(masses, gradients):
        norm = penalty.dual_norm(block_norms(gradient, offsets))
        single = mean_loss_dual_value(penalty.weight, float(mass), 1.0, norm)
        assert bound >= single - 1e-12
    for _ in range(20):
        v = rng.normal(scale=float(rng.uniform(0.01, 3.0)), size=offsets[-1])
        primal = penalty.value(block_norms(v, offsets)) + np.maximum(0.0, 1.0 - y * (Phi @ v)).mean()
        assert bound <= primal + 1e-12
