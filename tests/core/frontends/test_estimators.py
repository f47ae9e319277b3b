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
from helpers import WEIGHTS_ARE_NOT_REPEATS
from kernelfuse.frontends.estimators import MKLClassifier, MKLRegressor, MultiLabelMKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.kernels.functions import KernelSpec, compute_kernels
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.testing import assert_within_certified


@pytest.mark.parametrize("estimator", [MKLClassifier, MKLRegressor, MultiLabelMKLClassifier])
def test_passes_check_estimator(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(estimator(), expected_failed_checks=WEIGHTS_ARE_NOT_REPEATS)


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
    # C for this small grid (0.875 at the default 0.1, which is measured on the default grid)
    model = make_pipeline(StandardScaler(), MKLClassifier(kernels=specs, C=0.3))
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
    scores = cross_val_score(MKLClassifier(kernels="precomputed"), stack, y_train, cv=3)
    assert scores.shape == (3,) and scores.mean() >= 0.85
    search = GridSearchCV(MKLClassifier(kernels="precomputed"), {"C": [0.1, 3.0]}, cv=3)
    search.fit(stack, y_train)
    assert search.best_params_["C"] in (0.1, 3.0) and search.best_score_ >= 0.85
    with pytest.raises(ValueError, match=r"shape \(n_test, "):
        search.best_estimator_.predict(stack[:5, :10])


def test_multiclass_one_vs_rest_and_vskl_groups():
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=2.0, random_state=1)
    labels = np.array(["a", "b", "c"])[y]
    model = MKLClassifier(kernels=kernel_grid(2, widths=(0.5, 2.0), degrees=(1,)),
                          solver="mirror-vskl", family="vskl", q=2.0, C=100.0).fit(X, labels)
    assert len(model.results_) == 3 and all(r.family == "vskl" for r in model.results_)
    assert model.decision_function(X).shape == (90, 3)
    assert model.score(X, labels) >= 0.85
    assert set(model.predict(X)) <= {"a", "b", "c"}


def test_bad_parameters_are_reported():
    X, y = make_blobs(n_samples=30, centers=2, random_state=0)
    with pytest.raises(kernelfuse.UnknownNameError, match="did you mean"):
        MKLClassifier(solver="spicymkll").fit(X, y)
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


def test_regression_matches_the_solver_and_cvxpy():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X[:150], y[:150] / 100, random_state=0)
    specs = kernel_grid(X.shape[1], widths=(1.0, 5.0), degrees=(1,))
    for loss, params in (("squared", {}), ("eps-insensitive", {"eps": 0.1})):
        model = MKLRegressor(kernels=specs, standardize=True, loss=loss, C=0.3, C2=0.0, tol=1e-8,
                             **params).fit(X_train, y_train)
        assert model.score(X_test, y_test) > 0.3  # R^2 (diabetes is noisy)
        # The fitted model is the l1_mkl optimum of the standardised targets (eps in the
        # targets' units): cvxpy on the same kernels agrees.
        Xs = (X_train - model.feature_mean_) / model.feature_scale_
        K = model.normalizer_.transform(compute_kernels(specs, Xs))
        shift, scale = y_train.mean(), y_train.std()
        assert (model.target_shift_, model.target_scale_) == pytest.approx((shift, scale))
        reference = kernelfuse.solve(K, (y_train - shift) / scale, solver="cvxpy", family="l1_mkl",
                                     loss=loss, C=0.3, check_psd=False,
                                     **{name: value / scale for name, value in params.items()})
        assert_within_certified(model.result_, reference, 1e-6)
        np.testing.assert_allclose(model.predict(X_train), reference.decision_function(K) * scale + shift,
                                   atol=1e-3 * scale)
        np.testing.assert_allclose(np.einsum("mij,mj->i", K, model.coef_) + model.intercept_[0],
                                   model.predict(X_train), atol=1e-9 * scale)
    with pytest.raises(ValueError, match="1d array"):
        MKLRegressor(kernels=specs).fit(X_train, np.column_stack([y_train, y_train]))


def test_multilabel_per_label_or_one_shared_combination():
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=120, n_features=4, n_classes=3, random_state=1)
    specs = kernel_grid(4, widths=(1.0, 5.0), degrees=(1,))
    per_label = MultiLabelMKLClassifier(kernels=specs, standardize=True).fit(X[:90], Y[:90])
    assert len(per_label.results_) == 3 and per_label.decision_function(X[90:]).shape == (30, 3)
    prediction = per_label.predict(X[90:])
    assert prediction.shape == (30, 3) and prediction.dtype == Y.dtype
    assert np.mean(prediction == Y[90:]) >= 0.7  # label-wise accuracy
    # A multi-label family: one problem, one kernel combination for every label.
    shared = MultiLabelMKLClassifier(kernels=specs, standardize=True, solver="cvxpy",
                                     family="mlmkl_sum", C=1.0, tol=None).fit(X[:40], Y[:40])
    assert len(shared.results_) == 1 and shared.coef_.shape == (len(specs), 3, 40)
    assert shared.kernel_weights_.sum() == pytest.approx(1.0)
    scores = shared.decision_function(X[90:])
    assert scores.shape == (30, 3)
    np.testing.assert_array_equal(shared.predict(X[90:]), (scores > 0).astype(Y.dtype))
    with pytest.raises(ValueError, match="indicator matrix"):
        MultiLabelMKLClassifier(kernels=specs).fit(X[:40], np.column_stack([Y[:40, 0] * 3, Y[:40, 1]]))


def test_a_sparse_indicator_matrix_fits_the_model_of_the_dense_one():
    from scipy import sparse
    from sklearn.datasets import make_multilabel_classification
    from sklearn.preprocessing import MultiLabelBinarizer

    X, Y = make_multilabel_classification(n_samples=90, n_features=4, n_classes=3, random_state=1)
    Y_sparse = MultiLabelBinarizer(classes=range(3), sparse_output=True).fit_transform(
        [np.flatnonzero(row) for row in Y])
    assert sparse.issparse(Y_sparse) and np.array_equal(Y_sparse.toarray(), Y)
    specs = kernel_grid(4, widths=(1.0, 5.0), degrees=(1,))
    for params in ({}, {"solver": "mlmkl-sum", "family": "mlmkl_sum", "C": 1.0}):
        dense = MultiLabelMKLClassifier(kernels=specs, **params).fit(X[:60], Y[:60])
        for given in (Y_sparse[:60], sparse.csr_array(Y_sparse[:60]), sparse.coo_matrix(Y_sparse[:60])):
            model = MultiLabelMKLClassifier(kernels=specs, **params).fit(X[:60], given)
            scores = model.decision_function(X[60:])
            np.testing.assert_allclose(scores, dense.decision_function(X[60:]), rtol=1e-7, atol=1e-9)
            clear = np.abs(scores) > 1e-6  # a label whose score is not on the threshold
            np.testing.assert_array_equal(model.predict(X[60:])[clear], dense.predict(X[60:])[clear])
            assert model.predict(X[60:]).dtype == Y.dtype
            assert model.score(X[60:], Y_sparse[60:]) == pytest.approx(dense.score(X[60:], Y[60:]), abs=0.05)


def test_kernel_specs_read_dataframe_columns_by_name():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 4))
    y = np.where(X[:, 1] - X[:, 3] + 0.3 * rng.normal(size=60) > 0, 1, 0)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    by_name = MKLClassifier(kernels=[KernelSpec("gaussian", ["b", "d"], width=1.0),
                                     KernelSpec("linear", ["a"])]).fit(frame, y)
    by_index = MKLClassifier(kernels=[KernelSpec("gaussian", [1, 3], width=1.0),
                                      KernelSpec("linear", [0])]).fit(X, y)
    assert [spec.features for spec in by_name.kernels_] == [(1, 3), (0,)]
    np.testing.assert_allclose(by_name.coef_, by_index.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(by_name.decision_function(frame), by_index.decision_function(X),
                               rtol=1e-7, atol=1e-9)
    with pytest.raises(kernelfuse.ValidationError, match=r"features of kernel 0 \(gaussian\): no column "
                                                         r"named 'bb'; did you mean 'b'\? X's columns are"):
        MKLClassifier(kernels=[KernelSpec("gaussian", ["bb"])]).fit(frame, y)
    with pytest.raises(kernelfuse.ValidationError, match="no column named 'b'; X has no column names "
                                                         r"\(fit on a pandas DataFrame .* or give column indices"):
        MKLClassifier(kernels=[KernelSpec("gaussian", ["b"])]).fit(X, y)
    with pytest.raises(kernelfuse.ValidationError, match=r"features of kernel 1 \(linear\): column 4 is out of "
                                                         "range for X of 4 columns"):
        MKLClassifier(kernels=[KernelSpec("linear", [0]), KernelSpec("linear", [4])]).fit(X, y)


def test_a_built_solver_object_is_accepted():
    X, y = make_blobs(n_samples=40, centers=2, random_state=3)
    solver = kernelfuse.get_registry().get("recipe", "spicymkl").factory.build(
        tol=1e-8, **{"optimizer.gamma0": 30.0})
    by_object = MKLClassifier(kernels=kernel_grid(2, widths=(1.0,), degrees=(1,)), solver=solver,
                              tol=None).fit(X, y)
    assert by_object.result_.solver == "spicymkl" and by_object.result_.gap <= 1e-8
    with pytest.raises(kernelfuse.ValidationError, match="registered name, a {role: part name} mapping or a Solver"):
        MKLClassifier(solver=3.0).fit(X, y)


def test_multiclass_natively_in_one_problem():
    """A multiclass family (Crammer-Singer) or a multi-label one fits every class in one problem."""
    X, y = make_blobs(n_samples=45, centers=3, cluster_std=1.5, random_state=1)
    labels = np.array(["a", "b", "c"])[y]
    specs = kernel_grid(2, widths=(1.0,), degrees=(1,))
    for family, params in (("pnorm_mkl", {"lam": 0.1}), ("mlmkl_sum", {"C": 1.0})):
        model = MKLClassifier(kernels=specs, solver="cvxpy", family=family, tol=None, standardize=True,
                              **params).fit(X, labels)
        assert len(model.results_) == 1 and model.coef_.shape == (len(specs), 3, 45)
        assert model.decision_function(X).shape == (45, 3)
        assert model.score(X, labels) >= 0.9
    assert model.results_[0].family == "mlmkl_sum"


def test_obscure_fits_multiclass_natively_and_random_state_reproduces_it():
    X, y = make_blobs(n_samples=120, centers=4, cluster_std=2.0, random_state=2)
    specs = kernel_grid(2, widths=(0.5, 2.0), degrees=(1,))
    fits = [MKLClassifier(kernels=specs, standardize=True, solver="obscure", family="pnorm_mkl",
                          lam=1e-3, max_iter=20, random_state=seed).fit(X[:90], y[:90])
            for seed in (3, 3, 4)]
    model = fits[0]
    assert len(model.results_) == 1 and model.coef_.shape == (len(specs), 4, 90)  # Crammer-Singer
    assert model.results_[0].solver == "obscure" and model.score(X[90:], y[90:]) >= 0.8
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert not np.array_equal(fits[0].coef_, fits[2].coef_)


def test_check_psd_skips_kernels_known_psd_and_certifies_the_others(monkeypatch):
    from kernelfuse import validation
    from kernelfuse.plugins.kernels import Gaussian, Polynomial, Sigmoid

    calls = {"sample": 0, "exact": 0}

    def sample(submatrices, traces, tol):  # the kernels certified, none flagged
        calls["sample"] += len(traces)
        return np.zeros(len(traces), bool)

    def exact(*args):
        calls["exact"] += 1

    monkeypatch.setattr(validation, "samples_fail", sample)
    monkeypatch.setattr(validation, "_check_psd", exact)
    X, y = make_blobs(n_samples=40, centers=2, random_state=0)
    known = [KernelSpec(Gaussian(width=2.0)), KernelSpec(Polynomial(degree=2))]
    MKLClassifier(kernels=known).fit(X, y)
    assert calls == {"sample": 0, "exact": 0}  # computed from functions declaring psd: not checked
    MKLClassifier(kernels=[*known, KernelSpec(Sigmoid(scale=0.01))]).fit(X, y)
    assert calls == {"sample": 3, "exact": 0}  # a sigmoid among them: the certificate, every kernel
    MKLClassifier(kernels=known, check_psd=True).fit(X, y)
    assert calls == {"sample": 3, "exact": 1}
    stack = np.moveaxis(compute_kernels(known, X), 0, 2)
    MKLClassifier(kernels="precomputed").fit(stack, y)
    assert calls == {"sample": 5, "exact": 1}  # given a stack: the certificate
    MKLClassifier(kernels="precomputed", check_psd=False).fit(stack, y)
    assert calls == {"sample": 5, "exact": 1}


def test_check_psd_refusals_name_the_parameter():
    X, y = make_blobs(n_samples=30, centers=2, random_state=0)
    with pytest.raises(kernelfuse.ValidationError, match="check_psd must be 'auto'.*got 'no'"):
        MKLClassifier(check_psd="no").fit(X, y)
    with pytest.raises(kernelfuse.ValidationError, match="check_psd is an estimator parameter"):
        MKLClassifier(solver_params={"check_psd": False}).fit(X, y)
    stack = np.moveaxis(compute_kernels([KernelSpec(kernelfuse.get_registry().create("kernel", "linear"))], X), 0, 2)
    stack[..., 0] -= 3.0 * np.eye(30) * stack.max()
    with pytest.raises(kernelfuse.ValidationError, match="kernel 0 of K is not positive semidefinite"):
        MKLRegressor(kernels="precomputed", normalization="none").fit(stack, y.astype(float))
    with pytest.raises(kernelfuse.ValidationError, match="kernel 0 has k.x, x. <= 0 .*use normalisation 'none'"):
        MKLRegressor(kernels="precomputed").fit(stack, y.astype(float))  # unit-trace refuses it first
