"""Saved models: identical predictions after loading, and refusal of anything unverifiable."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from kernelfuse import UnknownNameError, ValidationError
from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.frontends.persistence import load_model
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.parts.registry import get_registry
from kernelfuse.runtime.npz_file import DIGEST, write_npz


@pytest.fixture(scope="module")
def fitted():
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=2.5, random_state=0)
    labels = np.array(["cat", "dog", "emu"])[y]
    specs = kernel_grid(2, widths=(0.5, 2.0), degrees=(2,)) + [
        KernelSpec(get_registry().create("kernel", "laplacian", width=3.0), features=[1], group=7)]
    model = MKLClassifier(kernels=specs, solver="mirror-vskl", family="vskl", q=3.0, C=50.0,
                          normalization="spherical", standardize=True).fit(X * 3 + 1, labels)
    return model, X


def test_round_trip_predicts_identically(fitted, tmp_path):
    model, X = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = load_model(path)
    assert loaded.standardize and np.allclose(loaded.feature_scale_, model.feature_scale_)
    X_new = X * 3 + 1.3
    np.testing.assert_array_equal(loaded.decision_function(X_new), model.decision_function(X_new))
    np.testing.assert_array_equal(loaded.predict(X_new), model.predict(X_new))
    assert loaded.get_params()["q"] == 3.0 and loaded.normalization == "spherical"
    assert [s.label for s in loaded.kernels_] == [s.label for s in model.kernels_]
    assert loaded.kernels_[-1].group == 7 and loaded.kernels_[-1].function.width == 3.0
    assert loaded.results_[2].objective == model.results_[2].objective
    with np.load(path, allow_pickle=False) as raw:  # readable without pickle
        assert "header" in raw.files


def test_precomputed_models_round_trip(tmp_path):
    X, y = make_blobs(n_samples=40, centers=2, random_state=1)
    K = np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 8)], axis=2)
    model = MKLClassifier(kernels="precomputed").fit(K, y)
    model.save(tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict(K[:7]), model.predict(K[:7]))


def test_regressors_and_multilabel_models_round_trip(tmp_path):
    from sklearn.datasets import make_multilabel_classification

    from kernelfuse.frontends.estimators import MKLRegressor, MultiLabelMKLClassifier

    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    specs = kernel_grid(3, widths=(1.0,), degrees=(1,))
    regressor = MKLRegressor(kernels=specs, loss="eps-insensitive", eps=0.1).fit(X, X[:, 0] ** 2)
    X_labels, Y = make_multilabel_classification(n_samples=40, n_features=3, n_classes=3, random_state=0)
    labeller = MultiLabelMKLClassifier(kernels=specs).fit(X_labels, Y)
    for model, X_new in ((regressor, X + 0.1), (labeller, X_labels + 0.1)):
        model.save(tmp_path / "m.npz")
        loaded = load_model(tmp_path / "m.npz")
        assert type(loaded) is type(model)
        np.testing.assert_array_equal(loaded.predict(X_new), model.predict(X_new))
    assert loaded.predict(X_labels).dtype == Y.dtype and loaded.multilabel_
    # Fitted with -1/+1, it predicts -1/+1, saved and loaded alike.
    signed = MultiLabelMKLClassifier(kernels=specs).fit(X_labels, 2 * Y - 1)
    signed.save(tmp_path / "signed.npz")
    again = load_model(tmp_path / "signed.npz")
    for model in (signed, again):
        predicted = model.predict(X_labels)
        assert set(np.unique(predicted)) <= {-1, 1}
        np.testing.assert_array_equal(predicted, 2 * labeller.predict(X_labels) - 1)


def saved_header(path):
    """The JSON header of a saved model."""
    with np.load(path, allow_pickle=False) as raw:
        return json.loads(str(raw["header"]))


def rewrite(path, **changes):
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(str(arrays["header"]))
    for key, value in changes.items():
        if key == "arrays":
            arrays.update(value)
        elif key == "drop":
            arrays.pop(value)
        else:
            header[key] = value
    if changes.get("drop") != "header":
        arrays["header"] = np.array(json.dumps(header))
    arrays.pop(DIGEST)
    write_npz(path, arrays)  # a consistent digest: the checks behind it are what is tested


def test_tampered_or_truncated_files_are_refused(fitted, tmp_path):
    model, _ = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    data = path.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValidationError, match="cannot read model file"):
        load_model(tmp_path / "truncated.npz")
    with pytest.raises(ValidationError, match="does not exist"):
        load_model(tmp_path / "missing.npz")
    rewrite(path, format_version=99)
    with pytest.raises(ValidationError, match="unsupported model format .* version 99"):
        load_model(path)
    model.save(path)
    rewrite(path, arrays={"X_fit": np.zeros((3, 2))})
    with pytest.raises(ValidationError, match="do not match the coefficients"):
        load_model(path)
    model.save(path)
    header = saved_header(path)
    header["kernels"][0]["kernel"] = "gausian"
    rewrite(path, kernels=header["kernels"])
    with pytest.raises(UnknownNameError, match="did you mean 'gaussian'"):
        load_model(path)
    model.save(path)
    rewrite(path, drop="header")
    with pytest.raises(ValidationError, match="no valid kernelfuse header"):
        load_model(path)


def test_a_file_changed_after_saving_is_refused_by_its_digest(fitted, tmp_path):
    model, X = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    changed = dict(arrays, result0_intercept=arrays["result0_intercept"] + 1e-12)
    np.savez(tmp_path / "changed.npz", **changed)  # one intercept nudged, the digest kept
    with pytest.raises(ValidationError, match="modified or corrupted after it was written"):
        load_model(tmp_path / "changed.npz")
    np.savez(tmp_path / "plain.npz", **{k: v for k, v in arrays.items() if k != DIGEST})
    with pytest.raises(ValidationError, match="has no kernelfuse digest"):
        load_model(tmp_path / "plain.npz")
    data = path.read_bytes()
    expected = model.predict(X * 3 + 1)
    refused, offsets = 0, range(0, len(data), max(1, len(data) // 60))
    for offset in offsets:                                       # one flipped byte anywhere:
        flipped = bytearray(data)                                # refused, or (a byte no array
        flipped[offset] ^= 0xFF                                  # reads, e.g. a zip timestamp)
        (tmp_path / "flipped.npz").write_bytes(bytes(flipped))   # the very same model
        try:
            loaded = load_model(tmp_path / "flipped.npz")
        except ValidationError:
            refused += 1
        else:
            np.testing.assert_array_equal(loaded.predict(X * 3 + 1), expected)
    assert refused >= 0.75 * len(offsets)  # where the zip's own fields fall moves with the header's size


#: Fields changed with the digest recomputed (the file is intact as a file, forged in meaning).
FORGED_ARRAYS = [
    ({"arrays": {"result0_intercept": np.array(np.nan)}}, "result 0 intercept must be finite, got nan"),
    ({"arrays": {"result1_family": np.array("pnorm_mkl")}},
     "result 1 family is 'pnorm_mkl', the estimator's family is 'vskl'"),
    ({"arrays": {"classes": np.array(["cat", "dog", "emu", "fox"])}},
     r"classes: 4 classes on a model of 3 decision column\(s\)"),
    ({"arrays": {"classes": np.array(["dog", "cat", "emu"])}}, "classes must be at least 2 distinct, sorted"),
    ({"arrays": {"classes": np.array(["cat", "cat", "emu"])}}, "classes must be at least 2 distinct, sorted"),
    ({"arrays": {"train_diagonal": np.zeros((10, 60))}},
     "train_diagonal must be > 0 for normalization 'spherical', got 0.0"),
    ({"arrays": {"train_diagonal": -np.ones((10, 60))}}, "train_diagonal must be > 0 .* got -1.0"),
    ({"arrays": {"train_diagonal": np.full((10, 60), 2.0)}},
     "train_diagonal does not match the kernels on the training features: kernel 0, row 0 stored 2.0"),
    ({"arrays": {"feature_scale": np.array([np.nan, 1.0])}}, "feature scales .feature_scale. must be finite"),
    ({"arrays": {"feature_scale": np.array([-1.0, 1.0])}}, "feature_scale must be > 0"),
    ({"arrays": {"result2_kernel_weights": np.full(10, -0.1)}},
     "result 2 kernel_weights must be 10 finite numbers >= 0"),
]


@pytest.mark.parametrize("change, message", [
    ({"params": ["not", "a", "dict"]}, "does not describe a kernelfuse model"),
    ({"n_results": "many"}, "does not describe a kernelfuse model"),
    ({"kernels": [{"kernel": "gaussian"}]}, "does not describe a kernelfuse model"),
    ({"estimator": "os.system"}, "unknown estimator 'os.system'"),
    ({"format": "pickle"}, "unsupported model format"),
    ({"arrays": {"X_fit": np.full((60, 2), "x")}}, "training features must be finite floats"),
    ({"arrays": {"result0_coef": np.zeros((10, 60), dtype=np.int64)}},
     "coefficients must be finite floats"),
    ({"arrays": {"train_diagonal": np.full((10, 60), np.nan)}}, "with NaN or inf"),
    ({"arrays": {"result0_status": np.array("pwned")}}, "status 'pwned' is not one of"),
] + FORGED_ARRAYS)
def test_headers_and_arrays_that_do_not_describe_a_model_are_refused(fitted, tmp_path, change,
                                                                     message):
    model, _ = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    rewrite(path, **change)
    with pytest.raises(ValidationError, match=message):
        load_model(path)


def test_a_kernel_reading_a_feature_the_model_lacks_is_refused(fitted, tmp_path):
    model, _ = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    header = saved_header(path)
    header["kernels"][-1]["features"] = [5]
    rewrite(path, kernels=header["kernels"])
    with pytest.raises(ValidationError, match=r"kernel 9 reads features \[5\] of 2"):
        load_model(path)


def test_a_model_from_another_kernelfuse_version_loads_with_a_warning(fitted, tmp_path):
    model, X = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    versions = saved_header(path)["versions"]
    rewrite(path, versions={**versions, "kernelfuse": "0.0.1"})
    with pytest.warns(UserWarning, match="written by kernelfuse 0.0.1"):
        loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(X * 3 + 1), model.predict(X * 3 + 1))


def test_loaded_models_predict_bit_identically_whatever_the_memory_layout(tmp_path):
    """Kernels from equal features at two addresses can differ in the last bit (vectorised
    loops); fitted and loaded models keep their features 64-byte aligned so they do not."""
    from kernelfuse.runtime.memory import ALIGNMENT

    specs = kernel_grid(3, widths=(0.5, 2.0), degrees=(1,))
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(30 + seed, 3))
        model = MKLClassifier(kernels=specs).fit(X, X[:, 0] > 0)
        model.save(tmp_path / "m.npz")
        loaded = load_model(tmp_path / "m.npz")
        assert loaded.X_fit_.ctypes.data % ALIGNMENT == model.X_fit_.ctypes.data % ALIGNMENT == 0
        Z = rng.normal(size=(17, 3))
        np.testing.assert_array_equal(loaded.decision_function(Z), model.decision_function(Z))


# ---------------------------------------------------------------- forged files: a recomputed digest
def forge_kernel_param(path, kernel, name, value):
    """The first ``kernel`` of the saved model's header gets parameter ``name = value``."""
    header = saved_header(path)
    record = next(r for r in header["kernels"] if r["kernel"] == kernel)
    record["params"][name] = value
    rewrite(path, kernels=header["kernels"])


@pytest.fixture(scope="module")
def binary():
    X, y = make_blobs(n_samples=40, centers=2, cluster_std=2.0, random_state=3)
    return MKLClassifier(kernels=kernel_grid(2, widths=(1.0,), degrees=(1,))).fit(X, y)




@pytest.mark.parametrize("kernel, name, value, message", [
    ("gaussian", "width", float("nan"), r"kernel 0 \(gaussian\) parameter width must be a finite number, got nan"),
    ("gaussian", "width", "abc", "parameter width must be a finite number, got 'abc'"),
    ("gaussian", "width", True, "parameter width must be a finite number, got True"),
    ("gaussian", "width", 0.0, r"kernel 0 \(gaussian\) refuses its parameters \{'width': 0.0, .*width must be > 0"),
    ("gaussian", "width", -2.0, r"kernel 0 \(gaussian\) refuses its parameters \{'width': -2.0, .*width must be > 0"),
    # a valid degree, another kernel than the one trained: its diagonal no longer matches
    ("polynomial", "degree", 2.5, r"train_diagonal does not match the kernels on the training features: kernel 2"),
    ("polynomial", "degree", -1.0, r"kernel 2 \(polynomial\) refuses its parameters .*degree must be > 0"),
    ("polynomial", "degree", "2", r"kernel 2 \(polynomial\) parameter degree must be a finite number, got '2'"),
    ("laplacian", "width", float("inf"), r"\(laplacian\) parameter width must be a finite number, got inf"),
    ("gaussian", "sigma", 1.0, r"kernel 0 \(gaussian\) refuses its parameters"),
])
def test_forged_kernel_parameters_are_refused_naming_the_parameter(fitted, tmp_path, kernel, name, value,
                                                                   message):
    """Each loaded before this check, then failed at predict (a string width: a raw TypeError)
    or predicted differently."""
    model, _ = fitted
    path = tmp_path / "model.npz"
    model.save(path)
    forge_kernel_param(path, kernel, name, value)
    with pytest.raises(ValidationError, match=message):
        load_model(path)


def test_three_classes_on_a_binary_model_are_refused(binary, tmp_path):
    path = tmp_path / "binary.npz"
    binary.save(path)
    assert load_model(path).predict(binary.X_fit_[:3]).shape == (3,)
    rewrite(path, arrays={"classes": np.array([0, 1, 2])})
    with pytest.raises(ValidationError, match=r"classes: 3 classes on a model of 1 decision column\(s\) "
                                              r"\(one binary problem expected: 2 classes\)"):
        load_model(path)
    binary.save(path)
    rewrite(path, arrays={"classes": np.array([0.0, np.nan])})
    with pytest.raises(ValidationError, match="classes must be at least 2 distinct, sorted, finite"):
        load_model(path)
