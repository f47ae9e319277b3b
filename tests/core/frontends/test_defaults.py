"""The estimators' defaults: C or lam at the kernels' scale, the median-width kernel grid."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split

from kernelfuse.errors import ValidationError
from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.kernel_grid import VIEW_MEDIAN_WIDTHS, kernel_grid
from kernelfuse.kernels.functions import median_distance
from kernelfuse.problem.families import scaled_default


def test_scaled_default_follows_the_scaling_law():
    """Unit-trace kernels (mean diagonal 1/N) are the unit-diagonal ones divided by N."""
    assert scaled_default("l1_mkl_sq", 200, 1.0 / 200) == {"C": pytest.approx(200.0)}
    assert scaled_default("vskl", 200, 1.0) == {"C": pytest.approx(1.0)}
    assert scaled_default("pnorm_mkl", 200, 1.0 / 200) == {"lam": pytest.approx(1.0 / 200**2)}
    assert scaled_default("l1_mkl", 200, 1.0 / 200) == {}


def _cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X, y


def _digits():
    X, y = load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    return X[keep], y[keep]


@pytest.mark.parametrize("data", [_cancer, _digits], ids=["breast-cancer", "digits-3-vs-8"])
@pytest.mark.parametrize("settings", [dict(solver="average", family="l1_mkl_sq", tol=None),
                                      dict(solver="obscure", max_iter=300)],
                         ids=["l1_mkl_sq", "pnorm_mkl"])
def test_default_parameter_beats_the_majority_class(data, settings):
    """With C (or lam) left at None the families fit, on unit-trace kernels, far better than
    the majority class (C = 1 on those kernels predicted the majority class)."""
    X, y = data()
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=160, random_state=0, stratify=y)
    specs = kernel_grid(X.shape[1], widths=(1.0, 10.0), degrees=(1,))[:12]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MKLClassifier(kernels=specs, standardize=True, **settings).fit(X_train, y_train)
    majority = np.bincount(y_test).max() / y_test.size
    assert clf.score(X_test, y_test) > majority + 0.25


@pytest.mark.parametrize("seed", range(4))
def test_the_default_grid_is_median_widths_and_the_linear_kernel_on_all_features(seed):
    """Whatever the number of rows and features: a Gaussian at each multiple of
    ``VIEW_MEDIAN_WIDTHS`` of the median distance between the standardised training rows, and
    the linear kernel, all on every feature, in one group."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(20, 80)), int(rng.integers(1, 12))
    X = rng.normal(size=(n, d)) * rng.uniform(0.01, 100, size=d)
    y = np.where(X[:, 0] > np.median(X[:, 0]), 1, 0)
    clf = MKLClassifier().fit(X, y)
    assert [s.function.name for s in clf.kernels_] == ["gaussian"] * len(VIEW_MEDIAN_WIDTHS) + ["linear"]
    assert all(s.features is None and s.group == 0 for s in clf.kernels_)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    widths = [s.function.width for s in clf.kernels_[:-1]]
    np.testing.assert_allclose(widths, np.multiply(VIEW_MEDIAN_WIDTHS, median_distance(Z)), rtol=1e-12)


def test_without_standardisation_the_default_widths_follow_the_features_units():
    """The median heuristic is equivariant: features scaled by s give widths scaled by s, so the
    same kernels (the grid does not depend on the units)."""
    X, y = _cancer()
    X, y = X[:120, :5], y[:120]
    base = MKLClassifier(standardize=False).fit(X, y)
    scaled = MKLClassifier(standardize=False).fit(X * 1000.0, y)
    np.testing.assert_allclose([s.function.width for s in scaled.kernels_[:-1]],
                               [1000.0 * s.function.width for s in base.kernels_[:-1]], rtol=1e-12)


def test_default_grid_refuses_a_bad_kernel_dtype_by_name():
    X, y = load_breast_cancer(return_X_y=True)
    for bad in ("float16", "bogus", None):
        with pytest.raises(ValidationError, match="kernel_dtype must be one of float64, float32"):
            MKLClassifier(kernel_dtype=bad).fit(X[:40, :3], y[:40])
