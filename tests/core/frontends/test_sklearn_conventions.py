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


def _small_grid(d: int) -> list:
    from kernelfuse.frontends.kernel_grid import kernel_grid

    return kernel_grid(d, widths=(1.0, 5.0), degrees=(1,))


@pytest.fixture(scope="module")
def wine():
    from sklearn.datasets import load_wine

    return load_wine(return_X_y=True)


def test_probabilities_of_the_logistic_loss_are_its_log_odds_model(wine):
    X, y = wine
    binary = y < 2
    clf = kernelfuse.MKLClassifier(kernels=_small_grid(13), standardize=True).fit(X[binary], y[binary])
    f = clf.decision_function(X[binary])
    P = clf.predict_proba(X[binary])
    np.testing.assert_allclose(P[:, 1], 1.0 / (1.0 + np.exp(-f)), rtol=1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(clf.predict_log_proba(X[binary]), np.log(P), rtol=1e-12)
    # Three classes one-vs-rest: sigmoid(f_k) normalised over the classes.
    clf = kernelfuse.MKLClassifier(kernels=_small_grid(13), standardize=True).fit(X, y)
    F, P = clf.decision_function(X), clf.predict_proba(X)
    sig = 1.0 / (1.0 + np.exp(-F))
    np.testing.assert_allclose(P, sig / sig.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X))


def test_roc_auc_ovr_in_a_grid_search_on_wine_is_finite(wine):
    from sklearn.model_selection import GridSearchCV

    X, y = wine
    search = GridSearchCV(kernelfuse.MKLClassifier(kernels=_small_grid(13), standardize=True),
                          {"C": [0.1, 1.0]}, scoring="roc_auc_ovr", cv=3).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and scores.min() > 0.9


@pytest.mark.parametrize("params", [dict(loss="hinge"), dict(family="pnorm_mkl", loss="crammer-singer"),
                                    dict(family="mlmkl_sum")])
def test_losses_without_a_probability_model_have_no_predict_proba(params):
    clf = kernelfuse.MKLClassifier(**params)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    with pytest.raises(AttributeError) as error:
        clf.predict_proba  # noqa: B018
    assert "has no probability model" in str(error.value.__cause__)


def test_multilabel_probabilities_are_independent_per_label():
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=80, n_features=4, n_classes=3, random_state=0)
    clf = kernelfuse.MultiLabelMKLClassifier(kernels=_small_grid(4), standardize=True).fit(X, Y)
    np.testing.assert_allclose(clf.predict_proba(X), 1.0 / (1.0 + np.exp(-clf.decision_function(X))), rtol=1e-12)
