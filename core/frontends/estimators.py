"""scikit-learn estimators: MKL from feature matrices (or precomputed kernel stacks).

:class:`MKLClassifier`, :class:`MKLRegressor` and :class:`MultiLabelMKLClassifier` (one base,
:class:`MKLEstimator`) build the kernel stack from the features with kernel specs (by default the
papers' grid, :mod:`kernelfuse.frontends.kernel_grid`), normalise it on the training set, solve
the MKL problem with a registered solver (by default SpicyMKL on ``l1_mkl``) and predict with
the learnt expansion ``f(x) = sum_m sum_j coef[m, j] k_m(x_j, x) + b``.  More than two classes
are fitted one-vs-rest unless the family is multiclass or multi-label; ``n_jobs`` solves the
independent problems of one fit through :mod:`kernelfuse.runtime.parallel`.
``kernels="precomputed"`` takes a stack laid out ``(n, n, M)``, kernel axis last, which
scikit-learn's cross-validation slices correctly, or MKLpy's list of M kernel matrices.
Every parameter: docs/estimators.md.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import reprlib
import tempfile
import time
import weakref
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import numpy as np
from scipy.special import log_expit, logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from kernelfuse.assembly.result import Result
from kernelfuse.assembly.solver import Solver, check_weighted
from kernelfuse.errors import IncompatiblePartsError, KernelfuseError, SolverError, ValidationError
from kernelfuse.frontends.cluster_fit import cluster_scores, fit_on_cluster, is_dask, labels_of
from kernelfuse.frontends.docstrings import inherits_parameter_docs
from kernelfuse.frontends.kernel_grid import view_grid
from kernelfuse.frontends.progress import ProgressPrinter
from kernelfuse.kernels.factors import FactorKernels, has_features
from kernelfuse.kernels.functions import (
    KernelSpec,
    aligned,
    check_stack_request,
    column_indices,
    compute_kernels,
    empty_aligned,
    fitted_specs,
)
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.kernels.rows import SpecKernelRows
from kernelfuse.kernels.storage import (
    BLOCK_BYTES,
    DTYPES,
    STORAGES,
    StorageChoice,
    block_rows,
    choose_storage,
    memmap_stack,
    training_stack,
)
from kernelfuse.parts.registry import Registry, resolve_registry
from kernelfuse.problem.families import FAMILIES, get_family, scaled_default
from kernelfuse.runtime.bandwidth import run_threaded
from kernelfuse.runtime.files import writable_folder
from kernelfuse.runtime.logs import log_to_stderr, verbose_level
from kernelfuse.runtime.memory import default_memory_budget, is_out_of_memory, out_of_memory, readable_bytes
from kernelfuse.runtime.parallel import check_n_jobs, map_jobs, remove_shared, shared_empty, shares_files
from kernelfuse.validation import (
    check_psd_value,
    check_sample_weight,
    count,
    dense_targets,
    positive,
    positive_count,
    random_seed,
    seconds,
)

logger = logging.getLogger(__name__)

#: Family parameters an estimator passes on when set (None: the family's default).
_FAMILY_PARAMS = ("C", "C2", "lam", "p", "q", "r", "eps")
#: The parameter the estimators set when left at None, by family, as a function of the number
#: of training samples N, on kernels of unit diagonal: each family's
#: :attr:`~kernelfuse.problem.families.Family.unit_diagonal_default` (``l1_mkl_sq``, ``vskl``:
#: ``C = 1``; ``pnorm_mkl``: ``lam = 1 / N``), read-only.  Mapped to the kernels' own scale by
#: the family's scaling law (:func:`~kernelfuse.problem.families.scaled_default`).
UNIT_DIAGONAL_DEFAULTS: Mapping[str, tuple[str, Callable[[int], float]]] = MappingProxyType({
    name: family.unit_diagonal_default for name, family in FAMILIES.items()
    if family.unit_diagonal_default is not None
})


#: Each estimator's recipe in its current fit: (key, its parameters, the solver built at its
#: defaults); kept beside the estimator, not in it, so that a fitted model pickles.
_RECIPE_FACTS: weakref.WeakKeyDictionary[MKLEstimator, tuple[Any, set[str], Solver]] = weakref.WeakKeyDictionary()


#: The estimators' own settings, checked by name at fit (scikit-learn's estimators check
#: nothing in ``__init__``); family and solver parameters are checked where they are used.
_SETTINGS = {
    "tol": positive.or_none("the solver's default"),
    "max_iter": count.or_none("the solver's default"),
    "time_limit": seconds.or_none("no limit"),
    "memory_budget": positive_count.or_none("the default budget"),
    "random_state": random_seed,
}


#: Tile of :func:`kernels_first`: entries x kernels moved at a time (256 x 128 float64, 256 KiB,
#: in a core's cache).
_TILE_ENTRIES, _TILE_KERNELS = 256, 128


def kernels_first(X: np.ndarray) -> np.ndarray:
    """A precomputed stack ``X`` (n, n', M) as the C-contiguous (M, n, n') the solvers take.

    The transpose of ``X`` as an (n n', M) matrix, copied tile by tile so that each tile is
    read and written in cache: numpy's copy of ``moveaxis(X, 2, 0)`` reads ``X`` with a
    stride of ``M`` entries, a cache miss for every entry (docs/reliability.md, "Input
    checks and their cost").  Rows of tiles are copied on threads
    (:func:`~kernelfuse.runtime.bandwidth.run_threaded`): the copy is bound by memory bandwidth.
    """
    entries = X.reshape(-1, X.shape[2])
    out = np.empty((X.shape[2], X.shape[0], X.shape[1]), dtype=X.dtype)
    flat = out.reshape(X.shape[2], -1)

    def copy(tile_rows: range) -> None:
        for i in (t * _TILE_ENTRIES for t in tile_rows):
            for m in range(0, entries.shape[1], _TILE_KERNELS):
                flat[m:m + _TILE_KERNELS, i:i + _TILE_ENTRIES] = entries[i:i + _TILE_ENTRIES, m:m + _TILE_KERNELS].T

    run_threaded(copy, -(-entries.shape[0] // _TILE_ENTRIES), X.nbytes)
    return out


def stacked(X: Any) -> Any:
    """MKLpy's list (or tuple) of M kernel matrices, each (n, n') (NumPy, PyTorch on the CPU, nested
    lists), as the stack (n, n', M) of ``kernels="precomputed"``; anything else as it is."""
    if not (isinstance(X, (list, tuple)) and X and all(np.ndim(Km) == 2 for Km in X)):
        return X
    shapes = {np.shape(Km) for Km in X}
    if len(shapes) > 1:
        raise ValidationError(f"a list of precomputed kernels needs matrices of one shape, got {sorted(shapes)}")
    return np.stack([np.asarray(Km, dtype=np.float64) for Km in X], axis=2)


def _view_totals(values: np.ndarray | None, groups: np.ndarray, n_views: int) -> np.ndarray | None:
    """Per-kernel ``values`` (..., M) summed over each view's kernels: (..., n_views)."""
    if values is None:
        return None
    return np.stack([np.asarray(values)[..., groups == v].sum(axis=-1) for v in range(n_views)], axis=-1)


def _solve_one(K: np.ndarray, target: np.ndarray, label: str = "", **kwargs: Any) -> Result:
    """One problem of a fit (a job of :func:`kernelfuse.runtime.parallel.map_jobs`: module-level, so
    that process and Dask workers unpickle it by name), with its own progress printer where
    progress is logged; ``label`` names it among several (``"class 2 (2 of 3)"``).  An
    interrupted solve interrupts the fit (a model missing some of its problems is no model)."""
    from kernelfuse.assembly.api import solve

    if label:
        logger.info("one-vs-rest: %s", label)
    result = solve(K, target, callback=ProgressPrinter.wanted(), **kwargs)
    if result.status == "interrupted":
        raise KeyboardInterrupt
    return result


def _mean_over(results: Sequence[Result], name: str) -> np.ndarray | None:
    """The mean of the results' ``kernel_weights`` or ``norm_shares``; None where one has none
    (``mikl``; ``norm_shares`` of a model file written before they were reported)."""
    arrays = [getattr(r, name) for r in results]
    return None if any(a is None for a in arrays) else np.mean(arrays, axis=0)


@contextlib.contextmanager
def _building(n_kernels: int, n_samples: int, dtype: str, where: str) -> Iterator[None]:
    """Log the building of a training stack: how many kernels and bytes, then the time taken."""
    size = readable_bytes(n_kernels * n_samples**2 * np.dtype(dtype).itemsize)
    logger.info("building %d kernels on %d samples (%s, %s)", n_kernels, n_samples, size, where)
    start = time.perf_counter()
    yield
    logger.info("built %d kernels in %.1fs", n_kernels, time.perf_counter() - start)


class MKLEstimator(BaseEstimator):
    """The parameters, kernels and solving shared by the kernelfuse estimators.

    Parameters
    ----------
    kernels : "grid" (the estimators' grid, :func:`~kernelfuse.frontends.kernel_grid.view_grid`:
        Gaussians of 0.25 to 4 times the median distance and the linear kernel, on all
        features, or on each view with ``views``), a sequence
        of :class:`~kernelfuse.kernels.functions.KernelSpec` (with ``views``: specs without
        ``features``, each applied to every view), or "precomputed"
    views : None, or the feature views of multi-view data: a mapping from a view's name to its
        columns (indices, or the column names of a DataFrame ``X``), or a sequence of column
        lists or boolean masks (views named "view 0", "view 1", ...).  Each view gets the
        kernels of ``kernels`` on its columns, in its own group (the groups of ``vskl``); the
        fit reports ``view_names_``, ``view_weights_`` and ``view_norm_shares_``
    solver : a registered solver name (see ``kernelfuse plugins --kind recipe``) or a
        built :class:`~kernelfuse.assembly.solver.Solver`
    family : problem family of OBJECTIVES.md (None: the solver's, :meth:`family_name`)
    C, C2, lam, p, q, r, eps : family (and loss) parameters; None keeps the family default,
        except ``C`` and ``C2`` for ``l1_mkl``: None means the estimator's measured default
        (``C = 0.01``, ``C2 = 0.001`` for classification, ``C = 0.1``, ``C2 = 0.01`` for regression:
        docs/estimators.md; ``C2=0`` gives plain l1-MKL),
        and ``C`` of ``l1_mkl_sq`` and ``vskl`` and ``lam`` of ``pnorm_mkl``: set at the
        kernels' scale (:func:`~kernelfuse.problem.families.scaled_default`)
    loss : registered loss name for family ``l1_mkl`` (None: the estimator's default)
    groups : group of each kernel for ``vskl`` (None: the specs' groups)
    normalization : "unit-trace", "spherical" or "none"
    standardize : "auto" (the default), True or False: scale every feature to zero mean and
        unit variance on the training set first; "auto" does whenever kernels are computed from
        the features (the grid's widths are in standard deviations), so the defaults do not
        depend on the features' units
    tol : relative duality gap at which the solver stops (1e-3, as scikit-learn's
        SVC; the solvers' own default is 1e-6); None keeps the solver's default
    max_iter : passed to the solver when set
    time_limit : seconds each solve may take (passed to the solver when set; every
        iterative solver takes it and stops with status ``time_limit``)
    memory_budget : bytes the training kernel stack may take in memory, and a block of
        test kernels at predict time (None: half the memory available to the process when
        read, :func:`kernelfuse.runtime.memory.default_memory_budget`); see ``storage``
    storage : where the training kernels live (:mod:`kernelfuse.kernels.storage`):
        "factors" (explicit features ``Phi_m``, ``K_m = Phi_m Phi_m'``, when every kernel
        has them: Nystrom, random Fourier features; for obscure, pegasos-mkl, spicymkl),
        "memory" (a numpy stack), "rows" (computed on demand, for the solvers that read
        kernel rows: obscure, pegasos-mkl), "memmap" (a stack written to a file in
        ``storage_dir`` block by block, deleted after the fit), or "auto": factors where
        possible, else memory if the stack fits ``memory_budget``, else rows if the solver
        reads them, else a memory map; the choice and why are in ``kernel_storage_``
        (printed with ``verbose``)
    storage_dir : folder of the memory-mapped stack (None: the temporary folder)
    kernel_dtype : "float64", or "float32" for a stack (in memory or memory-mapped) of half
        the bytes; solvers read it in float64 arithmetic (:mod:`kernelfuse.kernels.products`),
        so the model is the one of the float32-rounded kernels (docs/scaling.md)
    random_state : seed of a stochastic solver (passed as ``seed`` where the solver
        takes one; the deterministic solvers ignore it)
    solver_params : other solver keywords (e.g. ``{"svm_solver": "libsvm"}``)
    check_psd : "auto", True or False: how hard the training kernels are checked for PSD
        (families other than ``mikl``).  "auto": not at all when every kernel function
        declares ``psd`` (the grid's do), a certificate costing about one read of the stack
        otherwise and for ``kernels="precomputed"``; True: every kernel's eigenvalues
        (``O(M n^3)``); False: none (docs/reliability.md, "Input checks and their cost")
    verbose : 0 (False), 1 (True) or 2: progress on stderr during ``fit`` through
        :mod:`logging` (:mod:`kernelfuse.runtime.logs`): 1 the phases (kernels built, each
        solve's start and end, the one-vs-rest class) and iteration lines at most twice a
        second (INFO), 2 every iteration (DEBUG); 0 prints nothing, the messages still reach
        the handlers an application configures on the logger ``kernelfuse``
    n_jobs : workers solving the independent problems of one fit at once (the
        one-vs-rest classes, the labels of a non-shared multi-label fit; in a fit of one
        problem, the solver's own independent parts where it takes ``n_jobs``: the
        per-label SVMs of the multi-label solvers) through
        joblib: None serial unless a ``joblib.parallel_config`` context sets
        ``n_jobs`` or a backend (``backend="dask"``: a Dask cluster), 1 serial,
        -1 all cores; the results equal the serial ones bit for bit
        (:mod:`kernelfuse.runtime.parallel`, docs/parallel.md)
    registry : the plugin registry to find solvers, losses and kernels in; None: the installed
        plugins (:func:`kernelfuse.get_registry`)

    Attributes
    ----------
    n_features_in_ : the number of features seen by ``fit``
    kernels_ : the kernel specs used
    results_ : one :class:`~kernelfuse.assembly.result.Result` per problem solved
    result_ : the first of ``results_``
    coef_ : (M, n_train); (n_problems, M, n_train) for several problems; the solver's
        (M, n_outputs, n_train) for one multi-output problem
    intercept_ : the intercept of each problem
    kernel_weights_ : the combination weights ``d``, ``f = sum_m d_m K_m alpha``: on the simplex
        for the l1 families and vskl, Kloft et al.'s ``||d||_(p/(2-p)) = 1`` for pnorm_mkl, None
        for mikl; the mean over the problems
    norm_shares_ : ``||f_m|| / sum_k ||f_k||``, the mean over the problems
    n_iter_ : the most iterations any problem recorded, the starting point included
    view_names_ : with ``views``, the views' names
    view_weights_ : with ``views``, (n_views,): the kernel weights summed over each view's
        kernels, the mean over the problems (None for mikl).  Where the family fixes each group's
        total weight (``vskl``, one simplex per group: every view's total is 1 / n_views), they
        carry no information and ``view_norm_shares_`` says which view the model uses
    problem_view_weights_ : with ``views``, (n_problems, n_views): the same per problem (per
        one-vs-rest class)
    view_norm_shares_ : with ``views``, (n_views,): each view's share of the model's norm
    """

    #: The loss used when ``loss`` is None (None: the family's default).
    default_loss: ClassVar[str | None] = None
    #: ``C`` and ``C2`` of ``l1_mkl`` when left at None, chosen per estimator on the choice
    #: splits of the accuracy protocol (``benchmarks/default_choice.py``, docs/estimators.md):
    #: the family's ``measured_defaults`` (:class:`~kernelfuse.problem.families.Family`), each
    #: read as ``<family name>_<parameter>``; None keeps the family's default.
    l1_mkl_C: ClassVar[float] = 0.1
    l1_mkl_C2: ClassVar[float | None] = None
    #: The family targets (:class:`~kernelfuse.problem.families.Family`) the estimator fits.
    targets: ClassVar[tuple[str, ...]] = ("loss", "binary", "class", "multilabel")
    # During a fit (_training_kernels): the files of a memory-mapped stack and of a shared one,
    # and the sample weights of the loss (None: every weight 1).
    _stack_file: str | None
    _shared_file: str | None
    _fit_weight: np.ndarray | None

    def __init__(
        self,
        kernels: str | Sequence[KernelSpec] = "grid",
        views: Any = None,
        solver: Any = "spicymkl",
        family: str | None = None,
        C: float | None = None,
        C2: float | None = None,
        lam: float | None = None,
        p: float | None = None,
        q: float | None = None,
        r: float | None = None,
        eps: float | None = None,
        loss: str | None = None,
        groups: Sequence[int] | None = None,
        normalization: str = "unit-trace",
        standardize: bool | str = "auto",
        tol: float | None = 1e-3,
        max_iter: int | None = None,
        time_limit: float | None = None,
        memory_budget: int | None = None,
        storage: str = "auto",
        storage_dir: str | None = None,
        kernel_dtype: str = "float64",
        random_state: int | None = None,
        solver_params: dict[str, Any] | None = None,
        check_psd: str | bool = "auto",
        verbose: bool = False,
        n_jobs: int | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.kernels = kernels
        self.views = views
        self.solver = solver
        self.family = family
        self.C = C
        self.C2 = C2
        self.lam = lam
        self.p = p
        self.q = q
        self.r = r
        self.eps = eps
        self.loss = loss
        self.groups = groups
        self.normalization = normalization
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.memory_budget = memory_budget
        self.storage = storage
        self.storage_dir = storage_dir
        self.kernel_dtype = kernel_dtype
        self.random_state = random_state
        self.solver_params = solver_params
        self.check_psd = check_psd
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.registry = registry

    # ------------------------------------------------------------------ kernels
    def _registry(self) -> Registry:
        """Where the estimator looks solvers, losses and kernels up
        (:func:`~kernelfuse.parts.registry.resolve_registry`)."""
        return resolve_registry(self.registry)

    def _precomputed(self) -> bool:
        return isinstance(self.kernels, str) and self.kernels == "precomputed"

    def _validated(self, X: Any, y: Any, sample_weight: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """``X`` (features, or a precomputed stack) and ``y`` checked; sets ``n_features_in_``, and
        the fit's sample weights (:meth:`_weigh`)."""
        check_n_jobs(self.n_jobs)
        check_psd_value(self.check_psd)
        self._registry()  # a registry of another type refused before any work
        _RECIPE_FACTS.pop(self, None)  # bound again for this fit's settings
        self.__dict__.pop("feature_models_", None)  # a cluster fit's models, replaced by this fit's
        for name, domain in _SETTINGS.items():
            domain.check(name, getattr(self, name))
        verbose_level(self.verbose)
        if self.storage_dir is not None:  # a folder the stack cannot be written to: refused before any work
            writable_folder(self.storage_dir, "storage_dir")
        family = get_family(self.family_name())  # its parameters checked before any kernel is computed
        family.resolve_params({p.name: getattr(self, p.name) for p in family.params
                               if getattr(self, p.name, None) is not None})
        if not (self.solver_params is None or isinstance(self.solver_params, dict)
                and all(isinstance(key, str) for key in self.solver_params)):
            raise ValidationError("solver_params must be a dict of solver parameters by name "
                                  f"(e.g. {{'svm_solver': 'libsvm'}}) or None, got {self.solver_params!r}")
        if not (isinstance(self.standardize, (bool, np.bool_)) or self.standardize == "auto"):
            raise ValidationError(f"standardize must be 'auto', True or False, got {self.standardize!r}")
        if self.standardize is True and self._precomputed():
            raise ValidationError("standardize=True has no features to scale with kernels='precomputed'")
        if self.views is not None and self._precomputed():
            raise ValidationError("views name columns of features; kernels='precomputed' has none: "
                                  "leave views=None, or pass the features and a kernel grid")
        if not self._precomputed():
            X, y = validate_data(self, X, y, dtype=np.float64, multi_output=self._multi_output())
        else:
            X = np.asarray(stacked(X), dtype=np.float64)
            if X.ndim != 3:
                raise ValueError(f"kernels='precomputed' needs X of shape (n, n, M) or a list of M (n, n) "
                                 f"kernel matrices, got {X.shape}")
            self.n_features_in_ = X.shape[1]
            y = np.asarray(y)
        X, y = self._weigh(X, y, sample_weight)
        if X.shape[0] < 2:  # standardised, one row is all zeros: no kernel to normalise
            raise (ValueError if self._fit_weight is None else ValidationError)(
                f"{type(self).__name__} needs at least 2 samples; got n_samples = {X.shape[0]}"
                + ("" if self._fit_weight is None else " of sample_weight > 0"))
        return X, y

    def _weigh(self, X: np.ndarray, y: np.ndarray, sample_weight: Any) -> tuple[np.ndarray, np.ndarray]:
        """``sample_weight`` checked (:func:`~kernelfuse.validation.check_sample_weight`), and the
        solver checked to take weights, before any kernel is computed; kept as the fit's weights
        (``_fit_weight``, read by :meth:`_solve_each`).  With features, the rows of weight 0 are left
        out of the fit (the same optimum: the loss does not see them, and the expansion needs no
        coefficient on them); a precomputed stack keeps them, and the solver gets weight 0."""
        weights = check_sample_weight(sample_weight, X.shape[0])
        if weights is not None:
            check_weighted(self._built_solver(), self.family_name(), registry=self._registry())
            if not self._precomputed() and not (weights > 0).all():
                keep = weights > 0
                X, y, weights = X[keep], y[keep], weights[keep]
        self._fit_weight = weights
        return X, y

    def _multi_output(self) -> bool:
        return False

    def _standardizes(self) -> bool:
        """Whether the features are standardised: ``standardize``, "auto" resolved (True
        unless the kernels are precomputed)."""
        if isinstance(self.standardize, str):
            return not self._precomputed()
        return bool(self.standardize)

    def _view_columns(self, n_features: int) -> list[tuple[str, tuple[int, ...]]]:
        """``views`` as (name, column indices) pairs, checked against the fitted features
        (``feature_names_in_`` for column names)."""
        names = list(getattr(self, "feature_names_in_", ()))
        return [(name, column_indices(f"views[{name!r}]", columns, n_features, names))
                for name, columns in self._named_views()]

    def _named_views(self) -> list[tuple[str, Any]]:
        """``views`` as (name, columns as given) pairs: a mapping's keys, else "view 0", ..."""
        views = self.views
        if isinstance(views, Mapping):
            named = [(str(name), columns) for name, columns in views.items()]
        elif isinstance(views, Sequence) and not isinstance(views, (str, bytes)):
            named = [(f"view {v}", columns) for v, columns in enumerate(views)]
        else:
            raise ValidationError("views must be a mapping from a view's name to its columns, or a list "
                                  f"of column lists, one per view; got {reprlib.repr(views)}")
        if not named:
            raise ValidationError("views is empty: give at least one view, or views=None")
        return named

    def _kernel_specs(self, X: np.ndarray) -> list[KernelSpec]:
        """The kernels of the fit on the (standardised) training features ``X``, with their
        data-dependent parameters (median widths) measured on them."""
        if isinstance(self.kernels, str):
            if self.kernels != "grid":
                raise ValidationError(
                    f"kernels must be 'grid', 'precomputed' or a list of KernelSpec, got {self.kernels!r}"
                )
            templates = None
        else:
            kernels = self.kernels
            templates = list(kernels) if isinstance(kernels, Sequence) else []
            if not templates or not all(isinstance(s, KernelSpec) for s in templates):
                raise ValidationError("kernels must be 'grid', 'precomputed' or a non-empty list of "
                                      f"KernelSpec, got {reprlib.repr(self.kernels)}")
        if templates is None:
            templates = view_grid(registry=self._registry())
        if self.views is not None:
            if any(spec.features is not None for spec in templates):
                raise ValidationError("with views, every KernelSpec of kernels is applied to each view's "
                                      "columns: give specs without features (features=None)")
            specs = [KernelSpec(spec.function, columns, v, f"{spec.label or spec.function.name} on {name}")
                     for v, (name, columns) in enumerate(self._view_columns(X.shape[1]))
                     for spec in templates]
        else:
            specs = templates
        return fitted_specs(specs, X, list(getattr(self, "feature_names_in_", ())))

    def _train_stack(self, X: np.ndarray) -> np.ndarray | SpecKernelRows | FactorKernels:
        if self._precomputed():
            if X.shape[0] != X.shape[1]:
                raise ValidationError(f"kernels='precomputed' needs X of shape (n, n, M), got {X.shape}")
            return self._normalized_precomputed(kernels_first(X))
        if self._standardizes():
            self.feature_mean_ = X.mean(axis=0)
            scale = X.std(axis=0)
            self.feature_scale_ = np.where(scale > 0, scale, 1.0)
            X = (X - self.feature_mean_) / self.feature_scale_
        specs = self._kernel_specs(X)
        self.kernels_ = specs
        self.X_fit_ = aligned(X)  # the (standardised) training features the test kernels pair with
        self.normalizer_ = KernelNormalizer(self.normalization).fit(specs, X)
        self.kernel_storage_ = self._choose_storage(specs, X.shape[0])
        logger.info("kernel storage %s: %s", self.kernel_storage_.storage, self.kernel_storage_.reason)
        block_bytes = min(BLOCK_BYTES, self._budget_bytes())
        if self.kernel_storage_.storage == "factors":
            return FactorKernels.from_specs(specs, X, self.normalizer_)
        if self.kernel_storage_.storage == "rows":
            return SpecKernelRows(specs, X, self.normalization)
        if self.kernel_storage_.storage == "memmap":
            handle, path = tempfile.mkstemp(suffix=".npy", prefix="kernelfuse-stack-", dir=self.storage_dir)
            os.close(handle)
            self._stack_file = path
            with _building(len(specs), X.shape[0], self.kernel_dtype, f"memory-mapped in {path}"):
                return memmap_stack(specs, X, path, self.normalizer_, dtype=self.kernel_dtype,
                                    block_bytes=block_bytes, n_jobs=self.n_jobs)
        check_stack_request(len(specs), X, None, self.kernel_dtype, self._budget_bytes())
        shape = (len(specs), X.shape[0], X.shape[0])
        if shares_files(self.n_jobs):  # worker processes build it in, and solve from, one shared file
            out, self._shared_file = shared_empty(shape, self.kernel_dtype, self.storage_dir)
        else:
            out = empty_aligned(shape, self.kernel_dtype)  # where the shared file's starts
        # Blocks of at most 1/32 of the stack: building it costs little beyond the stack itself.
        with _building(len(specs), X.shape[0], self.kernel_dtype, "in memory"):
            training_stack(specs, X, out, self.normalizer_, n_jobs=self.n_jobs,
                           block_bytes=min(block_bytes, max(2**20, out.nbytes // 32)))
        frozen: Any = out  # the solves share it: read-only, and so is the buffer it views, so
        while isinstance(frozen, np.ndarray):  # that its input checks hold for every solve of the fit
            frozen.flags.writeable = False
            frozen = frozen.base
        return out

    def _normalized_precomputed(self, K: np.ndarray) -> np.ndarray:
        """A precomputed training stack (M, n, n) normalised as ``normalization`` says, fitted
        on its diagonals (``normalizer_``): ``"unit-trace"`` divides each kernel by its trace on
        the training set, at predict time too; ``"spherical"`` is refused, since it needs each
        test point's ``k(x, x)``, which a test stack (n_test, n_train, M) does not hold."""
        if self.normalization == "spherical":
            raise ValidationError(
                "normalization='spherical' needs each test point's k(x, x), which a precomputed test "
                "stack (n_test, n_train, M) does not hold: normalise the kernels before passing them "
                "and use normalization='none' (or 'unit-trace')")
        self.normalizer_ = KernelNormalizer(self.normalization).fit_diagonal(
            np.stack([np.diagonal(Km) for Km in K]))
        return self.normalizer_.transform(K)

    def _kernel_dtype(self) -> np.dtype[Any]:
        """``kernel_dtype`` checked: one of :data:`~kernelfuse.kernels.storage.DTYPES`."""
        if self.kernel_dtype not in DTYPES:
            raise ValidationError(f"kernel_dtype must be one of {', '.join(DTYPES)}, got {self.kernel_dtype!r}")
        return np.dtype(self.kernel_dtype)

    def _choose_storage(self, specs: Sequence[KernelSpec], n_samples: int) -> StorageChoice:
        if self.storage not in ("auto", *STORAGES):
            raise ValidationError(f"storage must be 'auto' or one of {', '.join(STORAGES)}, "
                                  f"got {self.storage!r}")
        self._kernel_dtype()
        reads_rows = self._solver_reads("reads_kernel_rows")
        reads_factors = reads_rows or self._solver_reads("reads_kernel_factors")
        if self.storage == "rows" and not reads_rows:
            raise IncompatiblePartsError(
                f"storage='rows' needs a solver that reads kernel rows (obscure, pegasos-mkl); "
                f"{self.solver!r} needs the stack: use storage 'memory' or 'memmap'")
        if self.storage == "factors":
            if not reads_factors:
                raise IncompatiblePartsError(
                    f"storage='factors' needs a solver that reads kernel factors (obscure, pegasos-mkl, "
                    f"spicymkl); {self.solver!r} needs the stack: use storage 'memory' or 'memmap'")
            without = [m for m, spec in enumerate(specs) if not has_features(spec)]
            if without:
                raise ValidationError(
                    f"storage='factors' needs kernels with explicit features (Nystrom, random Fourier "
                    f"features); kernel(s) {', '.join(map(str, without[:10]))} have none")
        if self.storage != "auto":
            return StorageChoice(self.storage, "asked for (storage=" + repr(self.storage) + ")")
        return choose_storage(len(specs), n_samples, memory_budget=self._budget_bytes(),
                              reads_rows=reads_rows, dtype=self.kernel_dtype, folder=self.storage_dir,
                              factors=reads_factors and all(has_features(spec) for spec in specs))

    def _solver_reads(self, flag: str) -> bool:
        """Whether the solver declares ``flag`` (``reads_kernel_rows``, ``reads_kernel_factors``)."""
        return bool(getattr(self._built_solver(), flag, False))

    def _recipe_facts(self) -> tuple[set[str], Solver]:
        """The parameters of the recipe ``solver`` names and its solver built at its defaults,
        from one bind per fit (:meth:`_validated` forgets them)."""
        key = (self.solver, id(self._registry()))
        cached = _RECIPE_FACTS.get(self)
        if cached is None or cached[0] != key:
            registry = self._registry()
            bound = registry.get("recipe", self.solver).factory.bind(registry)
            cached = (key, bound.parameters(), bound.build())
            _RECIPE_FACTS[self] = cached
        return cached[1], cached[2]

    def _solver_takes(self) -> set[str]:
        """The parameters of the named solver's recipe (none for a built solver, which keeps its own)."""
        return self._recipe_facts()[0] if isinstance(self.solver, str) else set()

    def _built_solver(self) -> Solver:
        """The solver, built at its recipe's defaults where ``solver`` is a name: what it declares."""
        return self._recipe_facts()[1] if isinstance(self.solver, str) else self.solver

    @contextlib.contextmanager
    def _training_kernels(self, X: np.ndarray) -> Iterator[np.ndarray | SpecKernelRows | FactorKernels]:
        """The training kernels in the storage chosen; a memory-mapped stack's file, or the
        file a parallel fit shares with its workers, is removed when the fit is done with it.
        Running out of memory while building or solving is a :class:`SolverError` naming the
        allocation (:func:`kernelfuse.runtime.memory.out_of_memory`)."""
        self._stack_file = None
        self._shared_file = None
        try:
            with log_to_stderr(verbose_level(self.verbose)):
                yield self._train_stack(X)
        except (MemoryError, OSError) as exc:
            if not is_out_of_memory(exc):
                raise
            raise out_of_memory(exc, f"{type(self).__name__}.fit") from exc
        finally:
            if self._stack_file is not None:
                with contextlib.suppress(OSError):
                    os.remove(self._stack_file)
            if self._shared_file is not None:
                remove_shared(self._shared_file)
            del self._stack_file, self._shared_file
            self.__dict__.pop("_fit_weight", None)

    def _test_input(self, X: Any) -> np.ndarray:
        """``X`` at predict time, checked: features (standardised as in training), or a
        precomputed stack (n_test, n_train, M)."""
        check_is_fitted(self)
        if self._precomputed():
            X = np.asarray(stacked(X), dtype=np.float64)
            M = self.result_.coef.shape[0]
            if X.ndim != 3 or X.shape[1] != self.n_train_ or X.shape[2] != M:
                raise ValueError(
                    f"kernels='precomputed' needs X of shape (n_test, {self.n_train_}, {M}), got {X.shape}"
                )
            return X
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self._standardizes():
            X = (X - self.feature_mean_) / self.feature_scale_
        return X

    def _test_kernels(self, X: np.ndarray) -> np.ndarray:
        """The test kernels (M, n_test, N) of checked rows (:meth:`_test_input`)."""
        if self._precomputed():  # normalised as the training stack was (none in older model files)
            K = kernels_first(X)
            return K if getattr(self, "normalizer_", None) is None else self.normalizer_.transform(K)
        K = compute_kernels(self.kernels_, self.X_fit_, X, memory_budget=self._budget_bytes())
        return self.normalizer_.transform(K, self.kernels_, X)

    def _budget_bytes(self) -> int:
        return default_memory_budget() if self.memory_budget is None else int(self.memory_budget)

    # ------------------------------------------------------------------ solving
    def _solve_each(self, K: np.ndarray | SpecKernelRows | FactorKernels, targets: Sequence[np.ndarray]) -> None:
        """Solve one problem per target (a vector, or a matrix for a multi-output family)."""
        params = {name: getattr(self, name) for name in _FAMILY_PARAMS if getattr(self, name) is not None}
        family = self.family_name()
        fam = get_family(family)  # checked at fit's start (_validated)
        for name in fam.measured_defaults:  # the estimator's <family>_<parameter>, e.g. l1_mkl_C
            measured = getattr(self, f"{fam.name}_{name}")
            if getattr(self, name) is None and measured is not None:
                params[name] = measured
        normalizer = self.normalizer_
        mean_diagonal = float(np.mean(normalizer.train_diagonal_ * normalizer.training_scales() ** 2))
        if mean_diagonal > 0:
            for name, value in scaled_default(family, targets[0].shape[0], mean_diagonal).items():
                params.setdefault(name, value)
        params = self._in_solved_units(params)
        params.update(self._run_settings())
        takes = self._solver_takes()
        if self.random_state is not None and "seed" in takes:
            params["seed"] = self.random_state
        if len(targets) == 1 and self.n_jobs is not None and "n_jobs" in takes:
            params["n_jobs"] = self.n_jobs  # one problem: its own independent parts in parallel
        if "check_psd" in (self.solver_params or {}):
            raise ValidationError(f"check_psd is an estimator parameter, not a solver's: "
                                  f"{type(self).__name__}(check_psd=...) instead of solver_params")
        params.update(self.solver_params or {})
        groups = self.groups
        if groups is None and not self._precomputed() and fam.uses_groups:
            groups = [spec.group for spec in self.kernels_]
        loss = self.loss
        if loss is None and fam.losses is None:  # the family takes any loss
            loss = self.default_loss
        # registry as given: None is resolved by each solve (a worker process loads its own)
        common = dict(solver=self.solver, family=family, loss=loss, groups=groups, check_psd=self._psd_check(),
                      sample_weight=getattr(self, "_fit_weight", None), registry=self.registry, **params)
        names = getattr(self, "classes_", range(len(targets)))
        kind = "label" if getattr(self, "multilabel_", False) else "class"
        labels = [f"{kind} {names[k]} ({k + 1} of {len(targets)})" if len(targets) > 1 else ""
                  for k in range(len(targets))]
        self._adopt_results(map_jobs(_solve_one, [(K, target, label) for target, label in zip(targets, labels)],
                                     self.n_jobs, common))

    def _in_solved_units(self, params: dict[str, Any]) -> dict[str, Any]:
        """The family parameters in the units of the problem solved (the regressor's
        standardised targets); as given here."""
        return params

    def family_name(self) -> str:
        """The family solved: ``family``, else the first family of :data:`FAMILIES` (in its
        order: ``l1_mkl``, ``l1_mkl_sq``, ``vskl``, ``pnorm_mkl``, ``mikl``, ``mlmkl_sum``,
        ``mlmkl_max``) that the solver solves and whose targets the estimator fits
        (``targets``): ``l1_mkl`` for spicymkl and cvxpy, ``l1_mkl_sq`` for simplemkl,
        mirror-vskl and average, ``pnorm_mkl`` for obscure, ``mlmkl_sum`` for mlmkl-sum."""
        if self.family is not None:
            return str(self.family)
        if isinstance(self.solver, str):
            families = getattr(self._registry().get("recipe", self.solver).factory, "families", FAMILIES)
        else:
            families = getattr(self.solver, "families", FAMILIES)
        fitting = [name for name, fam in FAMILIES.items() if name in families and fam.target in self.targets]
        if not fitting:
            raise IncompatiblePartsError(
                f"solver {self.solver!r} solves {', '.join(sorted(families))}, none of which a "
                f"{type(self).__name__} fits (targets {', '.join(self.targets)}): choose another solver")
        return fitting[0]

    def _run_settings(self) -> dict[str, Any]:
        """``tol``, ``max_iter`` and ``time_limit`` where set, for the solver.  A registered
        solver gets only those it takes: ``tol`` (the estimator's default 1e-3) is left out
        for one without a tolerance; ``max_iter`` or ``time_limit`` set for a solver that
        does not take it is an error naming the solver."""
        settings = {name: getattr(self, name) for name in ("tol", "max_iter", "time_limit")
                    if getattr(self, name) is not None}
        if not isinstance(self.solver, str):
            return settings
        takes = self._solver_takes()
        refused = [name for name in ("max_iter", "time_limit") if name in settings and name not in takes]
        if refused:
            raise ValidationError(f"solver {self.solver!r} does not take {' or '.join(refused)}; "
                                  f"leave {' and '.join(refused)} at None (it takes {', '.join(sorted(takes))})")
        return {name: value for name, value in settings.items() if name in takes}

    def _psd_check(self) -> str | bool:
        """``check_psd`` for the solves of a fit: "auto" becomes False when kernelfuse
        computed every kernel from a kernel function that declares ``psd`` (normalising by
        positive factors keeps a kernel PSD)."""
        check_psd = check_psd_value(self.check_psd)
        if check_psd == "auto" and not self._precomputed() \
                and all(spec.function.psd for spec in self.kernels_):
            return False
        return check_psd

    def _solve_labels(self, K: np.ndarray | SpecKernelRows | FactorKernels, signs: np.ndarray) -> None:
        """Labels as +-1 columns: one problem for a multi-label family (one shared
        combination), else one binary problem per column."""
        if get_family(self.family_name()).target == "multilabel":
            self._solve_each(K, [signs])
        else:
            self._solve_each(K, list(signs.T))

    def _adopt_results(self, results: Sequence[Result]) -> None:
        """Fitted attributes from the solver results (one per problem); a diverged
        result (no finite model) is a :class:`SolverError`, not a fitted estimator."""
        for result in results:
            if result.status == "diverged" or not np.isfinite(result.coef).all():
                raise SolverError(f"solver {result.solver!r} diverged: {result.message}; "
                                  "no model to predict with")
        coefs = np.stack([r.coef for r in results])
        self.results_ = list(results)
        self.result_ = self.results_[0]
        self.n_train_ = coefs.shape[-1]
        self.coef_ = coefs[0] if len(results) == 1 else coefs
        self.intercept_ = np.array([r.intercept for r in results])
        self.kernel_weights_ = _mean_over(results, "kernel_weights")
        self.norm_shares_ = _mean_over(results, "norm_shares")
        self.n_iter_ = max(len(r.history) for r in results)
        if self.views is not None:
            self._adopt_views(results)

    def _adopt_views(self, results: Sequence[Result]) -> None:
        """The view attributes (class docstring) from the results and the specs' groups (the
        view of each kernel)."""
        self.view_names_ = [name for name, _ in self._named_views()]
        groups, n_views = np.array([spec.group for spec in self.kernels_]), len(self.view_names_)
        per_problem = [r.kernel_weights for r in results if r.kernel_weights is not None]
        weights = np.stack(per_problem) if len(per_problem) == len(results) else None
        self.problem_view_weights_ = _view_totals(weights, groups, n_views)
        self.view_weights_ = None if weights is None else _view_totals(self.kernel_weights_, groups, n_views)
        self.view_norm_shares_ = _view_totals(self.norm_shares_, groups, n_views)

    def _scores(self, X: Any) -> np.ndarray:
        """Decision values, one column per problem (a multi-output problem gives its own columns).

        Test kernels are computed by blocks of rows, each within ``memory_budget``
        (at most 64 MiB), so predicting many points never holds their whole stack.
        When every kernel has explicit features (Nystrom, random Fourier features) the
        kernels are never formed: ``f(x) = sum_m t_m(x) phi_m(x) . w_m`` with
        ``w_m = Phi_m' coef_m`` from the normalised training factors, ``O(r)`` per kernel
        and point instead of ``O(N r)`` (``t_m(x)`` the normalisation's test scale)."""
        if "feature_models_" in self.__dict__:  # a fit on a Dask cluster
            check_is_fitted(self)
            return cluster_scores(self, X)
        X = self._test_input(X)
        step = block_rows(self.result_.coef.shape[0], self.n_train_,
                          min(BLOCK_BYTES, self._budget_bytes()))
        weights = self._feature_weights()
        blocks = []
        for start in range(0, X.shape[0], step):
            rows = X[start:start + step]
            if weights is not None:
                blocks.append(self._feature_scores(rows, weights))
                continue
            K = self._test_kernels(rows)
            blocks.append(np.column_stack([r.decision_function(K) for r in self.results_]))
        return np.concatenate(blocks)

    def _feature_weights(self) -> list[list[np.ndarray]] | None:
        """``w_m = Phi_m' coef_m`` per problem and kernel, ``(r_m,)`` or ``(r_m, outputs)``; None
        unless every kernel has explicit features."""
        if self._precomputed() or not all(has_features(spec) for spec in self.kernels_):
            return None
        factors = FactorKernels.from_specs(self.kernels_, self.X_fit_, self.normalizer_).factors
        return [[Phi.T @ np.asarray(r.coef)[m].T for m, Phi in enumerate(factors)] for r in self.results_]

    def _feature_scores(self, X: np.ndarray, weights: list[list[np.ndarray]]) -> np.ndarray:
        """Decision values of the rows ``X`` from their features and :meth:`_feature_weights`."""
        features = [spec.function.features(spec.columns(X)) for spec in self.kernels_]
        scales = self.normalizer_.test_scales(np.stack([np.einsum("ij,ij->i", phi, phi) for phi in features]))
        features = [scale[:, None] * phi for scale, phi in zip(scales, features)]
        return np.column_stack([sum(phi @ w for phi, w in zip(features, per_kernel)) + r.intercept
                                for r, per_kernel in zip(self.results_, weights)])

    def save(self, path: Any) -> None:
        """Write the fitted model to ``path`` (.npz: arrays + JSON, no pickle)."""
        from kernelfuse.frontends.persistence import save_model

        save_model(self, path)

    def __sklearn_tags__(self) -> Any:  # scikit-learn's Tags (untyped)
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed()
        return tags


def class_weights(class_weight: Any, classes: np.ndarray, encoded: np.ndarray) -> np.ndarray | None:
    """The weight of each class (``classes``, the labels ``classes[encoded]``) from ``class_weight``:
    None; "balanced", ``n_samples / (n_classes * n_samples_of_class)`` as scikit-learn computes it;
    or a dict from class label to a weight ``> 0`` (classes left out weigh 1).  A sample's weight
    is its class's, in every one-vs-rest problem."""
    if class_weight is None:
        return None
    if isinstance(class_weight, str) and class_weight == "balanced":
        return encoded.size / (classes.size * np.bincount(encoded, minlength=classes.size))
    if not isinstance(class_weight, Mapping):
        raise ValidationError(f"class_weight must be None, 'balanced' or a dict from class label to weight, "
                              f"got {reprlib.repr(class_weight)}")
    labels = classes.tolist()
    unknown = [key for key in class_weight if not isinstance(key, Hashable) or key not in labels]
    if unknown:
        raise ValidationError(f"class_weight names classes the targets do not have: {reprlib.repr(unknown)}; "
                              f"the classes are {reprlib.repr(labels)}")
    return np.array([positive.check(f"class_weight[{label!r}]", class_weight.get(label, 1.0))
                     for label in labels])


_Estimator = TypeVar("_Estimator", bound=type)


def with_parameters(**extra: Any) -> Callable[[_Estimator], _Estimator]:
    """A class decorator: its ``__init__`` takes the keyword parameters ``extra`` (name: default) after
    those of the ``__init__`` it inherits, and sets them as attributes; its signature lists them
    (scikit-learn's ``get_params``, ``clone``), so one parameter list serves every estimator."""
    def decorate(cls: _Estimator) -> _Estimator:
        inherited = cls.__init__  # type: ignore[misc]

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            own = {name: kwargs.pop(name, default) for name, default in extra.items()}
            inherited(self, *args, **kwargs)
            for name, value in own.items():
                setattr(self, name, value)

        signature = inspect.signature(inherited)
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                 for name, default in extra.items()]
        __init__.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*signature.parameters.values(), *added])
        __init__.__doc__ = inherited.__doc__
        cls.__init__ = __init__  # type: ignore[misc]
        return cls
    return decorate


def _has_probability_model(estimator: MKLClassifier) -> bool:
    """Whether the estimator's loss is the logistic loss, the one with a probability model
    (the check of ``available_if``: an :class:`AttributeError` otherwise, so that
    ``hasattr(estimator, "predict_proba")`` is False and scikit-learn's scorers use
    ``decision_function``)."""
    try:
        loss = estimator.loss_name()
    except KernelfuseError:  # an unknown family: no probabilities (fit says why)
        return False
    if loss != "logistic":
        raise AttributeError(
            f"predict_proba needs the logistic loss, whose decision value is a log-odds; "
            f"loss {loss!r} (family {estimator.family_name()!r}) has no probability model: use "
            f"decision_function, or loss='logistic' with family 'l1_mkl' (docs/estimators.md)")
    return True


@inherits_parameter_docs
@with_parameters(class_weight=None)
class MKLClassifier(ClassifierMixin, MKLEstimator):
    """Multiple kernel learning classifier: binary, multiclass one-vs-rest (or natively).

    The default is SpicyMKL on ``l1_mkl`` with the logistic loss and the elastic net
    ``C = 0.01``, ``C2 = 0.001`` (``sum_i loss + C sum_m ||f_m|| + C2/2 sum_m ||f_m||^2``), a
    relative gap of 1e-3, on :func:`~kernelfuse.frontends.kernel_grid.view_grid` (on all
    features, or on each view with ``views``), chosen on the
    choice splits of the accuracy protocol (docs/estimators.md).  ``decision_function`` is
    ``(n,)`` for two classes (positive: ``classes_[1]``), else ``(n, n_classes)``.
    ``predict_proba`` and ``predict_log_proba`` exist for the logistic loss only
    (:meth:`predict_log_proba`).  The parameters shared by every estimator are
    :class:`MKLEstimator`'s (listed below by ``help()``).

    Parameters
    ----------
    class_weight : None, "balanced" (``n_samples / (n_classes * n_c)`` for class ``c`` of ``n_c``
        samples, as scikit-learn computes it) or a dict from class label to a weight ``> 0``;
        with ``fit``'s ``sample_weight`` (None, or a weight ``>= 0`` per sample) each sample's
        loss weighs ``w_i = sample_weight_i * class_weight[y_i]``: the data term is
        ``sum_i w_i loss(y_i, f_i)``, in every one-vs-rest problem (a sample weighs its own
        class's weight whether it is the positive or the negative side).  Solvers that take
        weights: spicymkl (the default) and cvxpy; the others refuse them, naming the parameter

    Attributes
    ----------
    classes_ : the class labels, sorted (``np.unique`` of the training labels)
    """

    class_weight: Any

    default_loss = "logistic"
    #: The elastic net ``0.01 sum_m ||f_m|| + 0.0005 sum_m ||f_m||^2``, chosen on the choice
    #: splits (docs/estimators.md): ``C2 = 0.01`` underfit banana's narrow kernels.
    l1_mkl_C = 0.01
    l1_mkl_C2 = 0.001

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MKLClassifier:
        """Fit on features (or a precomputed stack) ``X`` and labels ``y``; ``sample_weight``: None, or
        a weight ``>= 0`` per sample, the loss's ``w_i`` (times ``class_weight``'s), see :class:`MKLClassifier`."""
        if is_dask(X) or is_dask(y):  # on the connected Dask cluster (kernelfuse.frontends.cluster_fit)
            fit_on_cluster(self, X, y, sample_weight, "class")
            return self
        return self._fit_classes(*self._validated(X, y, sample_weight))

    def _fit_classes(self, X: np.ndarray, y: np.ndarray) -> MKLClassifier:
        check_classification_targets(y)
        self.classes_, encoded = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            weighed = getattr(self, "_fit_weight", None) is not None  # rows of weight 0 left out
            raise (ValidationError if weighed else ValueError)(
                f"{type(self).__name__} needs samples of at least 2 classes; got 1 class ({self.classes_[0]!r})"
                + (" among the rows of sample_weight > 0" if weighed else ""))
        per_class = class_weights(self.class_weight, self.classes_, encoded)
        if per_class is not None:
            if getattr(self, "_fit_weight", None) is None:  # sample_weight checked it already
                check_weighted(self._built_solver(), self.family_name(), "class_weight", registry=self._registry())
            weights = per_class[encoded]
            self._fit_weight = weights if self._fit_weight is None else self._fit_weight * weights
        signs = np.where(encoded[:, None] == np.arange(self.classes_.size), 1.0, -1.0)
        target = get_family(self.family_name()).target
        with self._training_kernels(X) as K:
            if target == "class" and self.classes_.size > 2:  # a native multiclass loss
                self._solve_each(K, [encoded.astype(float)])
            elif self.classes_.size == 2 and target != "multilabel":
                self._solve_each(K, [signs[:, 1]])
            else:  # one-vs-rest, or every class a label of one shared combination
                self._solve_labels(K, signs)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Decision values: (n,) for two classes (positive: ``classes_[1]``), else (n, n_classes)."""
        scores = self._scores(X)
        if self.classes_.size == 2 and scores.shape[1] == 2:  # one multi-output problem
            return scores[:, 1] - scores[:, 0]
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X: Any) -> np.ndarray:
        scores = self.decision_function(X)  # first: an unfitted estimator's NotFittedError
        return labels_of(self.classes_, scores)

    def loss_name(self) -> str:
        """The loss fitted: ``loss``, else the estimator's default (``logistic``) for a family
        taking any loss, else the family's default."""
        if self.loss is not None:
            return self.loss
        family = get_family(self.family_name())
        return self.default_loss if family.losses is None and self.default_loss else family.default_loss

    @available_if(_has_probability_model)
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log-probabilities (n, n_classes) of the logistic loss's model.

        The logistic loss ``log(1 + exp(-y f))`` is the negative log-likelihood of
        ``P(y = +1 | x) = sigmoid(f(x))``, so a binary problem's decision value ``f`` is a
        log-odds: ``log P = (log_sigmoid(-f), log_sigmoid(f))``.  One-vs-rest gives
        ``sigmoid(f_k)`` per class, normalised to sum to 1 over the classes; independent
        labels (a multi-label fit) are not normalised.  Only for the logistic loss: other
        losses have no probability model (an :class:`AttributeError`, see ``available_if``).
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        log_p = log_expit(scores)
        if self._independent_labels():
            return log_p
        return log_p - logsumexp(log_p, axis=1, keepdims=True)

    @available_if(_has_probability_model)
    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities (n, n_classes), ``exp`` of :meth:`predict_log_proba` (logistic loss only)."""
        return np.exp(self.predict_log_proba(X))

    def _independent_labels(self) -> bool:
        """Whether the columns of the decision values are independent labels (multi-label)."""
        return False


@inherits_parameter_docs
class MKLRegressor(RegressorMixin, MKLEstimator):
    """Multiple kernel learning regression: ``l1_mkl`` with the squared (default) or
    ``eps-insensitive`` loss, ``sum_i loss(y_i, f_i) + C sum_m ||f_m|| + C2/2 sum_m ||f_m||^2``,
    by default ``C = 0.1``, ``C2 = 0.01`` on :func:`~kernelfuse.frontends.kernel_grid.view_grid`,
    chosen on the choice splits of the accuracy protocol (docs/estimators.md).

    The problem is solved on the standardised targets ``(y - target_shift_) / target_scale_``
    (their training mean and standard deviation), so that ``C`` and the default do not depend on
    the targets' units; ``eps`` is in the targets' units (divided by ``target_scale_`` for the
    solve).  ``results_`` are the solves of the standardised targets; ``coef_``,
    ``intercept_`` and ``predict`` are in the targets' units.  The parameters shared by every
    estimator are :class:`MKLEstimator`'s (listed below by ``help()``).

    Attributes
    ----------
    target_shift_ : the training targets' mean (the solve's units)
    target_scale_ : the training targets' standard deviation (the solve's units)
    """

    default_loss = "squared"
    #: On the median grid l1 alone (``C = 0.3``) fell behind the mean-kernel SVR on both
    #: regression sets of the choice splits; the elastic net did not (docs/estimators.md).
    l1_mkl_C = 0.1
    l1_mkl_C2 = 0.01
    targets = ("loss",)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MKLRegressor:
        """Fit on features (or a precomputed stack) ``X`` and targets ``y``; ``sample_weight``: None,
        or a weight ``>= 0`` per sample, the loss's ``w_i`` (``sum_i w_i loss(y_i, f_i)``)."""
        if is_dask(X) or is_dask(y):  # on the connected Dask cluster (kernelfuse.frontends.cluster_fit)
            fit_on_cluster(self, X, y, sample_weight, "real")
            return self
        X, y = self._validated(X, y, sample_weight)
        y = np.asarray(y, dtype=np.float64)
        self.target_shift_ = float(y.mean())
        spread = float(y.std())
        self.target_scale_ = spread if spread > 0 and np.isfinite(spread) else 1.0
        with self._training_kernels(X) as K:
            self._solve_each(K, [(y - self.target_shift_) / self.target_scale_])
        return self

    def _in_solved_units(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("eps") is not None:
            params["eps"] = params["eps"] / self.target_scale_
        return params

    def _adopt_results(self, results: Sequence[Result]) -> None:
        super()._adopt_results(results)
        self.coef_ = self.coef_ * self.target_scale_
        self.intercept_ = self.intercept_ * self.target_scale_ + self.target_shift_

    def predict(self, X: Any) -> np.ndarray:
        return self._scores(X)[:, 0] * self.target_scale_ + self.target_shift_


@inherits_parameter_docs
class MultiLabelMKLClassifier(MultiOutputMixin, MKLClassifier):
    """Multi-label MKL: ``Y`` an indicator matrix (n, L) of 0/1 (or -1/+1).

    With a multi-label family (``mlmkl_sum``, ``mlmkl_max``: OBJECTIVES.md
    family 6) one problem is solved and the labels share one kernel
    combination; with any other family each label is its own binary problem
    (its own combination; ``kernel_weights_`` is then their mean).
    ``decision_function`` is (n, L) and ``predict`` the indicator matrix in
    the fitted ``Y``'s values (0/1, or -1/+1: ``label_values_``) and dtype.  ``classes_`` is ``arange(L)`` and
    ``multilabel_`` True.  Targets of one dimension are fitted as
    :class:`MKLClassifier` fits them (``multilabel_`` False).

    Attributes
    ----------
    multilabel_ : whether ``Y`` had several label columns
    label_values_ : the off and on values of the fitted ``Y`` (0/1 or -1/+1)
    """

    def _multi_output(self) -> bool:
        return True

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MultiLabelMKLClassifier:
        X, Y = self._validated(X, dense_targets(y), sample_weight)
        if Y.ndim == 1 or Y.shape[1] == 1:  # one label column: classes, as MKLClassifier
            self.multilabel_ = False
            return self._fit_classes(X, Y.ravel())
        if self.class_weight is not None:
            raise ValidationError("class_weight weighs the classes of one label column; multi-label "
                                  "targets have none: leave class_weight=None (sample_weight weighs rows)")
        if type_of_target(Y) != "multilabel-indicator" or Y.shape[1] < 2:
            raise ValueError(f"{type(self).__name__} needs Y as an indicator matrix of at least "
                             f"two labels (values 0/1 or -1/+1), got {type_of_target(Y)} {Y.shape}")
        self.multilabel_ = True
        self.classes_ = np.arange(Y.shape[1])
        self.label_dtype_ = Y.dtype
        self.label_values_ = np.array([-1 if (Y < 0).any() else 0, 1], dtype=Y.dtype)  # off, on
        with self._training_kernels(X) as K:
            self._solve_labels(K, np.where(Y > 0, 1.0, -1.0))
        return self

    def _is_multilabel(self) -> bool:
        check_is_fitted(self)
        return self.multilabel_

    def decision_function(self, X: Any) -> np.ndarray:
        """Decision values (n, L) for multi-label targets (positive: the label is on)."""
        if not self._is_multilabel():
            return super().decision_function(X)
        return self._scores(X)

    def _independent_labels(self) -> bool:
        return self._is_multilabel()

    def predict(self, X: Any) -> np.ndarray:
        if not self._is_multilabel():
            return super().predict(X)
        off, on = self.label_values_
        return np.where(self.decision_function(X) > 0, on, off).astype(self.label_dtype_)

    def __sklearn_tags__(self) -> Any:  # scikit-learn's Tags (untyped)
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags
