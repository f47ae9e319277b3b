"""The passes over a stack every SVM-based oracle makes: the forms read from the support vectors'
rows, and the combined kernels held for a line search, against the sums they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import breast_cancer_kernels
from kernelfuse.kernels.combined import HeldKernels, expansion_products, forms_passes, quadratic_forms


@pytest.mark.parametrize("support", [1, 7, 30])
def test_the_forms_of_a_sparse_expansion_are_the_forms(support):
    K, y = breast_cancer_kernels(n=60, m=5, seed=3)
    beta = np.zeros(60)
    rows = np.random.default_rng(support).choice(60, support, replace=False)
    beta[rows] = np.random.default_rng(0).standard_normal(support) * y[rows]
    np.testing.assert_allclose(quadratic_forms(K, beta), expansion_products(K, beta)[1], rtol=1e-12, atol=1e-15)
    assert forms_passes(K, beta) == support / 60


def _check(held_kernel: np.ndarray, K: np.ndarray, w: np.ndarray) -> None:
    """``K(w)`` as formed from the stack, to the rounding of a few passes."""
    exact = np.tensordot(w, K, axes=1)
    assert np.abs(held_kernel - exact).max() <= 1e-12 * np.abs(exact).max()


def test_held_kernels_are_the_combined_kernels_of_a_line_search_and_its_steps_to_the_boundary():
    """SimpleMKL's pattern: from ``d``, steps along ``D`` to the boundary, each dropping the weight
    that reaches 0 from the direction (two entries change), then trials between the last two
    points, then the next origin among them: every kernel is ``sum_m w_m K_m``, and a trial
    between two held kernels reads two ``N x N`` matrices, not the stack."""
    K, _ = breast_cancer_kernels(n=40, m=12, seed=1)
    M = K.shape[0]
    scales = np.array([np.diagonal(Km).max() for Km in K])
    rng = np.random.default_rng(0)
    d = rng.dirichlet(np.ones(M))
    held = HeldKernels()
    kernel, fraction, held = held.kernel(K, d, scales)
    _check(kernel, K, d)
    assert fraction == 1.0  # the first one from the stack
    D = rng.standard_normal(M)
    D -= D.mean()
    for _ in range(6):  # steps to the boundary of the simplex along the updated direction
        falling = np.flatnonzero(D < 0)
        nu = falling[np.argmin(-d[falling] / D[falling])]
        edge = d + (-d[nu] / D[nu]) * D
        edge[nu] = 0.0
        kernel, fraction, held = held.kernel(K, edge, scales)
        _check(kernel, K, edge)
        mu = int(np.argmax(edge))
        D[mu] += D[nu]
        D[nu] = 0.0
        previous, d = d, edge
    for t in (0.382, 0.618, 0.236, 0.5):  # trials between the last two points
        trial = previous + t * (d - previous)
        kernel, fraction, after = held.kernel(K, trial, scales)
        _check(kernel, K, trial)
        assert after is held and fraction == 1.0 / M
    accepted = previous + 0.3 * (d - previous)
    origin = held.anchored(accepted, scales)
    assert origin.origin is not None and origin.direction is None
    _check(origin.origin.kernel, K, accepted)
    elsewhere = rng.dirichlet(np.ones(M))  # not on the line: from the stack or its own step
    kernel, _, _ = origin.kernel(K, elsewhere, scales)
    _check(kernel, K, elsewhere)


def test_held_kernels_form_from_the_stack_where_combining_would_lose_accuracy():
    """Steps that amplify the held direction's error (each three times the last) are formed from
    the stack once the error bound passes its limit: the kernels stay ``sum_m w_m K_m``."""
    K, _ = breast_cancer_kernels(n=30, m=8, seed=5)
    scales = np.array([np.diagonal(Km).max() for Km in K])
    rng = np.random.default_rng(1)
    w, u = rng.dirichlet(np.ones(8)), 1e-9 * rng.random(8)
    held = HeldKernels()
    for k in range(25):
        w = w + 3.0**k * u
        kernel, _, held = held.kernel(K, w, scales)
        _check(kernel, K, w)
