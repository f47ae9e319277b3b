"""MKLpy's convention: the estimators take a list of kernel matrices where they take a precomputed stack."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from kernelfuse import ValidationError
from kernelfuse.frontends.estimators import MKLClassifier


def test_a_list_of_kernels_fits_and_predicts_as_the_stack() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 0.5, 1, 0)
    train, test = X[:40], X[40:]
    gammas = (0.1, 1.0, 5.0)
    listed = MKLClassifier(kernels="precomputed").fit([rbf_kernel(train, gamma=g) for g in gammas], y[:40])
    stacked = MKLClassifier(kernels="precomputed").fit(
        np.stack([rbf_kernel(train, gamma=g) for g in gammas], axis=2), y[:40])
    np.testing.assert_allclose(listed.result_.coef, stacked.result_.coef, rtol=1e-12, atol=1e-14)
    test_list = [rbf_kernel(test, train, gamma=g) for g in gammas]
    np.testing.assert_allclose(listed.decision_function(test_list),
                               stacked.decision_function(np.stack(test_list, axis=2)), rtol=1e-12)
    assert listed.predict(tuple(test_list)).tolist() == stacked.predict(np.stack(test_list, axis=2)).tolist()


def test_a_list_of_kernels_of_mixed_shapes_is_refused() -> None:
    rng = np.random.default_rng(1)
    y = np.arange(10) % 2
    with pytest.raises(ValidationError, match="matrices of one shape"):
        MKLClassifier(kernels="precomputed").fit([np.eye(10), np.eye(9)], y)
    model = MKLClassifier(kernels="precomputed").fit([np.eye(10) + 0.1 * (k + 1) for k in range(2)], y)
    with pytest.raises(ValueError, match=r"needs X of shape \(n_test, 10, 2\)"):
        model.predict([rng.normal(size=(3, 10))])
