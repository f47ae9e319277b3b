"""Fitted estimators saved as one ``.npz`` file: arrays plus a JSON header, never pickle.

The header holds the format version, the versions that wrote the file, the estimator's
parameters and each kernel spec as a registered kernel name with its parameters; the arrays hold
the training features, the normalisation's diagonals, the classes and one solver result per
problem (:meth:`kernelfuse.assembly.result.Result.to_arrays`), or, for a fit on a Dask cluster,
the feature maps' columns and scales and each problem's feature weights, its solve's numbers in
the header (:data:`FEATURE_MODEL_FIELDS`).  :func:`load_model` reads without
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
from kernelfuse.kernels.factors import has_features
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
#: What the header keeps of each model of a fit on a Dask cluster
#: (:class:`~kernelfuse.distributed.model.FeatureModel`), beside its weights (an array) and the
#: feature maps its models share (the kernels, ``feature_offsets``, ``feature_scales``).
FEATURE_MODEL_FIELDS = ("intercept", "normalization", "objective", "dual_objective", "gap", "status", "message",
                        "n_iter", "passes", "time", "family", "loss")


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
    feature_models = estimator.__dict__.get("feature_models_")
    if feature_models is not None:  # a fit on a Dask cluster: its feature maps and weights
        specs = [_spec_record(s, m, arrays) for m, s in enumerate(estimator.kernels_)]
        arrays["feature_offsets"] = np.asarray(feature_models[0].offsets, dtype=np.int64)
        arrays["feature_scales"] = feature_models[0].scales
        for k, model in enumerate(feature_models):
            arrays[f"feature_model{k}_weights"] = model.weights
        params["kernels"] = "specs"
    elif not estimator._precomputed():
        specs = [_spec_record(s, m, arrays) for m, s in enumerate(estimator.kernels_)]
        arrays["X_fit"] = estimator.X_fit_
        arrays["train_diagonal"] = estimator.normalizer_.train_diagonal_
        params["kernels"] = "specs"
    if specs is not None and estimator._standardizes():
        arrays["feature_mean"] = estimator.feature_mean_
        arrays["feature_scale"] = estimator.feature_scale_
    elif getattr(estimator, "normalizer_", None) is not None:  # a precomputed stack's normalisation
        arrays["train_diagonal"] = estimator.normalizer_.train_diagonal_
    if hasattr(estimator, "target_scale_"):
        arrays["target_units"] = np.array([estimator.target_shift_, estimator.target_scale_])
    if params.get("views") is not None:
        params["views"] = _json_views(params["views"])
    for k, result in enumerate(estimator.__dict__.get("results_", ())):
        arrays.update({f"result{k}_{key}": value for key, value in result.to_arrays().items()})
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "versions": {name: importlib.metadata.version(name)
                     for name in ("kernelfuse", "numpy", "scikit-learn")},
        "estimator": type(estimator).__name__, "params": params, "kernels": specs,
        "n_results": len(estimator.__dict__.get("results_", ())), "n_features_in": int(estimator.n_features_in_),
        "feature_models": None if feature_models is None else [
            {name: getattr(model, name) for name in FEATURE_MODEL_FIELDS} for model in feature_models],
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
    columns of the results; for a fit on a Dask cluster, feature offsets that
    are not the columns each kernel's features take on a row, scales not
    > 0, non-finite weights or intercepts, or a count of models the classes
    do not need.  A file written by another kernelfuse version of
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
    cluster = header.get("feature_models")
    if not results and not cluster:
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
    estimator.n_features_in_ = int(header["n_features_in"])
    if issubclass(kind, estimators.MKLClassifier):
        if "classes" not in arrays:
            raise ValidationError(f"{path}: a classifier without its classes")
        estimator.classes_ = arrays["classes"]
    elif "classes" in arrays:
        raise ValidationError(f"{path}: classes: a {kind.__name__} has no classes")
    if cluster:
        if results or isinstance(params["kernels"], str) or kind is estimators.MultiLabelMKLClassifier:
            raise ValidationError(f"{path}: a model fitted on a Dask cluster has feature maps and feature models "
                                  "only (an MKLClassifier or MKLRegressor)")
        _rebuild_cluster_fit(path, estimator, cluster, arrays)
        estimator.metadata_ = header.get("metadata", {})
        return estimator
    for k, result in enumerate(results):
        _check_result(path, k, result, estimator.family_name())
    if kind is estimators.MultiLabelMKLClassifier:
        labels = header.get("multilabel")
        estimator.multilabel_ = labels is not None
        if labels is not None:
            estimator.label_dtype_ = np.dtype(labels["dtype"])
            values = labels.get("values", [0, 1])  # files before label values were kept: 0/1
            if not (isinstance(values, list) and len(values) == 2 and values[1] == 1 and values[0] in (0, -1)):
                raise ValidationError(f"{path}: multi-label values must be [0, 1] or [-1, 1], got {values!r}")
            estimator.label_values_ = np.array(values, dtype=estimator.label_dtype_)
    shapes = {r.coef.shape for r in results}
    if len(shapes) != 1 or len(next(iter(shapes))) not in (2, 3):
        raise ValidationError(f"{path}: inconsistent coefficient shapes {sorted(shapes)}")
    shape = next(iter(shapes))
    M, N = shape[0], shape[-1]
    for k, result in enumerate(results):
        _check_floats(path, f"result {k} coefficients", result.coef, result.coef.shape)
    if issubclass(kind, estimators.MKLClassifier):
        _check_classes(path, estimator.classes_, sum(1 if r.coef.ndim == 2 else r.coef.shape[1] for r in results),
                       getattr(estimator, "multilabel_", False))
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
        _adopt_standardization(path, estimator, arrays)
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
    _adopt_target_units(path, estimator, arrays)
    estimator._adopt_results(results)
    estimator.metadata_ = header.get("metadata", {})
    return estimator


def _adopt_standardization(path: str | PathLike[str], estimator: Any, arrays: dict[str, np.ndarray]) -> None:
    """The file's feature means and scales set on ``estimator`` where it standardises its features."""
    if not estimator._standardizes():
        return
    mean, scale = arrays.get("feature_mean"), arrays.get("feature_scale")
    if mean is None or scale is None or mean.shape != (estimator.n_features_in_,) or scale.shape != mean.shape:
        raise ValidationError(f"{path}: the feature standardisation is missing or invalid")
    _check_floats(path, "feature means (feature_mean)", mean, mean.shape)
    _check_floats(path, "feature scales (feature_scale)", scale, scale.shape)
    if not (scale > 0).all():
        raise ValidationError(f"{path}: feature_scale must be > 0, got {float(scale.min())!r}")
    estimator.feature_mean_, estimator.feature_scale_ = mean, scale


def _adopt_target_units(path: str | PathLike[str], estimator: Any, arrays: dict[str, np.ndarray]) -> None:
    """A regressor's target units (shift, scale) from the file (none in files before they were kept)."""
    from kernelfuse.frontends.estimators import MKLRegressor

    if not isinstance(estimator, MKLRegressor):
        return
    units = arrays.get("target_units", np.array([0.0, 1.0]))
    _check_floats(path, "target units (target_units)", units, (2,))
    if not units[1] > 0:
        raise ValidationError(f"{path}: the target scale must be > 0, got {float(units[1])!r}")
    estimator.target_shift_, estimator.target_scale_ = float(units[0]), float(units[1])


def _rebuild_cluster_fit(path: str | PathLike[str], estimator: Any, records: Any,
                         arrays: dict[str, np.ndarray]) -> None:
    """The models of a fit on a Dask cluster (:mod:`kernelfuse.frontends.cluster_fit`) set on
    ``estimator``: the kernels' feature maps (already rebuilt), their columns ``feature_offsets``
    and scales, and per model its weights and the numbers of its solve; each checked to mean a
    model (offsets increasing from 0, as many columns as each map gives on a row; scales > 0;
    weights and intercepts finite; as many models as the classes need)."""
    from kernelfuse.distributed.model import FeatureModel
    from kernelfuse.kernels.normalization import METHODS

    specs = estimator.kernels
    offsets = arrays.get("feature_offsets", np.zeros(0, dtype=np.int64))
    scales = arrays.get("feature_scales", np.zeros(0))
    if offsets.dtype.kind not in "iu" or offsets.shape != (len(specs) + 1,) \
            or offsets[0] != 0 or not (np.diff(offsets) > 0).all():
        raise ValidationError(f"{path}: feature_offsets must be {len(specs) + 1} increasing integers from 0 "
                              "(the columns of each kernel's features)")
    D = int(offsets[-1])
    _check_floats(path, "feature scales (feature_scales)", scales, (D,))
    if not np.all(scales > 0):
        raise ValidationError(f"{path}: feature_scales must be > 0")
    _adopt_standardization(path, estimator, arrays)
    row = np.zeros((1, estimator.n_features_in_))  # the training mean, where the features are standardised
    for m, spec in enumerate(specs):
        if not has_features(spec):
            raise ValidationError(f"{path}: kernel {m} ({spec.function!r}) has no explicit features")
        with np.errstate(all="ignore"):
            try:
                phi = spec.function.features(spec.columns(row))
            except (TypeError, ValueError, IndexError, ArithmeticError) as exc:
                raise ValidationError(f"{path}: kernel {m} ({spec.function!r}) fails on a row of "
                                      f"{estimator.n_features_in_} features: {type(exc).__name__}: {exc}") from None
        if phi.shape != (1, offsets[m + 1] - offsets[m]) or not np.isfinite(phi).all():
            raise ValidationError(f"{path}: kernel {m} gives {phi.shape[-1]} features (finite: "
                                  f"{bool(np.isfinite(phi).all())}), its columns in feature_offsets are "
                                  f"{offsets[m + 1] - offsets[m]}")
    if not isinstance(records, list):
        raise ValidationError(f"{path}: feature_models must be a list of the models' records")
    models = []
    for k, record in enumerate(records):
        if not isinstance(record, dict) or set(record) != set(FEATURE_MODEL_FIELDS):
            raise ValidationError(f"{path}: feature model {k} must record {', '.join(FEATURE_MODEL_FIELDS)}")
        weights = arrays.get(f"feature_model{k}_weights", np.zeros(0))
        _check_floats(path, f"feature model {k} weights", weights, (D,))
        numbers = {name: record[name] for name in ("intercept", "objective", "dual_objective", "gap", "time")}
        texts = {name: record[name] for name in ("normalization", "status", "message", "family", "loss")}
        if not all(_is_number(v, lambda x: not math.isnan(x)) for v in numbers.values()) \
                or not math.isfinite(numbers["intercept"]) \
                or not all(isinstance(v, str) for v in texts.values()) or texts["normalization"] not in METHODS \
                or not all(isinstance(record[n], int) and record[n] >= 0 for n in ("n_iter", "passes")):
            raise ValidationError(f"{path}: feature model {k} records {record!r}: numbers (a finite intercept), "
                                  f"texts (a normalization of {', '.join(METHODS)}) and counts expected")
        models.append(FeatureModel(weights, float(numbers["intercept"]), offsets, tuple(specs), scales,
                                   objective=float(numbers["objective"]),
                                   dual_objective=float(numbers["dual_objective"]), gap=float(numbers["gap"]),
                                   time=float(numbers["time"]), n_iter=record["n_iter"], passes=record["passes"],
                                   **texts))
    if hasattr(estimator, "classes_"):
        _check_classes(path, estimator.classes_, len(models), multilabel=False)
    elif len(models) != 1:
        raise ValidationError(f"{path}: {len(models)} feature models for a regression; 1 expected")
    _adopt_target_units(path, estimator, arrays)
    estimator.kernels_ = list(specs)
    estimator.feature_models_ = models
    estimator.kernel_weights_ = np.mean([m.kernel_weights for m in models], axis=0)
    estimator.n_iter_ = max(m.n_iter for m in models)


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


def _check_classes(path: str | PathLike[str], classes: np.ndarray, columns: int, multilabel: bool) -> None:
    """Classes distinct, sorted (as ``numpy.unique`` gives them) and finite, as many as the
    model's decision ``columns`` (two classes: one column, or two of one multi-output problem);
    labels ``0 .. L-1`` for a multi-label model."""
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
