"""Feature views as input, kernel widths relative to the median distance, and defaults that do
not depend on the features' (or targets') units."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

from kernelfuse.errors import ValidationError
from kernelfuse.frontends.estimators import MKLClassifier, MKLRegressor
from kernelfuse.frontends.kernel_grid import VIEW_MEDIAN_WIDTHS, view_grid
from kernelfuse.frontends.persistence import load_model
from kernelfuse.kernels.functions import MEDIAN_ROWS, KernelSpec, compute_kernels, median_distance
from kernelfuse.parts.registry import get_registry

VIEWS = {"mean": list(range(10)), "error": list(range(10, 20)), "worst": list(range(20, 30))}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:150], y[:150], X[150:250], y[150:250]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_median_distance_is_the_median_of_the_pairwise_distances(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(rng.integers(5, 60)), int(rng.integers(1, 6)))) * rng.uniform(0.01, 100)
    assert median_distance(X) == pytest.approx(np.median(pdist(X)), rel=1e-12)
    assert median_distance(X, "cityblock") == pytest.approx(np.median(pdist(X, "cityblock")), rel=1e-12)
    # scale-equivariant: the width follows the features' units
    assert median_distance(X * 7.5) == pytest.approx(7.5 * median_distance(X), rel=1e-12)


def test_median_distance_corners():
    assert median_distance(np.ones((10, 3))) == 1.0  # all rows equal: any width, one constant kernel
    X = np.vstack([np.zeros((8, 2)), [[3.0, 4.0], [6.0, 8.0]]])  # most pairs duplicates: median 0
    assert median_distance(X) == pytest.approx(np.median(pdist(X)[pdist(X) > 0]))
    big = np.random.default_rng(0).normal(size=(3 * MEDIAN_ROWS, 2))
    assert median_distance(big) == median_distance(big)  # a seeded subsample: the data alone decides
    assert median_distance(big) == pytest.approx(np.median(pdist(big)), rel=0.02)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_median_widths_are_fitted_on_the_specs_columns(kernel):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4)) * [1.0, 10.0, 100.0, 1000.0]
    registry = get_registry()
    relative = KernelSpec(registry.create("kernel", kernel, width=2.0, relative_to="median"), features=(1, 2))
    fitted = relative.fitted(X)
    metric = "euclidean" if kernel == "gaussian" else "cityblock"
    assert fitted.function.relative_to is None
    assert fitted.function.width == pytest.approx(2.0 * median_distance(X[:, [1, 2]], metric))
    # the same kernel whatever the units of the view
    np.testing.assert_allclose(compute_kernels([relative.fitted(X * 1e3)], X * 1e3),
                               compute_kernels([fitted], X), rtol=1e-9, atol=1e-12)
    assert registry.create("kernel", kernel, width="median").relative_to == "median"
    with pytest.raises(ValidationError, match="spec.fitted"):
        compute_kernels([relative], X)
    with pytest.raises(ValidationError, match="'median'"):
        registry.create("kernel", kernel, width="mean")
    with pytest.raises(ValidationError, match="relative_to"):
        registry.create("kernel", kernel, width=1.0, relative_to="max")
    with pytest.raises(ValidationError, match="gamma is in feature units"):
        registry.create("kernel", kernel, gamma=1.0, relative_to="median")


def test_views_give_each_view_its_grid_and_report_view_weights(cancer):
    X, y, X_test, y_test = cancer
    clf = MKLClassifier(views=VIEWS).fit(X, y)
    per_view = len(view_grid())
    assert per_view == len(VIEW_MEDIAN_WIDTHS) + 1
    assert len(clf.kernels_) == 3 * per_view
    assert [spec.features for spec in clf.kernels_[::per_view]] == [tuple(c) for c in VIEWS.values()]
    assert [spec.group for spec in clf.kernels_] == [v for v in range(3) for _ in range(per_view)]
    assert clf.view_names_ == list(VIEWS)
    groups = np.array([spec.group for spec in clf.kernels_])
    for v in range(3):
        assert clf.view_weights_[v] == pytest.approx(clf.kernel_weights_[groups == v].sum())
        assert clf.view_norm_shares_[v] == pytest.approx(clf.norm_shares_[groups == v].sum())
    assert clf.view_weights_.sum() == pytest.approx(1.0)
    assert clf.problem_view_weights_.shape == (1, 3)
    assert clf.score(X_test, y_test) > 0.85
    assert clf.result_.gap <= 1e-3


def test_multiclass_views_give_weights_per_class_and_vskl_groups():
    X, y = load_wine(return_X_y=True)
    views = [list(range(0, 5)), list(range(5, 13))]
    clf = MKLClassifier(views=views).fit(X, y)
    assert clf.view_names_ == ["view 0", "view 1"]
    assert clf.problem_view_weights_.shape == (3, 2)
    np.testing.assert_allclose(clf.problem_view_weights_.mean(axis=0), clf.view_weights_)
    np.testing.assert_allclose(clf.problem_view_weights_.sum(axis=1), 1.0)
    grouped = MKLClassifier(views=views, solver="mirror-vskl", family="vskl", q=1.0).fit(X, y)
    assert [r.groups.tolist() if hasattr(r, "groups") and r.groups is not None else None
            for r in grouped.results_][:1] in ([None], [[s.group for s in grouped.kernels_]])
    # vskl at q = 1: the weights lie on one simplex per view, so each view's total is fixed
    np.testing.assert_allclose(grouped.view_weights_, 0.5, atol=1e-9)
    assert grouped.view_norm_shares_.sum() == pytest.approx(1.0)


def test_views_by_dataframe_column_names_and_masks(cancer):
    pd = pytest.importorskip("pandas")
    X, y, X_test, y_test = cancer
    names = [f"c{j}" for j in range(30)]
    frame = pd.DataFrame(X, columns=names)
    by_name = MKLClassifier(views={"first": names[:10], "rest": names[10:]}).fit(frame, y)
    by_index = MKLClassifier(views={"first": list(range(10)), "rest": list(range(10, 30))}).fit(X, y)
    mask = np.arange(30) < 10
    by_mask = MKLClassifier(views={"first": mask, "rest": ~mask}).fit(X, y)
    for other in (by_index, by_mask):
        assert [s.features for s in other.kernels_] == [s.features for s in by_name.kernels_]
        np.testing.assert_allclose(other.view_weights_, by_name.view_weights_, atol=1e-9)
    np.testing.assert_array_equal(by_name.predict(pd.DataFrame(X_test, columns=names)), by_index.predict(X_test))


@pytest.mark.parametrize("views, message", [
    ({"a": ["nope"]}, "no column named 'nope'; X has no column names"),
    ({"a": [30]}, "column 30 is out of range for X of 30 columns"),
    ({"a": []}, r"views\['a'\] has no columns"),
    ({"a": 3}, r"must be a list of columns, got 3: write \[3\]"),
    ({"a": [0.5]}, "a column is an index or a column name"),
    ({"a": np.zeros(29, dtype=bool)}, "boolean mask of 29 entries; X has 30 columns"),
    ({"a": np.zeros(30, dtype=bool)}, "selects no column"),
    ({}, "views is empty"),
    ("abc", "views must be a mapping"),
])
def test_bad_views_are_refused_by_name(cancer, views, message):
    X, y, _, _ = cancer
    with pytest.raises(ValidationError, match=message):
        MKLClassifier(views=views).fit(X, y)


def test_views_with_precomputed_or_located_specs_are_refused(cancer):
    X, y, _, _ = cancer
    with pytest.raises(ValidationError, match="kernels='precomputed' has none"):
        MKLClassifier(views=VIEWS, kernels="precomputed").fit(np.ones((4, 4, 1)), [0, 1, 0, 1])
    located = [KernelSpec(get_registry().create("kernel", "linear"), features=(0,))]
    with pytest.raises(ValidationError, match="specs without features"):
        MKLClassifier(views=VIEWS, kernels=located).fit(X, y)


def test_views_apply_given_specs_to_every_view_and_survive_a_saved_model(cancer, tmp_path):
    X, y, X_test, _ = cancer
    specs = [KernelSpec(get_registry().create("kernel", "laplacian", width="median"), label="l1 median")]
    clf = MKLClassifier(views={"mean": np.arange(10), "rest": np.arange(10, 30)}, kernels=specs).fit(X, y)
    assert [s.label for s in clf.kernels_] == ["l1 median on mean", "l1 median on rest"]
    assert all(s.function.relative_to is None for s in clf.kernels_)
    clf.save(tmp_path / "views.npz")
    loaded = load_model(tmp_path / "views.npz")
    np.testing.assert_array_equal(loaded.decision_function(X_test), clf.decision_function(X_test))
    np.testing.assert_array_equal(loaded.view_weights_, clf.view_weights_)
    assert loaded.view_names_ == ["mean", "rest"]


def test_standardize_auto_makes_the_default_unit_free(cancer):
    X, y, X_test, _ = cancer
    assert MKLClassifier().standardize == "auto"
    specs = [KernelSpec(get_registry().create("kernel", "gaussian", width=5.0))]
    plain = MKLClassifier(kernels=specs, tol=1e-10).fit(X, y)  # one optimum, reached to 1e-10
    rescaled = MKLClassifier(kernels=specs, tol=1e-10).fit(X * 1e4 + 3, y)
    np.testing.assert_allclose(rescaled.decision_function(X_test * 1e4 + 3), plain.decision_function(X_test),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(ValidationError, match="standardize must be 'auto', True or False"):
        MKLClassifier(standardize="yes").fit(X, y)


def test_regressor_defaults_do_not_depend_on_the_units(tmp_path):
    X, y = load_diabetes(return_X_y=True)
    X_raw, _ = load_diabetes(return_X_y=True, scaled=False)
    train, test = slice(0, 300), slice(300, None)
    scaled = MKLRegressor().fit(X[train], y[train])
    raw = MKLRegressor().fit(X_raw[train], y[train] * 1e3)
    assert scaled.score(X[test], y[test]) > 0.35  # RidgeCV: 0.47 on these rows
    np.testing.assert_allclose(raw.predict(X_raw[test]) / 1e3, scaled.predict(X[test]), rtol=1e-3, atol=1e-2)
    assert raw.target_scale_ == pytest.approx(1e3 * y[train].std())
    raw.save(tmp_path / "raw.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "raw.npz").predict(X_raw[test]), raw.predict(X_raw[test]))


def test_fitted_specs_measure_each_median_once(monkeypatch):
    """A view's grid shares one median distance per feature subset and metric; the specs are those
    each spec fits alone."""
    from kernelfuse.kernels import functions

    X = np.random.default_rng(4).normal(size=(50, 5))
    specs = [KernelSpec(s.function, features, group) for group, features in enumerate([(0, 1), (2, 3, 4)])
             for s in view_grid()]
    alone = [spec.fitted(X) for spec in specs]
    calls = []
    original = functions.median_distance
    monkeypatch.setattr(functions, "median_distance", lambda *a: calls.append(a) or original(*a))
    assert functions.fitted_specs(specs, X) == alone
    assert len(calls) == 2  # one per view: the five Gaussians of each share it
