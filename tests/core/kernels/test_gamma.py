"""Gaussian and Laplacian kernels given by scikit-learn's gamma beside their width."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

from kernelfuse import ValidationError, get_registry


def test_gamma_is_scikit_learns() -> None:
    X = np.random.default_rng(0).normal(size=(8, 3))
    registry = get_registry()
    gaussian = registry.create("kernel", "gaussian", gamma=0.5)
    assert gaussian.width == pytest.approx(1.0) and gaussian.gamma == pytest.approx(0.5)
    assert gaussian == registry.create("kernel", "gaussian", width=1.0)
    np.testing.assert_allclose(gaussian(X, X), rbf_kernel(X, gamma=0.5), rtol=1e-12)
    np.testing.assert_allclose(registry.create("kernel", "gaussian", gamma=0.02)(X, X), rbf_kernel(X, gamma=0.02),
                               rtol=1e-12)
    laplacian = registry.create("kernel", "laplacian", gamma=0.25)
    assert laplacian.width == pytest.approx(4.0)
    np.testing.assert_allclose(laplacian(X, X), laplacian_kernel(X, gamma=0.25), rtol=1e-12)
    assert attrs.evolve(gaussian, width=2.0).gamma == pytest.approx(0.125)   # the width is what is held


@pytest.mark.parametrize("name", ["gaussian", "laplacian"])
def test_width_and_gamma_together_or_out_of_domain_are_refused(name: str) -> None:
    registry = get_registry()
    with pytest.raises(ValidationError, match=f"{name} kernel: give width or gamma, not both"):
        registry.create("kernel", name, width=1.0, gamma=0.5)
    with pytest.raises(ValidationError, match="gamma must be > 0 and finite, got 0"):
        registry.create("kernel", name, gamma=0)
    with pytest.raises(ValidationError, match="width must be > 0"):
        registry.create("kernel", name, width=-1.0)
