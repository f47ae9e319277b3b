"""Test helpers: small real-data kernel sets and paths (importable from any test)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def breast_cancer_kernels(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` unit-trace Gaussian kernels on random feature subsets of ``n`` samples (labels +-1)."""
    K, target = subset_kernels(load_breast_cancer(), n, m, seed)
    return K, np.where(target == 1, 1.0, -1.0)


def wine_kernels(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`breast_cancer_kernels` on scikit-learn's wine data: 3 classes (indices 0-2)."""
    return subset_kernels(load_wine(), n, m, seed)


def subset_kernels(data, n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """``m`` unit-trace Gaussian kernels on random feature subsets of ``n`` random rows, and their targets."""
    rng = np.random.default_rng(seed)
    rows = rng.permutation(data.target.size)[:n]
    X = StandardScaler().fit_transform(data.data)[rows]
    kernels = []
    for _ in range(m):
        cols = rng.choice(X.shape[1], size=rng.integers(1, 6), replace=False)
        width = rng.uniform(0.5, 3.0) * np.sqrt(cols.size)
        K = rbf_kernel(X[:, cols], gamma=1.0 / (2 * width**2))
        kernels.append(K / np.trace(K))
    return np.stack(kernels), data.target[rows]


def traced_peak(call: Callable[[], T]) -> tuple[T, int]:
    """``call()`` and the peak of memory it allocated, in bytes (tracemalloc: numpy arrays included)."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
