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
            "assert kernelfuse.MKLClassifier.__name__ == 'MKLClassifier'; assert 'sklearn' in sys.modules; "
            "assert kernelfuse.metrics.centered_alignment.__module__ == 'kernelfuse.frontends.metrics'")
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
    # log(P) of a P near 1 is off by P's own rounding, about eps absolute (an AVX2 log and an
    # AVX-512 one differ there in the 12th digit of log P ~ -5e-5): rtol alone is not guaranteed.
    np.testing.assert_allclose(clf.predict_log_proba(X[binary]), np.log(P), rtol=1e-12,
                               atol=4 * np.finfo(float).eps)
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


def _solvers_for(estimator: type) -> list[tuple[str, str]]:
    """Every registered solver with the family the estimator resolves for it, where one fits."""
    from kernelfuse.errors import IncompatiblePartsError

    pairs = []
    for name in kernelfuse.get_registry().names("recipe"):
        try:
            pairs.append((name, estimator(solver=name).family_name()))
        except IncompatiblePartsError:
            continue
    return pairs


@pytest.fixture(scope="module")
def blobs():
    from sklearn.datasets import make_blobs

    return make_blobs(n_samples=60, centers=[[-2, 0], [2, 0]], cluster_std=1.0, random_state=0)


@pytest.mark.parametrize(("solver", "family"), _solvers_for(kernelfuse.MKLClassifier))
def test_every_solver_fits_a_classifier_with_its_defaults(solver, family, blobs):
    X, y = blobs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        clf = kernelfuse.MKLClassifier(solver=solver, kernels=_small_grid(2), random_state=0).fit(X, y)
    assert (clf.result_.solver, clf.result_.family) == (solver, family)
    assert np.isfinite(clf.result_.objective) and clf.score(X, y) >= 0.5


def test_the_family_follows_from_the_solver_and_regressors_take_the_regression_solvers():
    expected = {"spicymkl": "l1_mkl", "cvxpy": "l1_mkl", "simplemkl": "l1_mkl_sq", "average": "l1_mkl_sq",
                "mirror-vskl": "l1_mkl_sq", "obscure": "pnorm_mkl", "mikl": "mikl", "mlmkl-sum": "mlmkl_sum",
                "mlmkl-sa": "mlmkl_max"}
    assert {name: family for name, family in _solvers_for(kernelfuse.MKLClassifier) if name in expected} == expected
    assert {name for name, _ in _solvers_for(kernelfuse.MKLRegressor)} == {"spicymkl", "cvxpy"}
    assert kernelfuse.MKLClassifier(solver="simplemkl", family="vskl").family_name() == "vskl"
    with pytest.raises(kernelfuse.IncompatiblePartsError, match="solver 'simplemkl' solves .* none of which a MKLRegr"):
        kernelfuse.MKLRegressor(solver="simplemkl").fit(np.eye(3), [0.0, 1.0, 2.0])


def test_only_the_settings_a_solver_takes_are_passed(blobs):
    X, y = blobs
    with pytest.raises(kernelfuse.ValidationError, match="solver 'average' does not take time_limit"):
        kernelfuse.MKLClassifier(solver="average", time_limit=1.0, kernels=_small_grid(2)).fit(X, y)
    clf = kernelfuse.MKLClassifier(kernels=_small_grid(2))
    assert clf._run_settings() == {"tol": 1e-3}


@pytest.mark.parametrize(("solver", "family"), [pair for pair in _solvers_for(kernelfuse.MultiLabelMKLClassifier)
                                                if pair[1].startswith("mlmkl")])
def test_every_multilabel_solver_fits_with_its_defaults(solver, family):
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=50, n_features=3, n_classes=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        clf = kernelfuse.MultiLabelMKLClassifier(solver=solver, kernels=_small_grid(3), standardize=True,
                                                 random_state=0).fit(X, Y)
    assert clf.result_.family == family and clf.predict(X).shape == Y.shape


def test_precomputed_stacks_are_normalised_as_asked(tmp_path):
    """unit-trace divides each precomputed kernel by its training trace (the same model as the
    stack divided by hand), at predict time too; none keeps it; spherical is refused."""
    from kernelfuse.frontends.persistence import load_model
    from kernelfuse.kernels.functions import compute_kernels

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    K = np.moveaxis(compute_kernels(_small_grid(3), X), 0, 2) * 7.0  # (n, n, M), traces 7 n
    by_hand = K / np.einsum("iim->m", K)
    unit = kernelfuse.MKLClassifier(kernels="precomputed", C=0.1).fit(K, y)
    hand = kernelfuse.MKLClassifier(kernels="precomputed", C=0.1, normalization="none").fit(by_hand, y)
    raw = kernelfuse.MKLClassifier(kernels="precomputed", C=0.1, normalization="none").fit(K, y)
    assert unit.result_.objective == pytest.approx(hand.result_.objective, rel=1e-9)
    assert raw.result_.objective != pytest.approx(unit.result_.objective, rel=1e-3)
    np.testing.assert_allclose(unit.decision_function(K[:10]), hand.decision_function(by_hand[:10]), rtol=1e-7)
    unit.save(tmp_path / "unit.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "unit.npz").decision_function(K[:10]),
                                  unit.decision_function(K[:10]))
    with pytest.raises(kernelfuse.ValidationError, match="'spherical' needs each test point's k"):
        kernelfuse.MKLClassifier(kernels="precomputed", normalization="spherical").fit(K, y)
