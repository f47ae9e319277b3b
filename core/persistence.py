"""Fitted estimators saved as one ``.npz`` file: arrays plus a JSON header, never pickle.

The header (array ``"header"``, a JSON string) holds the format version,
the versions of kernelfuse, numpy and scikit-learn that wrote the file, the
estimator's parameters, and each kernel spec as a registered kernel name
with its parameters, features, group and label.  The arrays hold the
training features, the normalisation's training diagonals, the classes
(classifiers), and one solver result per problem (``result<k>_<key>``, see
:meth:`kernelfuse.result.Result.to_arrays`).

Loading reads with ``allow_pickle=False`` (no code runs), checks the
arrays' digest (a changed or truncated file is refused), refuses another
format version, rebuilds kernels only through the registry (an unknown name
is an error), and checks every shape and dtype before returning the
estimator.
"""

from __future__ import annotations

import importlib.metadata
import json
import warnings
from os import PathLike
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import KernelfuseError, ValidationError
from kernelfuse.kernel import KernelSpec, aligned
from kernelfuse.result import Result
from kernelfuse.npz_file import read_npz, write_npz

FORMAT = "kernelfuse-model"
#: How the header points a kernel parameter to an array (a dict with this one key); any
#: other dict is the parameter's own value.
ARRAY_REFERENCE = "__array__"
#: 2: arrays carry a SHA-256 digest (:mod:`kernelfuse.npz_file`).
FORMAT_VERSION = 2


def _spec_record(spec: KernelSpec, index: int, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    function = spec.function
    if not attrs.has(type(function)):
        raise ValidationError(f"kernel {index} ({type(function).__name__}) is not an attrs class: cannot save it")
    params: dict[str, Any] = {}
    for field in attrs.fields(type(function)):
        value = getattr(function, field.name)
        if isinstance(value, np.ndarray):
            key = f"kernel{index}_{field.name}"
            arrays[key] = value
            params[field.name] = {ARRAY_REFERENCE: key}
        else:
            params[field.name] = value
    return {"kernel": function.name, "params": params,
            "features": None if spec.features is None else list(spec.features),
            "group": spec.group, "label": spec.label}


def save_model(estimator: Any, path: str | PathLike[str],
               metadata: dict[str, Any] | None = None) -> None:
    """Write a fitted estimator of :mod:`kernelfuse.estimators` at exactly ``path``,
    atomically (:func:`kernelfuse.npz_file.write_npz`).

    ``metadata`` (JSON-serialisable, e.g. feature column names) is stored in
    the header and set as ``metadata_`` on the loaded estimator.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)
    arrays: dict[str, np.ndarray] = {}
    if hasattr(estimator, "classes_"):
        arrays["classes"] = np.asarray(estimator.classes_)
        if arrays["classes"].dtype == object:
            raise ValidationError("classes of object dtype cannot be saved without pickle; use str or numbers")
    labels = getattr(estimator, "multilabel_", False)
    params = estimator.get_params(deep=False)
    specs = None
    if not estimator._precomputed():
        specs = [_spec_record(s, m, arrays) for m, s in enumerate(estimator.kernels_)]
        arrays["X_fit"] = estimator.X_fit_
        arrays["train_diagonal"] = estimator.normalizer_.train_diagonal_
        if estimator.standardize:
            arrays["feature_mean"] = estimator.feature_mean_
            arrays["feature_scale"] = estimator.feature_scale_
        params["kernels"] = "specs"
    for k, result in enumerate(estimator.results_):
        arrays.update({f"result{k}_{key}": value for key, value in result.to_arrays().items()})
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "versions": {name: importlib.metadata.version(name)
                     for name in ("kernelfuse", "numpy", "scikit-learn")},
        "estimator": type(estimator).__name__, "params": params, "kernels": specs,
        "n_results": len(estimator.results_), "n_features_in": int(estimator.n_features_in_),
        "metadata": metadata or {},
        "multilabel": {"dtype": np.dtype(estimator.label_dtype_).str,
                       "values": np.asarray(estimator.label_values_).tolist()} if labels else None,
    }
    try:
        arrays["header"] = np.array(json.dumps(header))
    except TypeError as exc:
        raise ValidationError(f"the estimator's parameters are not JSON-serialisable: {exc}") from None
    write_npz(path, arrays)


def _is_array_reference(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {ARRAY_REFERENCE}


def _check_floats(path: str | PathLike[str], what: str, array: np.ndarray,
                  shape: tuple[int, ...]) -> None:
    """``array`` is finite floating point of ``shape``."""
    if array.dtype.kind != "f" or array.shape != shape or not np.isfinite(array).all():
        raise ValidationError(f"{path}: {what} must be finite floats of shape {shape}, got "
                              f"dtype {array.dtype} and shape {array.shape}"
                              + ("" if array.dtype.kind != "f" or np.isfinite(array).all()
                                 else " with NaN or inf"))


def load_model(path: str | PathLike[str]) -> Any:
    """Read a model written by :func:`save_model`; refuses anything it cannot verify.

    Refused, each with a :class:`ValidationError` naming the file: a missing,
    truncated or non-``.npz`` file, one changed after it was written (its
    digest, :mod:`kernelfuse.npz_file`), another format version, an unknown
    estimator or kernel name, arrays of the wrong shape or dtype, and any
    header that does not describe a model.  A file written by another
    kernelfuse version of the same format loads with a warning.
    """
    arrays = read_npz(path, "model", verify=True)
    try:
        header = json.loads(str(arrays.pop("header")))
    except (KeyError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{path} has no valid kernelfuse header: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT \
            or header.get("format_version") != FORMAT_VERSION:
        found = (f"{header.get('format')!r} version {header.get('format_version')!r}"
                 if isinstance(header, dict) else f"{type(header).__name__} header")
        raise ValidationError(
            f"{path}: unsupported model format {found} "
            f"(this kernelfuse reads {FORMAT} version {FORMAT_VERSION})"
        )
    written_by = (header.get("versions") or {}).get("kernelfuse")
    if written_by != importlib.metadata.version("kernelfuse"):
        warnings.warn(f"{path} was written by kernelfuse {written_by}, this is "
                      f"{importlib.metadata.version('kernelfuse')}; the format is the same",
                      UserWarning, stacklevel=2)
    try:
        return _rebuild(path, header, arrays)
    except KernelfuseError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ValidationError(f"{path}: the header does not describe a kernelfuse model "
                              f"({type(exc).__name__}: {exc})") from None


def _rebuild(path: str | PathLike[str], header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The estimator a checked header and its arrays describe."""
    from kernelfuse import estimators
    from kernelfuse.kernel_normalization import KernelNormalizer
    from kernelfuse.registry import get_registry

    kinds = {cls.__name__: cls for cls in (estimators.MKLClassifier, estimators.MKLRegressor,
                                            estimators.MultiLabelMKLClassifier)}
    if header.get("estimator") not in kinds:
        raise ValidationError(f"{path}: unknown estimator {header.get('estimator')!r}")
    kind = kinds[header["estimator"]]
    params = dict(header["params"])
    registry = get_registry()
    results = [Result.from_arrays({key[len(f"result{k}_"):]: value for key, value in arrays.items()
                                   if key.startswith(f"result{k}_")}, source=f"{path} result {k}")
               for k in range(int(header["n_results"]))]
    if not results:
        raise ValidationError(f"{path}: the model holds no solver result")
    if params.get("kernels") == "specs":
        specs = []
        for m, record in enumerate(header["kernels"]):
            kernel_params = {
                name: arrays[value[ARRAY_REFERENCE]] if _is_array_reference(value) else value
                for name, value in record["params"].items()
            }
            function = registry.create("kernel", record["kernel"], **kernel_params)
            specs.append(KernelSpec(function, record["features"], record["group"], record["label"]))
        params["kernels"] = specs
    estimator = kind(**params)
    if issubclass(kind, estimators.MKLClassifier):
        if "classes" not in arrays:
            raise ValidationError(f"{path}: a classifier without its classes")
        estimator.classes_ = arrays["classes"]
    if kind is estimators.MultiLabelMKLClassifier:
        labels = header.get("multilabel")
        estimator.multilabel_ = labels is not None
        if labels is not None:
            estimator.label_dtype_ = np.dtype(labels["dtype"])
            values = labels.get("values", [0, 1])  # files before label values were kept: 0/1
            if not (isinstance(values, list) and len(values) == 2 and values[1] == 1 and values[0] in (0, -1)):
                raise ValidationError(f"{path}: multi-label values must be [0, 1] or [-1, 1], got {values!r}")
            estimator.label_values_ = np.array(values, dtype=estimator.label_dtype_)
    estimator.n_features_in_ = int(header["n_features_in"])
    shapes = {r.coef.shape for r in results}
    if len(shapes) != 1 or len(next(iter(shapes))) not in (2, 3):
        raise ValidationError(f"{path}: inconsistent coefficient shapes {sorted(shapes)}")
    shape = next(iter(shapes))
    M, N = shape[0], shape[-1]
    for k, result in enumerate(results):
        _check_floats(path, f"result {k} coefficients", result.coef, result.coef.shape)
    if params["kernels"] != "precomputed":
        X_fit, diagonal = arrays.get("X_fit"), arrays.get("train_diagonal")
        if X_fit is None or diagonal is None or X_fit.shape != (N, estimator.n_features_in_) \
                or diagonal.shape != (M, N) or len(params["kernels"]) != M:
            raise ValidationError(f"{path}: training features or kernels do not match the coefficients")
        _check_floats(path, "training features", X_fit, X_fit.shape)
        _check_floats(path, "training kernel diagonals", diagonal, diagonal.shape)
        for m, spec in enumerate(params["kernels"]):
            if spec.features is not None and not all(
                    0 <= j < estimator.n_features_in_ for j in spec.features):
                raise ValidationError(f"{path}: kernel {m} reads features {list(spec.features)} of "
                                      f"{estimator.n_features_in_}")
        estimator.kernels_ = params["kernels"]
        estimator.X_fit_ = aligned(X_fit)  # bit-identical kernels, hence predictions
        if estimator.standardize:
            mean, scale = arrays.get("feature_mean"), arrays.get("feature_scale")
            if mean is None or scale is None or mean.shape != (estimator.n_features_in_,) \
                    or scale.shape != mean.shape or not (scale > 0).all():
                raise ValidationError(f"{path}: the feature standardisation is missing or invalid")
            _check_floats(path, "feature means", mean, mean.shape)
            estimator.feature_mean_, estimator.feature_scale_ = mean, scale
        estimator.normalizer_ = KernelNormalizer(estimator.normalization)
        estimator.normalizer_.train_diagonal_ = diagonal
    estimator._adopt_results(results)
    estimator.metadata_ = header.get("metadata", {})
    return estimator
