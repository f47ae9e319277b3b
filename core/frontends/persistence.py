"""Fitted estimators saved as one ``.npz`` file: arrays plus a JSON header, never pickle.

The header holds the format version, the versions that wrote the file, the estimator's
parameters and each kernel spec as a registered kernel name with its parameters; the arrays hold
the training features, the normalisation's diagonals, the classes and one solver result per
problem (:meth:`kernelfuse.assembly.result.Result.to_arrays`).  :func:`load_model` reads without
pickle, checks the arrays' digest and the format version, rebuilds kernels only through the
registry, and, since the digest guards integrity only, checks that the file means a model (every
number finite, parameters of their types, kernels reproducing the stored diagonals, classes
matching the decision columns); each refusal names the field (docs/reliability.md, safe model files).
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import sys
import warnings
from collections.abc import Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from kernelfuse.assembly.result import Result
from kernelfuse.errors import KernelfuseError, ValidationError
from kernelfuse.kernels.functions import REBUILT, KernelSpec, aligned
from kernelfuse.runtime.npz_file import read_npz, write_npz

if TYPE_CHECKING:
    from kernelfuse.parts.registry import Registry

FORMAT = "kernelfuse-model"
#: How the header points a kernel parameter to an array (a dict with this one key); any
#: other dict is the parameter's own value.
ARRAY_REFERENCE = "__array__"
#: 2: arrays carry a SHA-256 digest (:mod:`kernelfuse.runtime.npz_file`).
FORMAT_VERSION = 2


def _spec_record(spec: KernelSpec, index: int, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    function, kind = spec.function, type(spec.function)
    if not attrs.has(kind):
        raise ValidationError(f"kernel {index} ({kind.__name__}) is not an attrs class: cannot save it")
    params: dict[str, Any] = {}
    for field in attrs.fields(kind):
        if REBUILT in field.metadata:
            continue
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
    """Write a fitted estimator of :mod:`kernelfuse.frontends.estimators` at exactly ``path``,
    atomically (:func:`kernelfuse.runtime.npz_file.write_npz`).

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
    params.pop("registry", None)  # not part of the model: load_model takes one
    specs = None
    if not estimator._precomputed():
        specs = [_spec_record(s, m, arrays) for m, s in enumerate(estimator.kernels_)]
        arrays["X_fit"] = estimator.X_fit_
        arrays["train_diagonal"] = estimator.normalizer_.train_diagonal_
        if estimator._standardizes():
            arrays["feature_mean"] = estimator.feature_mean_
            arrays["feature_scale"] = estimator.feature_scale_
        params["kernels"] = "specs"
    elif getattr(estimator, "normalizer_", None) is not None:  # a precomputed stack's normalisation
        arrays["train_diagonal"] = estimator.normalizer_.train_diagonal_
    if hasattr(estimator, "target_scale_"):
        arrays["target_units"] = np.array([estimator.target_shift_, estimator.target_scale_])
    if params.get("views") is not None:
        params["views"] = _json_views(params["views"])
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


def _json_views(views: Any) -> Any:
    """``views`` with its column lists as JSON lists (indices, names or booleans as Python's)."""
    def listed(columns: Any) -> Any:
        if isinstance(columns, str):
            return columns
        return [c.item() if isinstance(c, np.generic) else c for c in columns]
    if isinstance(views, Mapping):
        return {str(name): listed(columns) for name, columns in views.items()}
    return [listed(columns) for columns in views]


def _is_array_reference(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {ARRAY_REFERENCE}


#: Relative tolerance of the stored training diagonals against the kernels recomputed on the
#: stored features (equal up to the rounding of a differently aligned operand).
DIAGONAL_RTOL = 1e-9


def _check_floats(path: str | PathLike[str], what: str, array: np.ndarray,
                  shape: tuple[int, ...]) -> None:
    """``array`` is finite floating point of ``shape``."""
    if array.dtype.kind != "f" or array.shape != shape or not np.isfinite(array).all():
        raise ValidationError(f"{path}: {what} must be finite floats of shape {shape}, got "
                              f"dtype {array.dtype} and shape {array.shape}"
                              + ("" if array.dtype.kind != "f" or np.isfinite(array).all()
                                 else " with NaN or inf"))


def load_model(path: str | PathLike[str], *, registry: Registry | None = None) -> Any:
    """Read a model written by :func:`save_model`; refuses anything it cannot verify.

    Kernels are rebuilt from ``registry``, which the estimator gets as its own (None: the
    installed plugins).

    Refused, each with a :class:`ValidationError` naming the file: a missing,
    truncated or non-``.npz`` file, one changed after it was written (its
    digest, :mod:`kernelfuse.runtime.npz_file`), another format version, an unknown
    estimator or kernel name, arrays of the wrong shape or dtype, and any
    header that does not describe a model.  A file whose digest was
    recomputed after a change is refused, naming the field, when it does not
    mean a model: a non-finite coefficient, intercept, kernel weight,
    feature, mean or scale (scales > 0); a result of another family than
    the estimator's; a kernel parameter not of its declared type (float:
    finite real; int: integral; str; bool) or refused by the kernel; kernels
    that compute non-finite values on the training rows, or training
    diagonals (``train_diagonal``, > 0 unless ``normalization="none"``)
    other than the kernels' own on the stored features; classes that are not
    distinct, sorted and finite, or whose number differs from the decision
    columns of the results.  A file written by another kernelfuse version of
    the same format loads with a warning.
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
        return _rebuild(path, header, arrays, registry)
    except KernelfuseError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ValidationError(f"{path}: the header does not describe a kernelfuse model "
                              f"({type(exc).__name__}: {exc})") from None


def _rebuild(path: str | PathLike[str], header: dict[str, Any], arrays: dict[str, np.ndarray],
             given: Registry | None) -> Any:
    """The estimator a checked header and its arrays describe, with registry ``given``."""
    from kernelfuse.frontends import estimators
    from kernelfuse.kernels.normalization import KernelNormalizer
    from kernelfuse.parts.registry import resolve_registry

    kinds = {cls.__name__: cls for cls in (estimators.MKLClassifier, estimators.MKLRegressor,
                                            estimators.MultiLabelMKLClassifier)}
    if header.get("estimator") not in kinds:
        raise ValidationError(f"{path}: unknown estimator {header.get('estimator')!r}")
    kind = kinds[header["estimator"]]
    params = dict(header["params"])
    registry = resolve_registry(given)
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
            function = _kernel(path, m, registry.get("kernel", record["kernel"]).factory, kernel_params,
                               registry)
            specs.append(KernelSpec(function, record["features"], record["group"], record["label"]))
        params["kernels"] = specs
    estimator = kind(**params, registry=given)
    for k, result in enumerate(results):
        _check_result(path, k, result, estimator.family_name())
    if issubclass(kind, estimators.MKLClassifier):
        if "classes" not in arrays:
            raise ValidationError(f"{path}: a classifier without its classes")
        estimator.classes_ = arrays["classes"]
    elif "classes" in arrays:
        raise ValidationError(f"{path}: classes: a {kind.__name__} has no classes")
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
    if issubclass(kind, estimators.MKLClassifier):
        _check_classes(path, estimator.classes_, results, getattr(estimator, "multilabel_", False))
    if params["kernels"] != "precomputed":
        X_fit, diagonal = arrays.get("X_fit"), arrays.get("train_diagonal")
        if X_fit is None or diagonal is None or X_fit.shape != (N, estimator.n_features_in_) \
                or diagonal.shape != (M, N) or len(params["kernels"]) != M:
            raise ValidationError(f"{path}: training features or kernels do not match the coefficients")
        _check_floats(path, "training features", X_fit, X_fit.shape)
        _check_floats(path, "training kernel diagonals (train_diagonal)", diagonal, diagonal.shape)
        for m, spec in enumerate(params["kernels"]):
            if spec.features is not None and not all(
                    isinstance(j, int) and 0 <= j < estimator.n_features_in_ for j in spec.features):
                raise ValidationError(f"{path}: kernel {m} reads features {list(spec.features)} of "
                                      f"{estimator.n_features_in_}")
        estimator.kernels_ = params["kernels"]
        estimator.X_fit_ = aligned(X_fit)  # bit-identical kernels, hence predictions
        _check_kernels_on_training_rows(path, estimator.kernels_, estimator.X_fit_, diagonal,
                                        estimator.normalization)
        if estimator._standardizes():
            mean, scale = arrays.get("feature_mean"), arrays.get("feature_scale")
            if mean is None or scale is None or mean.shape != (estimator.n_features_in_,) \
                    or scale.shape != mean.shape:
                raise ValidationError(f"{path}: the feature standardisation is missing or invalid")
            _check_floats(path, "feature means (feature_mean)", mean, mean.shape)
            _check_floats(path, "feature scales (feature_scale)", scale, scale.shape)
            if not (scale > 0).all():
                raise ValidationError(f"{path}: feature_scale must be > 0, got {float(scale.min())!r}")
            estimator.feature_mean_, estimator.feature_scale_ = mean, scale
        estimator.normalizer_ = KernelNormalizer(estimator.normalization)
        estimator.normalizer_.train_diagonal_ = diagonal
    elif "train_diagonal" in arrays:  # a precomputed stack normalised at fit (none before such files)
        diagonal = arrays["train_diagonal"]
        _check_floats(path, "training kernel diagonals (train_diagonal)", diagonal, (M, N))
        if estimator.normalization == "spherical":
            raise ValidationError(f"{path}: a precomputed model cannot be normalised 'spherical'")
        if estimator.normalization != "none" and not (diagonal.sum(axis=1) > 0).all():
            raise ValidationError(f"{path}: train_diagonal must have positive traces for normalization "
                                  f"{estimator.normalization!r}")
        estimator.normalizer_ = KernelNormalizer(estimator.normalization)
        estimator.normalizer_.train_diagonal_ = diagonal
    if kind is estimators.MKLRegressor:  # the targets' units (none in files before they were kept)
        units = arrays.get("target_units", np.array([0.0, 1.0]))
        _check_floats(path, "target units (target_units)", units, (2,))
        if not units[1] > 0:
            raise ValidationError(f"{path}: the target scale must be > 0, got {float(units[1])!r}")
        estimator.target_shift_, estimator.target_scale_ = float(units[0]), float(units[1])
    estimator._adopt_results(results)
    estimator.metadata_ = header.get("metadata", {})
    return estimator


def _is_number(value: Any, holds: Any) -> bool:
    """An int (not a bool), or a float for which ``holds(value)``."""
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and holds(value))


def _kernel(path: str | PathLike[str], m: int, factory: Any, params: dict[str, Any],
            registry: Registry) -> Any:
    """The kernel function ``factory(**params)`` of the file's kernel ``m``, its parameters
    first checked against the types the kernel class declares (``float``: a finite real,
    not a bool; ``int``: an integral number; ``str``; ``bool``) and array parameters finite,
    its :data:`REBUILT` fields rebuilt from them and ``registry``; an error of the kernel's own
    checks is a :class:`ValidationError` naming the kernel."""
    fields = {field.name: field for field in attrs.fields(factory)} if attrs.has(factory) else {}
    for name, value in params.items():
        declared = fields[name].type if name in fields else None
        declared = declared if isinstance(declared, str) else getattr(declared, "__name__", None)
        where = f"{path}: kernel {m} ({getattr(factory, 'name', factory.__name__)}) parameter {name}"
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise ValidationError(f"{where} holds NaN or inf")
        elif declared == "float" and not (_is_number(value, math.isfinite) and abs(value) <= sys.float_info.max):
            raise ValidationError(f"{where} must be a finite number, got {value!r}")
        elif declared == "int" and not _is_number(value, float.is_integer):
            raise ValidationError(f"{where} must be an integer, got {value!r}")
        elif declared in ("str", "bool") and type(value).__name__ != declared:
            raise ValidationError(f"{where} must be a {declared}, got {value!r}")
    try:
        rebuilt = {name: field.metadata[REBUILT](params, registry) for name, field in fields.items()
                   if REBUILT in field.metadata}
        return factory(**params, **rebuilt)
    except (ValidationError, TypeError, ValueError, ArithmeticError) as exc:
        raise ValidationError(f"{path}: kernel {m} ({getattr(factory, 'name', factory.__name__)}) "
                              f"refuses its parameters {params}: {exc}") from None


def _check_kernels_on_training_rows(path: str | PathLike[str], specs: list[KernelSpec], X_fit: np.ndarray,
                                    diagonal: np.ndarray, normalization: str) -> None:
    """The kernels compute finite values on the first training rows, and their diagonals
    ``k_m(x_i, x_i)`` on the stored features are the stored ``train_diagonal`` (> 0 where the
    normalisation divides by it)."""
    from kernelfuse.kernels.normalization import diagonals

    if normalization != "none" and not (diagonal > 0).all():
        m, i = np.argwhere(~(diagonal > 0))[0]
        raise ValidationError(f"{path}: train_diagonal must be > 0 for normalization "
                              f"{normalization!r}, got {float(diagonal[m, i])!r} (kernel {m}, row {i})")
    rows = X_fit[:4]
    for m, spec in enumerate(specs):
        with np.errstate(all="ignore"):
            try:
                block = spec.compute(rows)
            except (TypeError, ValueError, ArithmeticError) as exc:
                raise ValidationError(f"{path}: kernel {m} ({spec.function!r}) fails on the training "
                                      f"features: {type(exc).__name__}: {exc}") from None
        if not np.isfinite(block).all():
            raise ValidationError(f"{path}: kernel {m} ({spec.function!r}) computes NaN or inf on the "
                                  "training features: a parameter is outside its domain")
    with np.errstate(all="ignore"):
        recomputed = diagonals(specs, X_fit)
    wrong = ~np.isclose(recomputed, diagonal, rtol=DIAGONAL_RTOL, atol=0.0)
    if wrong.any():
        m, i = np.argwhere(wrong)[0]
        raise ValidationError(f"{path}: train_diagonal does not match the kernels on the training "
                              f"features: kernel {m}, row {i} stored {float(diagonal[m, i])!r}, computed "
                              f"{float(recomputed[m, i])!r}")


def _check_result(path: str | PathLike[str], k: int, result: Result, family: Any) -> None:
    """Result ``k`` of the file: finite intercept, kernel weights and norm shares finite and
    >= 0 (one per kernel), and the estimator's family."""
    if not math.isfinite(result.intercept):
        raise ValidationError(f"{path}: result {k} intercept must be finite, got {result.intercept!r}")
    for name in ("kernel_weights", "norm_shares"):
        weights = getattr(result, name)
        if weights is not None and (weights.dtype.kind != "f" or weights.shape != result.coef.shape[:1]
                                    or not np.isfinite(weights).all() or (weights < 0).any()):
            raise ValidationError(f"{path}: result {k} {name} must be {result.coef.shape[0]} finite "
                                  f"numbers >= 0, got {weights!r}")
    if family is not None and result.family != family:
        raise ValidationError(f"{path}: result {k} family is {result.family!r}, the estimator's "
                              f"family is {family!r}")


def _check_classes(path: str | PathLike[str], classes: np.ndarray, results: list[Result],
                   multilabel: bool) -> None:
    """Classes distinct, sorted (as ``numpy.unique`` gives them) and finite, as many as the
    results' decision columns (two classes: one column, or two of one multi-output problem);
    labels ``0 .. L-1`` for a multi-label model."""
    columns = sum(1 if r.coef.ndim == 2 else r.coef.shape[1] for r in results)
    if classes.ndim != 1 or classes.size < 2 or classes.dtype.kind not in "biufUS" \
            or (classes.dtype.kind == "f" and not np.isfinite(classes).all()) \
            or not np.array_equal(np.unique(classes), classes):
        raise ValidationError(f"{path}: classes must be at least 2 distinct, sorted, finite labels, "
                              f"got {classes!r}")
    if multilabel and not np.array_equal(classes, np.arange(columns)):
        raise ValidationError(f"{path}: classes of a multi-label model must be 0 .. {columns - 1} "
                              f"(one per label), got {classes!r}")
    if columns != classes.size and not (classes.size == 2 and columns in (1, 2)):
        raise ValidationError(f"{path}: classes: {classes.size} classes on a model of {columns} decision "
                              f"column(s) ({'one binary problem' if columns == 1 else 'one per class'} "
                              f"expected: {2 if columns == 1 else columns} classes)")
