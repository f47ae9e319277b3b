"""The estimators on a Dask cluster: ``fit`` on dask collections, lazy predictions.

``MKLClassifier().fit(X, y)`` and ``MKLRegressor().fit(X, y)`` with ``X`` a ``dask.array`` or
``dask.dataframe`` (and ``y`` one too, or a NumPy vector) and a ``distributed.Client`` connected
solve on the cluster: the estimator's kernels (the grid by default, with its widths measured on
a sample of rows) become Nystrom kernels of rank ``solver_params["rank"]`` (100), their features
are computed and kept in ``X``'s row blocks (:mod:`kernelfuse.distributed.features`), and each
problem (one, or one per class, one-vs-rest) is solved by
:class:`~kernelfuse.distributed.newton.DistributedNewton` to the estimator's ``tol``.  The
family is ``l1_mkl`` with the estimator's smooth loss and measured ``C``, ``C2``, or, with
``family="pnorm_mkl"``, the binary hinge at ``lam`` (default ``1 / N`` at unit diagonal, mapped to
the kernels' scale as in one process) and ``p``.  The features
are standardised by their mean and standard deviation (one pass), the regressor's targets too.
``decision_function``, ``predict`` (and ``predict_proba``) on a dask array are lazy
(``map_blocks``); on a NumPy array they are NumPy arrays.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelfuse import errors
from kernelfuse.errors import ValidationError
from kernelfuse.problem.families import get_family, scaled_default

if TYPE_CHECKING:
    from kernelfuse.distributed.model import FeatureModel
    from kernelfuse.frontends.estimators import MKLEstimator

#: ``solver_params`` the cluster path reads, with their defaults.
CLUSTER_SETTINGS = {"rank": 100, "hessian_rows": 20_000, "sample_rows": 5_000}


def is_dask(data: Any) -> bool:
    """Whether ``data`` is a Dask collection (array, DataFrame, Series)."""
    return type(data).__module__.split(".")[0] in ("dask", "dask_expr")


def _refuse_unsupported(estimator: MKLEstimator, sample_weight: Any, kind: str) -> dict[str, Any]:
    """The settings the cluster path takes, or a :class:`ValidationError` naming the one it does not."""
    if isinstance(estimator.kernels, str) and estimator.kernels == "precomputed":
        raise ValidationError("kernels='precomputed' has no features to distribute: pass the features as a "
                              "dask array, or X.compute() to fit in this process")
    if sample_weight is not None or getattr(estimator, "class_weight", None) is not None:
        raise ValidationError("sample_weight and class_weight are not taken by the distributed solve yet: "
                              "leave them None, or fit in this process (X.compute())")
    if estimator.family not in (None, "l1_mkl", "pnorm_mkl"):
        raise ValidationError(f"family={estimator.family!r}: the distributed solve minimises l1_mkl and pnorm_mkl; "
                              "leave family=None, or fit in this process (X.compute())")
    if estimator.solver != "spicymkl" and not (estimator.family == "pnorm_mkl" and estimator.solver == "obscure"):
        raise ValidationError(f"solver={estimator.solver!r}: on dask arrays the estimators use the distributed "
                              "Newton solver; leave solver at its default")
    if estimator.family == "pnorm_mkl" and kind == "real":
        raise ValidationError("family='pnorm_mkl' is a classification family (the hinge); MKLRegressor fits l1_mkl")
    if estimator.family == "pnorm_mkl" and estimator.loss not in (None, "hinge"):
        raise ValidationError(f"loss={estimator.loss!r}: pnorm_mkl on a cluster is solved with the binary hinge; "
                              "leave loss=None")
    settings = dict(CLUSTER_SETTINGS)
    for name, value in (estimator.solver_params or {}).items():
        if name not in settings:
            raise ValidationError(f"solver_params: {name!r} is not a setting of the distributed solve; it takes "
                                  f"{', '.join(settings)}")
        settings[name] = value
    return settings


def fit_on_cluster(estimator: MKLEstimator, X: Any, y: Any, sample_weight: Any, kind: str) -> None:
    """Fit ``estimator`` on the dask collections ``X``, ``y`` (``kind``: ``"class"`` or ``"real"``)."""
    import dask.array as da

    from kernelfuse.distributed.cluster import client_for
    from kernelfuse.distributed.features import as_row_blocks, partition_features
    from kernelfuse.distributed.newton import DistributedNewton

    settings = _refuse_unsupported(estimator, sample_weight, kind)
    client = client_for(None)
    estimator.__dict__.pop("feature_models_", None)
    if hasattr(X, "columns"):
        estimator.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
    X, y = as_row_blocks(X, "X").astype(np.float64), as_row_blocks(y, "y")
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValidationError(f"X must be (n_samples, n_features) and y (n_samples,); got {X.shape} and {y.shape}")
    y = y.rechunk((X.chunks[0],))
    estimator.n_features_in_ = int(X.shape[1])
    if estimator._standardizes():
        mean, spread = da.compute(X.mean(axis=0), X.std(axis=0))
        estimator.feature_mean_ = np.asarray(mean)
        estimator.feature_scale_ = np.where(np.asarray(spread) > 0, spread, 1.0)
        X = (X - estimator.feature_mean_) / estimator.feature_scale_
    N = int(X.shape[0])
    seed = 0 if estimator.random_state is None else int(estimator.random_state)
    index = np.sort(np.random.default_rng(seed).choice(N, size=min(N, int(settings["sample_rows"])), replace=False))
    specs = estimator._kernel_specs(np.asarray(X[index].compute()))
    family = estimator.family or "l1_mkl"
    fam = get_family(family)
    if family == "l1_mkl":
        params = {name: getattr(estimator, name) if getattr(estimator, name) is not None
                  else getattr(estimator, f"l1_mkl_{name}") for name in ("C", "C2")}
        loss = estimator.loss if estimator.loss is not None else estimator.default_loss
    else:
        params, loss = {"lam": estimator.lam, "p": estimator.p}, "hinge"
    params = {name: value for name, value in params.items() if value is not None}
    fam.resolve_params(params)
    if kind == "class":
        classes = np.unique(np.asarray(da.unique(y).compute()))
        if classes.size < 2:
            raise ValueError(f"{type(estimator).__name__} needs samples of at least 2 classes; got {classes.size}")
        estimator.classes_ = classes
        if family == "pnorm_mkl" and classes.size > 2:
            raise ValidationError(f"family='pnorm_mkl' on a cluster solves binary problems (the hinge); y has "
                                  f"{classes.size} classes: use the default family, or fit in this process")
        solved = y.map_blocks(_encode, classes, dtype=np.float64)
        problems: list[int | None] = [1] if classes.size == 2 else list(range(classes.size))
    else:
        shift, spread = (float(v) for v in da.compute(y.mean(), y.std()))
        estimator.target_shift_ = shift
        estimator.target_scale_ = spread if spread > 0 and math.isfinite(spread) else 1.0
        solved = (y.astype(np.float64) - shift) / estimator.target_scale_
        problems = [None]
    data = partition_features(specs, X, solved, client=client, rank=int(settings["rank"]),
                              normalization=estimator.normalization, sample_rows=int(settings["sample_rows"]),
                              seed=seed, registry=estimator._registry())
    solver = DistributedNewton(tol=1e-3 if estimator.tol is None else estimator.tol,
                               max_iter=100 if estimator.max_iter is None else estimator.max_iter,
                               time_limit=math.inf if estimator.time_limit is None else estimator.time_limit,
                               hessian_rows=int(settings["hessian_rows"]))
    if family == "pnorm_mkl" and "lam" not in params:
        params.update(scaled_default(family, N, data.mean_diagonal))
    models = []
    for k in problems:
        problem = data if k is None else data.with_targets(
            [client.submit(_one_against_rest, t, k) for t in data.targets])
        model = solver.solve(problem, family, loss=loss, registry=estimator._registry(), **params)
        if model.status != "converged":
            warnings.warn(f"the distributed solve stopped with status {model.status!r}: {model.message}",
                          errors.ConvergenceWarning, stacklevel=3)
        models.append(model)
    estimator.kernels_ = list(data.specs)
    estimator.feature_models_ = models
    estimator.kernel_weights_ = np.mean([m.kernel_weights for m in models], axis=0)
    estimator.n_iter_ = max(m.n_iter for m in models)


def _encode(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each label's index among the sorted ``classes``, as floats."""
    return np.searchsorted(classes, labels).astype(np.float64)


def _one_against_rest(encoded: np.ndarray, k: int) -> np.ndarray:
    return np.where(encoded == k, 1.0, -1.0)


def _scores_block(X: np.ndarray, models: list[FeatureModel]) -> np.ndarray:
    return np.column_stack([model.decision_function(X) for model in models])


def cluster_scores(estimator: MKLEstimator, X: Any) -> Any:
    """The decision values of a cluster fit, one column per problem: lazy for a dask ``X``."""
    models = estimator.feature_models_
    if is_dask(X):
        from kernelfuse.distributed.features import as_row_blocks

        X = as_row_blocks(X, "X").astype(np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[-1]} features, but {type(estimator).__name__} was fitted with "
                         f"{estimator.n_features_in_} features")
    if estimator._standardizes():
        X = (X - estimator.feature_mean_) / estimator.feature_scale_
    if is_dask(X):
        return X.map_blocks(_scores_block, models, chunks=(X.chunks[0], (len(models),)), dtype=np.float64)
    return _scores_block(X, models)


def labels_of(classes: np.ndarray, scores: Any) -> Any:
    """The class of each row's decision values (lazy for dask scores)."""
    def pick(block: np.ndarray) -> np.ndarray:
        return classes[(block > 0).astype(int)] if block.ndim == 1 else classes[np.argmax(block, axis=1)]

    if is_dask(scores):
        return scores.map_blocks(pick, dtype=classes.dtype, drop_axis=None if scores.ndim == 1 else 1)
    return pick(scores)
