"""The estimators on dask collections with a connected client: a distributed fit, lazy predictions."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.model_selection import train_test_split

from helpers import local_dask_cluster
from kernelfuse.errors import ValidationError
from kernelfuse.frontends.estimators import MKLClassifier, MKLRegressor
from kernelfuse.frontends.persistence import load_model

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client():
    with local_dask_cluster() as cluster, distributed.Client(cluster) as connected:
        yield connected


def split(X, y, seed=0):
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y if y.dtype.kind in "iub" else None)


def test_a_binary_fit_on_dask_arrays_is_certified_and_predicts_lazily(client):
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = split(X, y)
    model = MKLClassifier().fit(da.from_array(X_train, chunks=100), da.from_array(y_train, chunks=100))
    (fitted,) = model.feature_models_
    assert fitted.status == "converged" and fitted.gap <= model.tol
    assert fitted.dual_objective <= fitted.objective
    lazy = model.decision_function(da.from_array(X_test, chunks=60))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), model.decision_function(X_test), rtol=1e-12, atol=1e-12)
    labels = model.predict(da.from_array(X_test, chunks=60))
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(labels.compute(), model.predict(X_test))
    in_process = MKLClassifier().fit(X_train, y_train).score(X_test, y_test)
    assert model.score(X_test, y_test) >= in_process - 0.03  # rank-100 Nystrom kernels of the same grid
    assert model.kernel_weights_.sum() == pytest.approx(1.0)


def test_one_vs_rest_classes_share_the_features(client):
    X, y = load_wine(return_X_y=True)
    labels = np.array(["a", "b", "c"])[y]
    X_train, X_test, y_train, y_test = split(X, labels, seed=1)
    model = MKLClassifier(solver_params={"rank": 40}).fit(da.from_array(X_train, chunks=50),
                                                          da.from_array(y_train, chunks=50))
    assert list(model.classes_) == ["a", "b", "c"] and len(model.feature_models_) == 3
    assert all(m.status == "converged" for m in model.feature_models_)
    assert all(m.weights.size == model.feature_models_[0].weights.size for m in model.feature_models_)
    scores = model.decision_function(X_test)
    assert scores.shape == (len(y_test), 3)
    assert np.mean(model.predict(X_test) == y_test) >= 0.85
    np.testing.assert_allclose(model.predict_proba(X_test).sum(axis=1), 1.0)


def test_a_regression_on_dask_arrays_in_the_targets_units(client):
    X, y = load_diabetes(return_X_y=True)
    y = 1000.0 * y + 50.0  # raw units: the fit standardises the targets
    X_train, X_test, y_train, y_test = split(X, y, seed=2)
    model = MKLRegressor(solver_params={"rank": 50}).fit(da.from_array(X_train, chunks=80),
                                                         da.from_array(y_train, chunks=80))
    assert model.feature_models_[0].status == "converged"
    assert model.target_shift_ == pytest.approx(y_train.mean())
    lazy = model.predict(da.from_array(X_test, chunks=40)).compute()
    np.testing.assert_allclose(lazy, model.predict(X_test), rtol=1e-12)
    in_process = MKLRegressor().fit(X_train, y_train).score(X_test, y_test)
    assert model.score(X_test, y_test) >= in_process - 0.05


def test_a_dask_dataframe_with_views_by_column_name(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=4)
    names = list(X.columns)
    model = MKLClassifier(views={"means": names[:10], "rest": names[10:]}, solver_params={"rank": 30})
    model.fit(frame, dd.from_pandas(y, npartitions=4))
    assert list(model.feature_names_in_) == names
    assert {spec.group for spec in model.kernels_} == {0, 1}
    assert model.feature_models_[0].status == "converged"
    assert np.mean(model.predict(X.to_numpy()) == y.to_numpy()) >= 0.9


def test_pnorm_mkl_on_dask_arrays_is_certified_and_predicts_as_in_one_process(client):
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = split(X, y, seed=3)
    model = MKLClassifier(family="pnorm_mkl", p=1.3).fit(da.from_array(X_train, chunks=100),
                                                         da.from_array(y_train, chunks=100))
    (fitted,) = model.feature_models_
    assert (fitted.family, fitted.loss, fitted.status) == ("pnorm_mkl", "hinge", "converged")
    assert fitted.gap <= model.tol and fitted.dual_objective <= fitted.objective
    assert fitted.kernel_norms.min() > 0  # p > 1: every kernel kept
    # lam = 1 / N at unit diagonal is 1 / N^2 on unit-trace kernels, as in one process:
    lam, signs = 1.0 / len(y_train) ** 2, np.where(y_train == model.classes_[1], 1.0, -1.0)
    hinge = np.maximum(0.0, 1.0 - signs * model.decision_function(X_train)).mean()
    assert fitted.objective == pytest.approx(lam / 2 * np.sum(fitted.kernel_norms**1.3) ** (2 / 1.3) + hinge,
                                             rel=1e-9)
    in_process = MKLClassifier(family="pnorm_mkl", solver="obscure", p=1.3).fit(X_train, y_train)
    assert model.score(X_test, y_test) >= in_process.score(X_test, y_test) - 0.03


def test_what_the_cluster_path_does_not_take_is_named(client):
    X, y = load_breast_cancer(return_X_y=True)
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    with pytest.raises(ValidationError, match="sample_weight"):
        MKLClassifier().fit(Xd, yd, sample_weight=np.ones(len(y)))
    with pytest.raises(ValidationError, match="family='vskl'"):
        MKLClassifier(family="vskl").fit(Xd, yd)
    with pytest.raises(ValidationError, match="loss='logistic': pnorm_mkl"):
        MKLClassifier(family="pnorm_mkl", loss="logistic").fit(Xd, yd)
    wine_X, wine_y = load_wine(return_X_y=True)
    with pytest.raises(ValidationError, match="binary problems .* 3 classes"):
        MKLClassifier(family="pnorm_mkl").fit(da.from_array(wine_X, chunks=60), da.from_array(wine_y, chunks=60))
    with pytest.raises(ValidationError, match="classification family"):
        MKLRegressor(family="pnorm_mkl").fit(Xd, da.from_array(X[:, 0], chunks=100))
    with pytest.raises(ValidationError, match="solver='obscure'"):
        MKLClassifier(solver="obscure").fit(Xd, yd)
    with pytest.raises(ValidationError, match="solver_params: 'svm_solver'"):
        MKLClassifier(solver_params={"svm_solver": "libsvm"}).fit(Xd, yd)
    with pytest.raises(ValidationError, match="precomputed"):
        MKLClassifier(kernels="precomputed").fit(Xd, yd)
    model = MKLClassifier(solver_params={"rank": 10}).fit(Xd, yd)
    model.set_params(solver_params=None).fit(X[:200], y[:200])  # a fit here replaces the cluster's models
    assert "feature_models_" not in model.__dict__ and model.predict(X[:5]).shape == (5,)


def _one_vs_rest_model(client):
    X, y = load_wine(return_X_y=True)
    return X, MKLClassifier(solver_params={"rank": 15}).fit(da.from_array(X, chunks=60), da.from_array(y, chunks=60))


def test_a_cluster_fit_saved_and_loaded_predicts_the_same(client, tmp_path):
    X, model = _one_vs_rest_model(client)
    model.save(tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    np.testing.assert_array_equal(loaded.kernel_weights_, model.kernel_weights_)
    for before, after in zip(model.feature_models_, loaded.feature_models_):
        assert (after.status, after.gap, after.passes, after.loss) == (before.status, before.gap, before.passes,
                                                                        before.loss)
    lazy = loaded.predict(da.from_array(X, chunks=50))  # lazy on a dask array, as the fitted model
    np.testing.assert_array_equal(lazy.compute(), model.predict(X))
    X_r, y_r = load_diabetes(return_X_y=True)
    regressor = MKLRegressor(solver_params={"rank": 15}).fit(da.from_array(X_r, chunks=150),
                                                             da.from_array(500.0 * y_r, chunks=150))
    regressor.save(tmp_path / "regressor.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "regressor.npz").predict(X_r), regressor.predict(X_r))


@pytest.mark.parametrize("change, message", [
    (lambda a: a.__setitem__("feature_model1_weights", np.full_like(a["feature_model1_weights"], np.nan)),
     "feature model 1 weights must be finite"),
    (lambda a: a.__setitem__("feature_offsets", a["feature_offsets"][::-1].copy()), "feature_offsets must be"),
    (lambda a: a["feature_offsets"].__setitem__(1, a["feature_offsets"][1] + 1),
     r"kernel 0 gives \d+ features .* its columns in feature_offsets are"),
    (lambda a: a.__setitem__("feature_scales", -a["feature_scales"]), "feature_scales must be > 0"),
    (lambda a: a.pop("feature_model2_weights"), "feature model 2 weights"),
    (lambda a: a.__setitem__("classes", a["classes"][:2]), "2 classes on a model of 3 decision"),
])
def test_a_damaged_cluster_model_file_is_refused_naming_the_field(client, tmp_path, change, message):
    from kernelfuse.runtime.npz_file import read_npz, write_npz

    X, model = _one_vs_rest_model(client)
    model.save(tmp_path / "model.npz")
    arrays = read_npz(tmp_path / "model.npz", "model", verify=True)
    change(arrays)
    write_npz(tmp_path / "changed.npz", arrays)  # a new digest: the content itself must be refused
    with pytest.raises(ValidationError, match=message):
        load_model(tmp_path / "changed.npz")
