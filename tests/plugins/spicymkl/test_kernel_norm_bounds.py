"""Certified bounds on kernel norms between reads (kernelfuse.plugins.spicymkl.kernel_norm_bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import breast_cancer_kernels
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.products import kernel_times
from kernelfuse.plugins.spicymkl.kernel_norm_bounds import KernelNormBounds, kernel_times_and_frobenius


def indefinite_stack(M: int, N: int, seed: int) -> np.ndarray:
    """Symmetric kernels with negative eigenvalues (the Frobenius bound does not need PSD)."""
    A = np.random.default_rng(seed).normal(size=(M, N, N))
    return (A + A.transpose(0, 2, 1)) / (2 * N)


def exact_squares(K: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("mij,i,j->m", K, v, v)


@pytest.mark.parametrize("storage", ["float64", "float32", "factors"])
def test_one_pass_gives_the_products_and_the_frobenius_norms(storage):
    rng = np.random.default_rng(0)
    if storage == "factors":
        factors = [rng.normal(size=(30, r)) for r in (2, 5, 9)]
        K = FactorKernels(factors)
        dense = np.stack([F @ F.T for F in factors])
    else:
        dense, _ = breast_cancer_kernels(n=30, m=4, seed=1)
        K = dense.astype(np.float32) if storage == "float32" else dense
        dense = np.asarray(K, dtype=np.float64)
    V = rng.normal(size=(30, 2))
    products, frobenius = kernel_times_and_frobenius(K, V)
    np.testing.assert_allclose(products, kernel_times(K, V), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(frobenius, np.linalg.norm(dense, axis=(1, 2)), rtol=1e-10)


@pytest.mark.parametrize("psd", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_the_intervals_contain_the_squared_norms_wherever_the_vector_moves(psd, seed):
    rng = np.random.default_rng(seed)
    K = breast_cancer_kernels(n=40, m=12, seed=seed)[0] if psd else indefinite_stack(12, 40, seed)
    start = rng.normal(size=40)
    products, frobenius = kernel_times_and_frobenius(K, start)
    bounds = KernelNormBounds.at(products, start, frobenius)
    v = start
    for step in range(25):
        v = v + rng.normal(size=40) * 10.0 ** rng.uniform(-6, 1)  # small and large moves
        lower, upper = bounds.squared_interval(v)
        exact = exact_squares(K, v)
        scale = 1e-12 * (np.abs(exact) + 1.0)
        assert np.all(lower <= exact + scale) and np.all(exact <= upper + scale)
        if step % 3 == 0:  # some kernels read at the new point: several references at once
            read = rng.choice(12, size=4, replace=False)
            bounds.update(read, v, np.einsum("mij,j->mi", K[read], v))
            assert np.array_equal(np.flatnonzero(bounds.exact(v)), np.sort(read))
            np.testing.assert_allclose(bounds.squared_interval(v)[1][read], exact[read], rtol=1e-10)
    # References no kernel refers to any more are dropped.
    assert len(bounds.references) == np.unique(bounds.reference).size <= 12


def test_the_bounds_tighten_as_the_vector_stops_moving():
    K, _ = breast_cancer_kernels(n=40, m=12, seed=5)
    rng = np.random.default_rng(5)
    u = rng.normal(size=40)
    products, frobenius = kernel_times_and_frobenius(K, u)
    bounds = KernelNormBounds.at(products, u, frobenius)
    widths = []
    for size in (1e-1, 1e-2, 1e-3):
        lower, upper = bounds.squared_interval(u + size * rng.normal(size=40))
        widths.append(float(np.max(upper - lower)))
    # The width is second order in the move: 10x smaller moves, ~100x narrower intervals.
    assert widths[1] < widths[0] / 50 and widths[2] < widths[1] / 50


@pytest.mark.parametrize("seed", range(3))
def test_norms_are_exact_where_they_could_be_the_largest_and_read_few_kernels(seed):
    K, _ = breast_cancer_kernels(n=50, m=40, seed=seed)
    rng = np.random.default_rng(seed)
    u = rng.normal(size=50)
    products, frobenius = kernel_times_and_frobenius(K, u)
    bounds = KernelNormBounds.at(products, u, frobenius)
    v = u + 1e-3 * rng.normal(size=50)
    norms, read = bounds.norms(K, v)
    exact = np.sqrt(np.maximum(exact_squares(K, v), 0.0))
    assert norms.max() == pytest.approx(exact.max(), rel=1e-12)
    assert np.all(norms >= exact * (1 - 1e-12))
    assert 0 < read < 0.5  # a small move: only the kernels near the top are read
    # Values known another way are used as they are and not read again.
    top = np.array([int(np.argmax(exact))])
    norms_known, read_known = bounds.norms(K, v, (top, exact_squares(K[top], v)))
    assert norms_known.max() == pytest.approx(exact.max(), rel=1e-12)
    assert read_known < read
