"""scikit-learn's conventions: the flat namespace, its warning class, probabilities, every solver."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import sklearn.exceptions

import kernelfuse
from kernelfuse.frontends import estimators


def test_import_kernelfuse_does_not_import_scikit_learn_and_the_estimators_are_flat():
    code = ("import sys, kernelfuse; heavy = [m for m in ('sklearn', 'cvxpy', 'scipy.optimize', 'joblib') "
            "if m in sys.modules]; assert not heavy, heavy; "
            "assert kernelfuse.MKLClassifier.__name__ == 'MKLClassifier'; assert 'sklearn' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    for name in ("MKLClassifier", "MKLRegressor", "MultiLabelMKLClassifier", "ConvergenceWarning"):
        assert name in kernelfuse.__all__ and name in dir(kernelfuse)
    assert kernelfuse.MKLClassifier is estimators.MKLClassifier
    with pytest.raises(AttributeError, match="no attribute 'MKLClassifer'"):
        kernelfuse.MKLClassifer  # noqa: B018


def test_convergence_warning_is_scikit_learns_and_its_filter_silences_it():
    assert issubclass(kernelfuse.ConvergenceWarning, sklearn.exceptions.ConvergenceWarning)
    assert kernelfuse.ConvergenceWarning is kernelfuse.errors.ConvergenceWarning
    K = np.stack([np.eye(6), np.ones((6, 6))])
    y = np.array([1.0, -1, 1, -1, 1, -1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=sklearn.exceptions.ConvergenceWarning)
        result = kernelfuse.solve(K, y, solver="spicymkl", max_iter=1, tol=1e-12)
    assert result.status != "converged"  # it warned, and the filter silenced it
    assert not [w for w in caught if issubclass(w.category, kernelfuse.ConvergenceWarning)]
    with pytest.warns(kernelfuse.ConvergenceWarning):
        kernelfuse.solve(K, y, solver="spicymkl", max_iter=1, tol=1e-12)
