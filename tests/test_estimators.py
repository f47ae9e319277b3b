"""The scikit-learn estimator: check_estimator, pipelines, cross-validation with precomputed stacks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_blobs
from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import kernelfuse
from kernelfuse.estimators import MKLClassifier
from kernelfuse.kernel import KernelSpec, compute_kernels
from kernelfuse.kernel_grid import kernel_grid
from kernelfuse.kernel_normalization import KernelNormalizer


def test_passes_check_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(MKLClassifier())


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = rng.permutation(y.size)[:160]
    return train_test_split(X[rows], y[rows], test_size=0.25, random_state=0, stratify=y[rows])


SMALL_GRID = dict(widths=(1.0, 5.0), degrees=(1,))


def test_pipeline_fit_predict_and_the_solver_result(cancer):
    X_train, X_test, y_train, y_test = cancer
    specs = kernel_grid(X_train.shape[1], **SMALL_GRID)
    model = make_pipeline(StandardScaler(), MKLClassifier(kernels=specs, C=100.0))
    model.fit(X_train, y_train)
    clf = model[-1]
    assert model.score(X_test, y_test) >= 0.9
    assert clf.result_.converged and clf.result_.gap <= 1e-3
    assert clf.coef_.shape == (len(specs), X_train.shape[0])
    assert clf.kernel_weights_.sum() == pytest.approx(1.0)
    # The estimator's decision values are the solver's model on the test kernels.
    Xs_train, Xs_test = model[0].transform(X_train), model[0].transform(X_test)
    normalizer = KernelNormalizer().fit(specs, Xs_train)
    K_test = normalizer.transform(compute_kernels(specs, Xs_train, Xs_test), specs, Xs_test)
    np.testing.assert_allclose(model.decision_function(X_test), clf.result_.decision_function(K_test))
    np.testing.assert_array_equal(np.unique(model.predict(X_test)), [0, 1])


def test_precomputed_stacks_survive_cross_validation(cancer):
    X_train, _, y_train, _ = cancer
    Xs = StandardScaler().fit_transform(X_train)
    specs = kernel_grid(Xs.shape[1], **SMALL_GRID)
    K = KernelNormalizer().fit(specs, Xs).transform(compute_kernels(specs, Xs))
    stack = np.moveaxis(K, 0, 2)  # (n, n, M): what scikit-learn slices pairwise
    scores = cross_val_score(MKLClassifier(kernels="precomputed", C=100.0), stack, y_train, cv=3)
    assert scores.shape == (3,) and scores.mean() >= 0.85
    search = GridSearchCV(MKLClassifier(kernels="precomputed"), {"C": [10.0, 1000.0]}, cv=3)
    search.fit(stack, y_train)
    assert search.best_params_["C"] in (10.0, 1000.0) and search.best_score_ >= 0.85
    with pytest.raises(ValueError, match=r"shape \(n_test, "):
        search.best_estimator_.predict(stack[:5, :10])


def test_multiclass_one_vs_rest_and_vskl_groups():
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=2.0, random_state=1)
    labels = np.array(["a", "b", "c"])[y]
    model = MKLClassifier(kernels=kernel_grid(2, widths=(0.5, 2.0), degrees=(1,)),
                          family="vskl", q=2.0, C=100.0).fit(X, labels)
    assert len(model.results_) == 3 and all(r.family == "vskl" for r in model.results_)
    assert model.decision_function(X).shape == (90, 3)
    assert model.score(X, labels) >= 0.85
    assert set(model.predict(X)) <= {"a", "b", "c"}


def test_bad_parameters_are_reported():
    X, y = make_blobs(n_samples=30, centers=2, random_state=0)
    with pytest.raises(kernelfuse.UnknownNameError, match="did you mean"):
        MKLClassifier(solver="mirror-vskll").fit(X, y)
    with pytest.raises(kernelfuse.ValidationError, match="kernels must be"):
        MKLClassifier(kernels="gird").fit(X, y)
    with pytest.raises(kernelfuse.UnknownNameError, match="parameter"):
        MKLClassifier(family="l1_mkl_sq", q=2.0).fit(X, y)
    with pytest.raises(ValueError, match="shape \\(n, n, M\\)"):
        MKLClassifier(kernels="precomputed").fit(X, y)
    assert isinstance(MKLClassifier(kernels=[KernelSpec(kernelfuse.get_registry().create(
        "kernel", "linear"))]).fit(X, y).score(X, y), float)


def test_standardize_is_a_standard_scaler_inside(cancer):
    X_train, X_test, y_train, _ = cancer
    specs = kernel_grid(X_train.shape[1], **SMALL_GRID)
    inside = MKLClassifier(kernels=specs, standardize=True).fit(X_train, y_train)
    outside = make_pipeline(StandardScaler(), MKLClassifier(kernels=specs)).fit(X_train, y_train)
    np.testing.assert_allclose(inside.decision_function(X_test), outside.decision_function(X_test),
                               rtol=1e-9, atol=1e-9)
    with pytest.raises(kernelfuse.ValidationError, match="no features to scale"):
        MKLClassifier(kernels="precomputed", standardize=True).fit(np.ones((4, 4, 1)), [0, 1, 0, 1])
