"""Kernel functions and kernel specs: from feature matrices to a kernel stack.

A :class:`KernelFunction` computes ``k(x, z)`` for all pairs of rows of two feature matrices,
through BLAS.  A :class:`KernelSpec` says which function, on which features, in which group; specs
and a feature matrix give the stack ``K`` (M, N, N) every solver takes (:func:`compute_kernels`),
or the test kernels (M, N_test, N).  A spec names its function as an object or as a registered
kernel name, and its features as column indices or the column names of a pandas DataFrame
(:func:`column_indices`, shared with the estimators' ``views``).  A stack's memory is known before
it is allocated, and a budget (by default half the memory available) turns an oversized request
into a clear error.
Features of another array library (CuPy, PyTorch on a GPU) give a stack on that device, in
float64, for the functions with a form for it (:meth:`KernelFunction.on_device`).
"""

from __future__ import annotations

import difflib
import inspect
import math
import reprlib
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels import array_backend
from kernelfuse.runtime.memory import ALIGNMENT, readable_bytes
from kernelfuse.validation import positive

#: Bytes of feature differences :meth:`Pairwise.exact_sqdist` holds at a time.
_DIFFERENCE_BYTES = 2**24


class Pairwise:
    """Rows X and Z of one feature subset, with their inner products and squared
    distances computed once and shared by every kernel on that subset.

    ``workspace`` (optional): two (len(X), len(Z)) arrays the inner products
    and the squared distances are written into, and a third for scratch, so
    that a caller computing many small blocks (kernel rows on demand) reuses
    memory instead of mapping fresh pages for every block.
    """

    def __init__(self, X: np.ndarray, Z: np.ndarray, Z_sqnorms: np.ndarray | None = None,
                 workspace: tuple[np.ndarray, ...] | None = None) -> None:
        self.X, self.Z = X, Z
        #: The array namespace of device features (None for NumPy): the generic forms below.
        self.xp = array_backend.namespace(X)
        self._Z_sqnorms = Z_sqnorms  # ||z_j||^2 when known (kernel rows reuse them)
        self._X_sqnorms: np.ndarray | None = None
        self._workspace = workspace
        self._gram: np.ndarray | None = None
        self._sqdist: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape[0], self.Z.shape[0]

    @property
    def gram(self) -> np.ndarray:
        """``[x_i' z_j]``."""
        if self._gram is None:
            if self.xp is not None:
                self._gram = self.X @ self.xp.matrix_transpose(self.Z)
                return self._gram
            out = None if self._workspace is None else self._workspace[0]
            self._gram = np.matmul(self.X, self.Z.T, out=out)
        return self._gram

    @property
    def sqdist(self) -> np.ndarray:
        """``[||x_i - z_j||^2]``, clipped at 0."""
        if self._sqdist is None and self.xp is not None:
            xp = self.xp
            d = xp.sum(self.X * self.X, axis=1)[:, None] + xp.sum(self.Z * self.Z, axis=1)[None, :]
            self._sqdist = array_backend.clip(d - 2.0 * self.gram, 0.0)
        if self._sqdist is None:
            x_norms, z_norms = self._sqnorms()
            out, scratch = (None, None) if self._workspace is None else self._workspace[1:]
            d = np.add.outer(x_norms, z_norms, out=out)  # in place from here: at
            d -= np.multiply(self.gram, 2.0, out=scratch)  # N = 10^5 every N x N temporary is 80 GB
            self._sqdist = np.maximum(d, 0.0, out=d)
        return self._sqdist

    def _sqnorms(self) -> tuple[np.ndarray, np.ndarray]:
        """``||x_i||^2`` and ``||z_j||^2`` of NumPy features, each computed once."""
        if self._X_sqnorms is None:
            self._X_sqnorms = (self.X * self.X).sum(1)
        if self._Z_sqnorms is None:
            self._Z_sqnorms = (self.Z * self.Z).sum(1)
        return self._X_sqnorms, self._Z_sqnorms

    @property
    def sqdist_error(self) -> float:
        """A bound on the rounding error of every entry of :attr:`sqdist` (NumPy features): the
        Gram form ``||x||^2 + ||z||^2 - 2 x'z`` subtracts numbers each rounded to about
        ``(d + 2) eps`` of the largest ``||x_i||^2 + ||z_j||^2``; a distance below it is noise,
        and equal rows need not give 0."""
        x_norms, z_norms = self._sqnorms()
        largest = float(np.max(x_norms, initial=0.0)) + float(np.max(z_norms, initial=0.0))
        return (self.X.shape[1] + 2) * np.finfo(np.float64).eps * largest

    def exact_sqdist(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``||x_i - z_j||^2`` of the pairs ``(rows[k], cols[k])`` from the differences of their
        features (exactly 0 for equal rows, accurate for near ones), a bounded number of bytes
        at a time."""
        out = np.empty(rows.size)
        step = max(1, _DIFFERENCE_BYTES // (8 * max(1, self.X.shape[1])))
        for start in range(0, rows.size, step):
            difference = self.X[rows[start:start + step]] - self.Z[cols[start:start + step]]
            out[start:start + step] = np.einsum("ij,ij->i", difference, difference)
        return out


class KernelFunction(ABC):
    """``k(x, z)`` on feature vectors; ``psd`` says whether every Gram matrix is PSD.

    ``psd`` is a promise the input checks trust: a stack computed from kernel functions that
    declare it is not checked for PSD (``check_psd="auto"``, docs/reliability.md).  Declare
    it False for a kernel that is indefinite for some inputs or parameters (a property where
    it depends on the parameters, as the polynomial kernel's ``coef0 >= 0``).
    """

    name: ClassVar[str]
    psd: ClassVar[bool] = True

    if TYPE_CHECKING:  # optional: explicit features ``phi(X)``, shape (N, r), of a low-rank kernel
        features: Callable[[np.ndarray], np.ndarray]

    @abstractmethod
    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """The matrix ``[k(x_i, z_j)]`` for rows x_i of X and z_j of Z."""

    def on_pairwise(self, pairs: Pairwise) -> np.ndarray:
        """The same matrix from shared pairwise quantities (override this or
        :meth:`on_pairwise_into` to reuse them)."""
        if type(self).on_pairwise_into is not KernelFunction.on_pairwise_into:
            return self.on_pairwise_into(pairs, np.empty(pairs.shape))
        return self(pairs.X, pairs.Z)

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        """:meth:`on_pairwise` written into ``out`` (returned): kernels that override it
        compute in place, with no temporary as large as the result."""
        np.copyto(out, self.on_pairwise(pairs))
        return out

    def on_device(self, pairs: Pairwise) -> Any:
        """The matrix of :meth:`on_pairwise` from pairwise quantities held by another array library
        (``pairs.xp``: CuPy, PyTorch, ...), in that library, on its device."""
        raise ValidationError(
            f"kernel {self.name!r} has no form for {type(pairs.X).__module__.split('.')[0]} arrays "
            "(gaussian, linear and polynomial have one); compute it from NumPy features")

    def fitted(self, X: np.ndarray) -> KernelFunction:
        """The kernel with every parameter measured on the training features ``X`` (the
        columns its spec reads) fixed: itself, except a width relative to the data
        (:class:`WidthKernel`)."""
        return self

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        """``k(x_i, x_i)`` for every row (used by spherical normalisation)."""
        return np.array([self(X[i : i + 1], X[i : i + 1])[0, 0] for i in range(X.shape[0])])


def width_or_gamma(kernel: str, width: object, gamma: object, width_of_gamma: Callable[[float], float],
                   relation: str) -> float:
    """A kernel's ``width`` given as itself or as scikit-learn's ``gamma`` (one of the two; neither:
    width 1).  ``width_of_gamma`` maps a checked gamma (> 0) to the width; ``relation`` (e.g.
    ``"gamma = 1 / (2 width^2)"``) is said in the error when both are given."""
    from kernelfuse.validation import positive

    if width is not None and gamma is not None:
        raise ValidationError(f"{kernel} kernel: give width or gamma, not both (got width={width!r}, "
                              f"gamma={gamma!r}; {relation})")
    if gamma is not None:
        return representable_width(width_of_gamma(positive.check("gamma", gamma)))
    return positive.check("width", 1.0 if width is None else width)


def representable_width(width: float) -> float:
    """A positive ``width`` within the positive finite floats: a width converted or measured
    beyond them (from a gamma near 0, as a multiple of a median distance) gives the same kernel
    as the nearest one (constant, or identity-like)."""
    return min(max(width, math.ulp(0.0)), sys.float_info.max)


#: Rows :func:`median_distance` reads at most: the median of ~500,000 pairwise distances is
#: within about 0.2% of the full set's at any N, for ``O(1)`` cost.
MEDIAN_ROWS = 1000


def median_distance(X: np.ndarray, metric: str = "euclidean") -> float:
    """The median heuristic's scale: the median of ``||x_i - x_j||`` over pairs ``i < j`` of rows
    of ``X`` (``metric`` "euclidean", or "cityblock" for the l1 distance of the Laplacian kernel).

    Above :data:`MEDIAN_ROWS` rows, over that many rows drawn without replacement by a generator
    seeded 0, so the value depends on the data alone.  Where duplicate rows make the median 0,
    the median of the nonzero distances; 1 where every row is the same (any width gives the
    same constant kernel then).
    """
    from scipy.spatial.distance import pdist

    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] > MEDIAN_ROWS:
        X = X[np.sort(np.random.default_rng(0).choice(X.shape[0], MEDIAN_ROWS, replace=False))]
    distances = pdist(X, metric=metric) if X.shape[0] > 1 else np.zeros(0)
    positive = distances[distances > 0]
    if positive.size == 0:
        return 1.0
    median = float(np.median(distances))
    return median if median > 0 else float(np.median(positive))


WIDTH_REFERENCES = ("median",)


@attrs.frozen(init=False)
class WidthKernel(KernelFunction):
    """A kernel of one ``width`` (Gaussian, Laplacian), given in feature units, or with
    ``relative_to="median"`` as a multiple of the median distance between training rows
    (:func:`median_distance` in the kernel's ``metric``; Gretton et al.'s median heuristic),
    measured by :meth:`fitted` on the training features of the kernel's spec, so that the
    kernel does not depend on the features' units."""

    #: The distance the width divides: "euclidean" (Gaussian) or "cityblock" (Laplacian).
    metric: ClassVar[str] = "euclidean"
    width: float = positive.field(1.0)
    relative_to: str | None = None

    def _init_width(self, width: float | str | None, gamma: float | None, relative_to: str | None,
                    width_of_gamma: Callable[[float], float], relation: str) -> None:
        """``width``, or ``gamma`` by ``relation``, or ``width="median"`` (``relative_to="median"``
        with a multiple of 1), checked."""
        if isinstance(width, str):
            if width not in WIDTH_REFERENCES or relative_to not in (None, width):
                raise ValidationError(f"{self.name} kernel: width must be a number > 0 or 'median', got "
                                      f"{width!r}" + (f" with relative_to={relative_to!r}" if relative_to else ""))
            width, relative_to = None, width
        if relative_to is not None and relative_to not in WIDTH_REFERENCES:
            raise ValidationError(f"{self.name} kernel: relative_to must be None (width in feature units) or "
                                  f"'median' (width a multiple of the median distance), got {relative_to!r}")
        if relative_to is not None and gamma is not None:
            raise ValidationError(f"{self.name} kernel: gamma is in feature units; with relative_to="
                                  f"{relative_to!r} give width, the multiple of the median distance")
        self.__attrs_init__(width_or_gamma(self.name, width, gamma, width_of_gamma, relation), relative_to)

    @property
    def scale(self) -> float:
        """The width in feature units; a :class:`ValidationError` while it is still relative."""
        if self.relative_to is not None:
            raise ValidationError(
                f"{self.name} kernel of width {self.width:g} x the {self.relative_to} distance: the distance "
                "is measured on training features; use spec.fitted(X_train) (the estimators do)")
        return self.width

    def fitted(self, X: np.ndarray) -> KernelFunction:
        return self if self.relative_to is None else self.at_distance(median_distance(X, self.metric))

    def at_distance(self, distance: float) -> KernelFunction:
        """The kernel of width ``width x distance`` in feature units (``distance``: the measured
        median distance)."""
        measured = {"width": representable_width(self.width * distance), "relative_to": None}
        return attrs.evolve(self, **measured)


def squared_distances(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """``||x_i - z_j||^2`` through one matrix product, clipped at 0."""
    return Pairwise(X, Z).sqdist


def column_entries(what: str, columns: object, n_features: int | None = None) -> tuple[int | str, ...]:
    """The columns given for the parameter ``what`` (``features``, ``views['a']``): a non-empty
    list of column indices and column names, or a boolean mask (its True entries' indices; of
    ``n_features`` entries where known), each entry checked for its kind; a
    :class:`ValidationError` naming ``what`` otherwise.  :func:`column_indices` resolves them."""
    if isinstance(columns, Mapping):
        raise ValidationError(f"{what} must be a list of columns (indices, or the column names of a "
                              f"DataFrame X), got the mapping {reprlib.repr(columns)}: give a list")
    if isinstance(columns, (str, bytes, int, np.integer)) or not isinstance(columns, Iterable):
        raise ValidationError(f"{what} must be a list of columns, got {columns!r}: write [{columns!r}] "
                              "for one column")
    entries = list(columns)
    if not entries:
        raise ValidationError(f"{what} has no columns")
    if all(isinstance(c, (bool, np.bool_)) for c in entries):
        if n_features is not None and len(entries) != n_features:
            raise ValidationError(f"{what} is a boolean mask of {len(entries)} entries; "
                                  f"X has {n_features} columns")
        indices = tuple(j for j, keep in enumerate(entries) if keep)
        if not indices:
            raise ValidationError(f"{what} selects no column")
        return indices
    out: list[int | str] = []
    for column in entries:
        if isinstance(column, str):
            out.append(str(column))
        elif isinstance(column, (int, np.integer)) and not isinstance(column, (bool, np.bool_)):
            out.append(int(column))
        else:
            raise ValidationError(f"{what}: a column is an index or a column name, got {column!r}")
    return tuple(out)


def column_indices(what: str, columns: object, n_features: int, names: Sequence[str] = ()) -> tuple[int, ...]:
    """The indices (from 0) of the columns given for the parameter ``what`` (:func:`column_entries`)
    in features of ``n_features`` columns named ``names`` (a DataFrame's; empty for an array);
    a :class:`ValidationError` naming ``what`` for a column the features do not have."""
    names = list(names)
    out = []
    for column in column_entries(what, columns, n_features):
        if isinstance(column, str):
            if column not in names:
                close = difflib.get_close_matches(column, names, n=1)
                where = ("X has no column names (fit on a pandas DataFrame with this column, or give "
                         "column indices)" if not names else
                         (f"did you mean {close[0]!r}? " if close else "") + f"X's columns are {reprlib.repr(names)}")
                raise ValidationError(f"{what}: no column named {column!r}; {where}")
            out.append(names.index(column))
        else:
            if not -n_features <= column < n_features:
                raise ValidationError(f"{what}: column {column} is out of range for X of {n_features} "
                                      f"columns (give indices from {-n_features} to {n_features - 1})")
            out.append(column % n_features)
    return tuple(out)


#: The metadata key of a kernel's attrs field that a saved model does not store but rebuilds on
#: loading, its value a function ``(saved fields, registry) -> value`` (a Nystrom kernel's base
#: kernel, built from its registered name; :mod:`kernelfuse.frontends.persistence`).
REBUILT = "kernelfuse.rebuilt"

#: The factory of a registered kernel name (the registry's kind ``kernel``), installed by
#: :mod:`kernelfuse.parts.registry` (a layer above, loaded by every ``import kernelfuse``).
_kernel_factory: Callable[[str], Callable[..., Any]] | None = None


def install_kernel_factory(lookup: Callable[[str], Callable[..., Any]]) -> None:
    """Make ``lookup`` (a kernel name -> its factory) what :class:`KernelSpec` builds a kernel
    name with; :mod:`kernelfuse.parts.registry` installs the registry's when imported."""
    global _kernel_factory
    _kernel_factory = lookup


def kernel_function(function: object, params: Mapping[str, Any]) -> KernelFunction:
    """The function of a :class:`KernelSpec`: ``function`` itself (``params`` empty), or the
    registered kernel of that name built with ``params``; a clear error otherwise."""
    if isinstance(function, str):
        if _kernel_factory is None:
            raise ValidationError(f"kernel name {function!r}: no registry is loaded (import kernelfuse)")
        factory = _kernel_factory(function)  # an unknown name: UnknownNameError listing the names
        call = ", ".join([repr(function), *(f"{key}={value!r}" for key, value in params.items())])
        try:
            built = factory(**params)
        except TypeError as exc:
            raise ValidationError(f"KernelSpec({call}): {exc}; kernel {function!r} takes "
                                  f"{_parameter_names(factory)}") from None
        if not isinstance(built, KernelFunction):
            raise ValidationError(f"KernelSpec({call}): the registered kernel {function!r} built {built!r}, "
                                  "not a KernelFunction")
        return built
    if not isinstance(function, KernelFunction):
        raise ValidationError(f"KernelSpec: function must be a KernelFunction or a registered kernel "
                              f"name (e.g. 'gaussian'), got {reprlib.repr(function)}")
    if params:
        raise ValidationError(f"KernelSpec: kernel parameters ({', '.join(params)}) go with a kernel name, "
                              f"as KernelSpec({function.name!r}, {next(iter(params))}=...); "
                              f"{type(function).__name__} holds its own")
    return function


def _parameter_names(factory: Callable[..., Any]) -> str:
    """The keyword parameters ``factory`` takes, for a message."""
    try:
        names = [name for name, p in inspect.signature(factory).parameters.items()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return "other parameters"
    return ", ".join(names) if names else "no parameters"


def _features(features: object) -> tuple[int | str, ...] | None:
    return None if features is None else column_entries("features", features)


@attrs.frozen(init=False)
class KernelSpec:
    """One kernel of a stack: a function, the features it reads, its group.

    ``function``: a :class:`KernelFunction`, or a registered kernel name built with the keyword
    ``params`` (``KernelSpec("gaussian", width=2)`` is ``KernelSpec(Gaussian(width=2))``).
    ``features``: the columns it reads (None: every column), as indices, or as the column names
    of a pandas DataFrame an estimator is fitted on (:meth:`resolved` at fit), or a boolean mask.
    """

    function: KernelFunction
    #: Column indices or names the kernel reads (None: every column).
    features: tuple[int | str, ...] | None = attrs.field(default=None, converter=_features)
    group: int = 0
    label: str = ""

    def __init__(self, function: KernelFunction | str, features: Iterable[int | str] | None = None,
                 group: int = 0, label: str = "", **params: Any) -> None:
        self.__attrs_init__(kernel_function(function, params), features, group, label)

    def compute(self, X: np.ndarray, Z: np.ndarray | None = None) -> np.ndarray:
        """``k(x_i, z_j)`` on this spec's features (Z defaults to X)."""
        return self.function.on_pairwise(self.pairwise(X, X if Z is None else Z))

    def fitted(self, X: np.ndarray) -> KernelSpec:
        """The spec with its function's data-dependent parameters measured on the training
        features ``X`` (all columns; the spec reads its own): :meth:`KernelFunction.fitted`."""
        function = self.function.fitted(self.columns(X))
        return self if function is self.function else attrs.evolve(self, function=function)

    def resolved(self, n_features: int, names: Sequence[str] = (), what: str = "features") -> KernelSpec:
        """The spec reading its columns by index from 0, checked against features of
        ``n_features`` columns named ``names`` (a DataFrame's; empty for an array): column names
        resolved, negative indices counted from the end (:func:`column_indices`; ``what`` names
        the spec's features in an error)."""
        if self.features is None:
            return self
        indices = column_indices(what, self.features, n_features, names)
        return self if indices == self.features else attrs.evolve(self, features=indices)

    def column_index(self, n_features: int) -> slice | list[int]:
        """What indexes this spec's columns in features of ``n_features`` columns (no names: a
        spec naming columns is resolved first, :meth:`resolved`)."""
        if self.features is None:
            return slice(None)
        return list(column_indices("features", self.features, n_features))

    def columns(self, X: np.ndarray) -> np.ndarray:
        """The columns of ``X`` this spec reads."""
        X = np.asarray(X)
        return X if self.features is None else X[:, self.column_index(X.shape[1])]

    def pairwise(self, X: np.ndarray, Z: np.ndarray) -> Pairwise:
        """The rows of X and Z restricted to this spec's features."""
        cols = self.column_index(X.shape[1])
        xp = array_backend.namespace(X)
        if xp is not None and self.features is not None:
            on_device = array_backend.on_device(np.array(cols), X, xp.int64)
            return Pairwise(xp.take(X, on_device, axis=1), xp.take(Z, on_device, axis=1))
        return Pairwise(X[:, cols], Z[:, cols])


def fitted_specs(specs: Sequence[KernelSpec], X: np.ndarray, names: Sequence[str] = ()) -> list[KernelSpec]:
    """Every spec resolved against the training features ``X`` (columns named ``names``, a
    DataFrame's: :meth:`KernelSpec.resolved`) and fitted on them (:meth:`KernelSpec.fitted`), each
    median distance measured once for all the relative widths on one feature subset and metric (a
    view's grid has five)."""
    medians: dict[tuple[tuple[int | str, ...] | None, str], float] = {}
    out = []
    for m, spec in enumerate(specs):
        spec = spec.resolved(X.shape[1], names, f"features of kernel {m} ({spec.label or spec.function.name})")
        function = spec.function
        if not (isinstance(function, WidthKernel) and function.relative_to is not None):
            out.append(spec.fitted(X))
            continue
        key = (spec.features, function.metric)
        if key not in medians:
            medians[key] = median_distance(spec.columns(X), function.metric)
        out.append(attrs.evolve(spec, function=function.at_distance(medians[key])))
    return out


def stack_bytes(n_kernels: int, n_rows: int, n_cols: int, dtype: np.dtype | type | str = np.float64) -> int:
    """Bytes of a (M, n_rows, n_cols) stack of ``dtype``."""
    return int(n_kernels) * int(n_rows) * int(n_cols) * np.dtype(dtype).itemsize


def aligned(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``array`` starting on an :data:`ALIGNMENT`-byte boundary.

    numpy's and BLAS's vectorised loops round differently depending on
    where an operand starts in memory, so a kernel computed from equal
    features at two addresses may differ in the last bit.  A fitted model
    keeps its training features aligned, and so does the model loaded from
    its file: their predictions are bit-identical.
    """
    array = np.asarray(array)
    out = empty_aligned(array.shape, array.dtype)
    out[...] = array
    return out


def empty_aligned(shape: tuple[int, ...], dtype: np.dtype | type | str = np.float64) -> np.ndarray:
    """An uninitialised C-contiguous array starting on an :data:`ALIGNMENT`-byte boundary
    (see :func:`aligned`): a training stack starts there in a serial fit and in the file
    a parallel fit shares with its workers (:func:`kernelfuse.runtime.parallel.shared_empty`)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buffer = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -buffer.ctypes.data % ALIGNMENT
    return buffer[start:start + nbytes].view(dtype).reshape(shape)


def check_stack_request(n_kernels: int, X: np.ndarray, Z: np.ndarray | None,
                        dtype: np.dtype | type | str, memory_budget: int | None) -> np.ndarray:
    """The rows ``Z`` (``X`` when None) of a stack of ``n_kernels`` kernels, after the checks
    made before allocating it: 2-D features of one width, finite, a stack within the budget
    (None: :func:`kernelfuse.runtime.memory.default_memory_budget`; ``X`` and ``Z`` of one array
    library: NumPy, or on a device)."""
    from kernelfuse.runtime.memory import default_memory_budget

    if memory_budget is None:
        memory_budget = default_memory_budget()
    xp = array_backend.namespace(X)
    if xp is None:
        rows = X if Z is None else np.asarray(Z, dtype=np.float64)
        finite = bool(np.isfinite(X).all() and np.isfinite(rows).all())
    else:
        rows = X if Z is None else xp.astype(Z, xp.float64)
        finite = bool(xp.all(xp.isfinite(X))) and bool(xp.all(xp.isfinite(rows)))
    if X.ndim != 2 or rows.ndim != 2 or rows.shape[1] != X.shape[1]:
        raise ValidationError(
            f"feature matrices must be 2-D with the same number of columns, got {X.shape} "
            f"and {rows.shape}"
        )
    if not finite:
        raise ValidationError("features contain NaN or inf")
    need = stack_bytes(n_kernels, rows.shape[0], X.shape[0], dtype)
    if need > memory_budget:
        raise ValidationError(
            f"the kernel stack needs {readable_bytes(need, exact=True)} ({n_kernels} kernels of "
            f"{rows.shape[0]} x {X.shape[0]}, {np.dtype(dtype).name}), over the memory budget of "
            f"{readable_bytes(memory_budget, exact=True)}; use fewer kernels or "
            "samples, float32, or raise memory_budget"
        )
    return rows


def compute_kernels(
    specs: Sequence[KernelSpec],
    X: np.ndarray,
    Z: np.ndarray | None = None,
    *,
    dtype: np.dtype | type = np.float64,
    memory_budget: int | None = None,
) -> np.ndarray:
    """The stack ``K[m] = specs[m](Z, X)``: shape (M, len(Z), len(X)), Z defaulting to X.

    Raises :class:`ValidationError` before allocating when the stack would
    exceed ``memory_budget`` bytes (None: half the memory available,
    :func:`kernelfuse.runtime.memory.default_memory_budget`), saying how much it needs.  Features of another
    array library (CuPy, PyTorch: ``X`` and ``Z`` on one device) give a stack of that library
    on that device (``dtype`` float32 or float64), each kernel computed there in float64.
    """
    xp = array_backend.namespace(X)
    if xp is not None:
        return _compute_on_device(xp, specs, xp.astype(X, xp.float64), Z, dtype, memory_budget)
    X = np.asarray(X, dtype=np.float64)
    rows = check_stack_request(len(specs), X, Z, dtype, memory_budget)
    K = np.empty((len(specs), rows.shape[0], X.shape[0]), dtype=dtype)
    for m, spec, pairs in _specs_with_pairs(specs, rows, X):
        K[m] = spec.function.on_pairwise(pairs)
    return K


def _specs_with_pairs(specs: Sequence[KernelSpec], rows: Any, X: Any) -> Iterator[tuple[int, KernelSpec, Any]]:
    """Each spec with its pairwise quantities of ``rows`` and ``X``; consecutive specs on one
    feature subset share them."""
    pairs, features = None, object()
    for m, spec in enumerate(specs):
        if spec.features != features:
            pairs, features = spec.pairwise(rows, X), spec.features
        yield m, spec, pairs


def _compute_on_device(xp: Any, specs: Sequence[KernelSpec], X: Any, Z: Any, dtype: np.dtype | type,
                       memory_budget: int | None) -> Any:
    """:func:`compute_kernels` for features ``X`` (float64) of the array namespace ``xp``."""
    rows = check_stack_request(len(specs), X, Z, dtype, memory_budget)
    target = getattr(xp, np.dtype(dtype).name)
    K = array_backend.zeros(X, (len(specs), rows.shape[0], X.shape[0]), target)
    for m, spec, pairs in _specs_with_pairs(specs, rows, X):
        K[m, ...] = xp.astype(spec.function.on_device(pairs), target)
    return K


def with_constant_kernel(K: np.ndarray, value: float = 1.0) -> np.ndarray:
    """``K`` (M, n, N) with a constant kernel ``value`` appended: a bias for families without an
    intercept (``mikl``, ``pnorm_mkl``); the model's last kernel is then the bias."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 3:
        raise ValidationError(f"K must have shape (M, n, N), got {K.shape}")
    return np.concatenate([K, np.full((1, *K.shape[1:]), float(value))])
