"""The estimators' defaults: C or lam at the kernels' scale, the kernel grid sized to the data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split

from kernelfuse.errors import ValidationError
from kernelfuse.frontends.estimators import MKLClassifier, scaled_default
from kernelfuse.frontends.kernel_grid import (
    POLYNOMIAL_DEGREES,
    RIDGE_WIDTH,
    SIMPLEMKL_WIDTHS,
    default_grid,
    kernel_grid,
    sized_grid,
)
from kernelfuse.runtime.memory import default_memory_budget

#: The bytes of the sizing tests: 512 MiB, the grid's cap before it followed the memory budget.
GRID_BYTES = 512 * 2**20


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


@pytest.mark.parametrize("n_features, n_samples", [(30, 455), (30, 569), (8, 1000), (8, 2000), (4, 150)])
def test_sized_grid_fits_its_bytes(n_features, n_samples):
    """The whole default grid where it fits, else fewer widths (the ends kept) on every feature
    set, else the kernels on all features only; the ridge kernel first; within the bytes given."""
    specs = sized_grid(n_features, n_samples, GRID_BYTES)
    full = default_grid(n_features)
    assert len(full) == 1 + (len(SIMPLEMKL_WIDTHS) + 3) * (n_features + 1)
    assert len(specs) * n_samples**2 * 8 <= GRID_BYTES
    ridge = specs[0]
    assert ridge.features is None and ridge.function.name == "gaussian" and ridge.function.width == RIDGE_WIDTH
    if len(full) * n_samples**2 * 8 <= GRID_BYTES:
        assert [s.label for s in specs] == [s.label for s in full]
        return
    widths = sorted({s.function.width for s in specs[1:] if s.function.name == "gaussian"})
    degrees = sorted({s.function.degree for s in specs if s.function.name == "polynomial"})
    assert degrees == list(POLYNOMIAL_DEGREES) and set(widths) <= set(SIMPLEMKL_WIDTHS)
    feature_sets = {s.features for s in specs}
    if len(feature_sets) > 1:  # every feature set, the widths thinned
        assert len(feature_sets) == n_features + 1 and widths[0] == 0.5 and widths[-1] == 20.0
        assert (1 + (len(widths) + 4) * (n_features + 1)) * n_samples**2 * 8 > GRID_BYTES  # the most that fit
    else:
        assert feature_sets == {None}


def test_default_grid_follows_the_memory_budget():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:100, :4], y[:100]
    budget = 41 * 100**2 * 8  # 41 kernels' stack: the ridge kernel, 5 feature sets of 5 widths + 3 degrees
    clf = MKLClassifier(memory_budget=budget, standardize=True).fit(X, y)
    assert len(clf.kernels_) == 41 == len(sized_grid(4, 100, budget))
    assert {s.features for s in clf.kernels_} == {None, (0,), (1,), (2,), (3,)}
    assert len(MKLClassifier(standardize=True).fit(X, y).kernels_) == 1 + 13 * 5  # the whole grid fits


def test_default_grid_takes_the_whole_memory_budget():
    """No cap below the budget: at N = 2,250 and 8 features a budget of 2 GiB keeps more of the
    grid than 512 MiB did (the grid is listed, not built)."""
    X = np.zeros((2250, 8))
    big = MKLClassifier(memory_budget=2 * 2**30)._kernel_specs(X)
    assert [s.label for s in big] == [s.label for s in sized_grid(8, 2250, 2 * 2**30)]
    assert len(big) * 2250**2 * 8 <= 2 * 2**30 and len(big) > len(sized_grid(8, 2250, GRID_BYTES))
    default = MKLClassifier()._kernel_specs(X)
    assert len(default) == len(sized_grid(8, 2250, default_memory_budget()))


def test_default_grid_refuses_a_bad_kernel_dtype_by_name():
    X, y = load_breast_cancer(return_X_y=True)
    for bad in ("float16", "bogus", None):
        with pytest.raises(ValidationError, match="kernel_dtype must be one of float64, float32"):
            MKLClassifier(kernel_dtype=bad).fit(X[:40, :3], y[:40])
