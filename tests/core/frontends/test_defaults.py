"""The estimators' defaults: C or lam at the kernels' scale, the kernel grid sized to the data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split

from kernelfuse.frontends.estimators import MKLClassifier, scaled_default
from kernelfuse.frontends.kernel_grid import kernel_grid


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
