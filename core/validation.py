"""Input checks: every problem is validated here before a solver sees it, and the parameter domains.

Each check raises :class:`~kernelfuse.errors.ValidationError` naming the problem (which array,
kernel or value), never returns a silently altered input.  Kernels must be symmetric within
``SYMMETRY_TOL`` and PSD within ``PSD_TOL`` (relative; :data:`FLOAT32_TOL` for a float32 stack,
which stays float32).  ``check_psd`` (:data:`CHECK_PSD`) says how hard: ``True`` exactly (an
eigensolver, ``O(M N^3)``), ``"auto"`` by a certificate costing about one read of the stack
(random probes, and a shifted Cholesky of a sampled principal submatrix, which by Cauchy
interlacing refuses no kernel the exact check accepts), ``False`` not for PSD.  What "auto"
misses, measured: docs/reliability.md, "Input checks and their cost".  A read-only in-memory
stack is checked once while it lives (:func:`check_kernels`).  :class:`Domain` checks
solver, part, kernel and estimator parameters by name.
"""

from __future__ import annotations

import math
import mmap
import weakref
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.runtime.bandwidth import run_threaded

SYMMETRY_TOL = 1e-8
#: The largest kernel entry accepted: at 1e50 libsvm's dual overflows (tests/project/test_fuzz.py,
#: docs/reliability.md); every solver was checked at 1e20 and below.
MAX_KERNEL_ENTRY = 1e20
PSD_TOL = 1e-8
#: Symmetry and PSD tolerance of a float32 stack (about 8 float32 roundings).
FLOAT32_TOL = 1e-6
#: Kernels per batched eigensolver call, and the bytes of a batch (bound the temporary memory).
_EIG_BATCH = 64
_EIG_BATCH_BYTES = 512 * 2**20
#: The values of ``check_psd``: exact check, certificate (or nothing, for kernels known PSD), none.
CHECK_PSD = ("auto", True, False)
#: Rows of the principal submatrix the "auto" certificate factorises (all rows when N is smaller).
SAMPLE_ROWS = 96
#: Bytes of kernels read as a group (in a server's shared cache): their certificates factorise at once.
GROUP_BYTES = 16 * 2**20
#: Unit random vectors ``W`` of the symmetry probes: ``W' K_m W`` must be symmetric.
SYMMETRY_PROBES = 4
#: Seed of the rows sampled and of the probes: the same stack gets the same verdict.
_SEED = 0


#: Read-only in-memory stacks already checked, by ``id``: a weak reference to the array, how hard
#: it was checked (:func:`_check_level`) and its largest entry.  An entry leaves with its array.
_CHECKED: dict[int, tuple[weakref.ref[np.ndarray], int, float]] = {}


def _check_level(require_psd: bool, check_psd: str | bool) -> int:
    """How much a check of :func:`check_kernels` establishes: finite entries (0), and symmetry by
    probes (1), the "auto" certificate (2) or exact eigenvalues (3)."""
    return 0 if not require_psd else {False: 1, "auto": 2, True: 3}[check_psd]


def _reusable(K: np.ndarray) -> bool:
    """A stack whose check holds while it lives: read-only through and through (it and every array
    it is a view of, so that no writable view of its memory can exist) and in memory (a
    memory-mapped file may change beneath it)."""
    array: Any = K
    while isinstance(array, np.ndarray):
        if isinstance(array, np.memmap) or array.flags.writeable:
            return False
        array = array.base
    return not isinstance(array, mmap.mmap)


def _known_largest(K: np.ndarray, level: int) -> float | None:
    """The largest entry of ``K`` where a check at least as hard as ``level`` passed on this very
    array while it lived (:data:`_CHECKED`) and it is still read-only; None otherwise."""
    checked = _CHECKED.get(id(K))
    if checked is None or checked[0]() is not K or checked[1] < level or not _reusable(K):
        return None
    return checked[2]


def _remember(K: np.ndarray, level: int, largest: float) -> None:
    """Record a passed check of ``K`` (:data:`_CHECKED`) where it holds while ``K`` lives."""
    if not _reusable(K):
        return
    key = id(K)

    def forget(_: object) -> None:
        _CHECKED.pop(key, None)

    _CHECKED[key] = (weakref.ref(K, forget), level, largest)


def check_psd_value(value: object) -> str | bool:
    """``check_psd`` checked: one of :data:`CHECK_PSD`."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, str) and value == "auto"):
        return value if isinstance(value, str) else bool(value)
    raise ValidationError(
        f"check_psd must be 'auto' (a certificate for a given stack), True (exact "
        f"eigenvalues) or False (kernels known to be PSD), got {value!r}"
    )


def _as_float_array(value: object, what: str) -> np.ndarray:
    try:
        array = np.asarray(value)
    except Exception as exc:
        raise ValidationError(f"{what} is not an array: {exc}") from None
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or array.dtype == bool
    ):
        raise ValidationError(f"{what} must be numeric, got dtype {array.dtype}")
    if np.iscomplexobj(array):
        raise ValidationError(f"{what} must be real, got dtype {array.dtype}")
    return np.asarray(array, dtype=np.float64)


def check_kernels(
    K: object, *, require_psd: bool, check_psd: str | bool = True
) -> tuple[np.ndarray, float]:
    """The kernel stack as float64 (float32 when given float32) of shape (M, N, N), after all
    checks, and its largest entry in magnitude (read by the checks; the solvers' unit scale).

    A single (N, N) matrix is accepted as a stack of one kernel; an in-memory stack that is
    not C-contiguous is copied once into C order.  Kernels must
    be finite and at most :data:`MAX_KERNEL_ENTRY` in magnitude; where
    ``require_psd``, also symmetric and PSD, as hard as ``check_psd`` says
    (see the module docstring).

    A read-only in-memory stack (the estimators' training stacks) is taken as unchanged while
    it lives: checked once as hard as asked, it is not read again by the next check asking no
    more of it (the one-vs-rest classes of a fit, the points of a regularisation path).
    """
    check_psd = check_psd_value(check_psd)
    K = K if isinstance(K, np.ndarray) and K.dtype == np.float32 else _as_float_array(K, "K")
    if not K.flags.c_contiguous and not isinstance(K, np.memmap):
        # One copy in C order: a stack cut by fancy indexing (K[:, rows][:, :, rows], which NumPy
        # lays out transposed) made every kernel pass copy it: SimpleMKL 20x slower (docs/reliability.md).
        K = np.ascontiguousarray(K)
    symmetry_tol, psd_tol = (FLOAT32_TOL, FLOAT32_TOL) if K.dtype == np.float32 else (SYMMETRY_TOL, PSD_TOL)
    shape = K.shape
    if K.ndim == 2:
        K = K[None]
    if K.ndim != 3 or K.shape[1] != K.shape[2]:
        raise ValidationError(
            f"K must have shape (M, N, N) (M kernels on N samples) or (N, N) (one kernel), "
            f"got {shape}"
        )
    if K.shape[0] == 0 or K.shape[1] == 0:
        raise ValidationError(f"K is empty: shape {K.shape}")
    M, N = K.shape[0], K.shape[1]
    level = _check_level(require_psd, check_psd)
    known = _known_largest(K, level)
    if known is not None:
        return K, known
    rows, probes = sample_rows(N), symmetry_probes(N)
    sample = rows[:, None] * N + rows  # the flat indices of the principal submatrix
    exact, certify = require_psd and check_psd is True, require_psd and check_psd == "auto"
    # The probes see asymmetry where the exact check does not run; the extremes see NaN and inf.
    largest, quadratics, exact_asym, flagged = _read_kernels(
        K, probes if require_psd and not exact else None, sample if certify else None, psd_tol, exact)
    bad = np.flatnonzero(~np.isfinite(largest))
    if bad.size:
        raise ValidationError(
            f"K contains NaN or inf in kernel(s) {_list(bad)}"
        )
    bad = np.flatnonzero(largest > MAX_KERNEL_ENTRY)
    if bad.size:
        raise ValidationError(
            f"kernel(s) {_list(bad)} of K have entries up to {largest[bad].max():.6g}, beyond "
            f"{MAX_KERNEL_ENTRY:g}, where the SVM solvers overflow; rescale the kernels (e.g. "
            "unit trace, kernelfuse.kernels.normalization) and C with them"
        )
    if require_psd:
        if exact_asym is not None:
            asym = exact_asym
        else:
            assert quadratics is not None, "the probes are read wherever the exact check is not"
            asym = _asymmetry(quadratics, N, largest)
        bad = np.flatnonzero(asym > symmetry_tol * np.maximum(1.0, largest))
        if bad.size:
            how = "max |K - K'|" if exact else "asymmetry seen by random probes, |v'(K - K')w|"
            raise ValidationError(
                f"kernel(s) {_list(bad)} of K are not symmetric ({how} = "
                f"{asym[bad[0]]:.3g} in kernel {bad[0]}); this family needs symmetric "
                "PSD kernels (only family 'mikl' accepts indefinite ones)"
            )
        if exact or flagged:
            _check_psd(K, psd_tol, np.arange(M) if exact else np.array(flagged))
    _remember(K, level, float(largest.max()))
    return K, float(largest.max())


def _read_kernels(
    K: np.ndarray, probes: np.ndarray | None, sample: np.ndarray | None, psd_tol: float, exact: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, list[int]]:
    """One read of the stack: each kernel's largest ``|K_ij|`` (NaN or inf where it holds NaN
    or inf), its probes' ``W' K_m W`` (None where ``probes`` is None), its ``max |K_m - K_m'|``
    where ``exact`` (else None), and the kernels the certificate on ``sample`` flags (none where
    ``sample`` is None).

    Kernels are read in groups of about :data:`GROUP_BYTES`.  Each kernel is read from memory
    once, by its first pass, its extremes (NumPy's reductions stream memory faster than BLAS's
    product with the few probes); the probes' product then reads it from a core's cache, and
    the group's certificates gather their samples from the shared cache and factorise in one
    call, which releases Python's lock.  Temporaries of a group's samples and N x N per thread
    at most, never of the stack's size (a memory-mapped stack may exceed memory).  Groups are
    read on threads (:func:`~kernelfuse.runtime.bandwidth.run_threaded`): the read is bound by
    memory bandwidth.
    """
    M, N = K.shape[0], K.shape[1]
    P = 0 if probes is None else probes.shape[1]
    largest, flagged = np.empty(M), np.zeros(M, dtype=bool)
    quadratics = None if probes is None else np.empty((M, P, P))
    exact_asym = np.zeros(M) if exact else None
    size = max(1, min(M, GROUP_BYTES // max(1, K[0].nbytes)))

    def read(groups: range) -> None:
        products, buffer = np.empty((N, P)), np.empty((N, N)) if exact else None
        with np.errstate(invalid="ignore", over="ignore"):  # per thread: errstate is thread-local
            for first in (g * size for g in groups):
                group = slice(first, min(M, first + size))
                for m in range(group.start, group.stop):
                    Km = K[m]
                    largest[m] = max(float(Km.max()), -float(Km.min()))  # NaN where Km holds one
                    if not math.isfinite(largest[m]):
                        continue
                    if probes is not None and quadratics is not None:
                        np.matmul(probes.T, np.matmul(Km, probes, out=products), out=quadratics[m])
                    if exact_asym is not None:  # antisymmetric: max = max||
                        exact_asym[m] = np.subtract(Km, Km.T, out=buffer).max()
                finite = np.isfinite(largest[group])
                if sample is not None and finite.any():
                    submatrices, traces = principal_samples(K[group], sample)
                    flagged[group][finite] = samples_fail(submatrices[finite], traces[finite], psd_tol)

    run_threaded(read, -(-M // size), K.nbytes)
    return largest, quadratics, exact_asym, np.flatnonzero(flagged).tolist()


def _asymmetry(quadratics: np.ndarray, n: int, largest: np.ndarray) -> np.ndarray:
    """Per kernel, ``max_ij |w_i' (K - K') w_j|`` from ``quadratics[m] = W' K_m W`` (``W`` the unit
    random probes, length ``n``), less its rounding bound (at least 0).

    ``w_i' E w_j`` for an antisymmetric ``E`` has the scale of ``||E||_F / N``: this sees an
    asymmetry spread over the kernel as the exact check does, one confined to a few entries
    only when ``N`` times larger.  Computing ``w_i' K w_j`` and ``w_j' K w_i`` of a symmetric
    ``K`` differs by at most ``2 N eps |w_i|'|K||w_j| <= 2 N^2 eps max|K|``, subtracted.
    """
    rounding = 2.0 * n**2 * np.finfo(float).eps * largest  # float64 arithmetic
    seen = np.abs(quadratics - quadratics.transpose(0, 2, 1)).max(axis=(1, 2))
    return np.maximum(0.0, seen - rounding)


def sample_rows(n: int) -> np.ndarray:
    """The rows (sorted) of the principal submatrix the "auto" certificate factorises: a
    seeded draw of :data:`SAMPLE_ROWS` of ``n`` (all when fewer), the same for every stack."""
    return np.sort(np.random.default_rng(_SEED).choice(n, min(n, SAMPLE_ROWS), replace=False))


def symmetry_probes(n: int) -> np.ndarray:
    """:data:`SYMMETRY_PROBES` seeded unit random vectors of length ``n``, as columns."""
    probes = np.random.default_rng(_SEED + 1).standard_normal((n, SYMMETRY_PROBES))
    return probes / np.linalg.norm(probes, axis=0)


def principal_samples(kernels: np.ndarray, sample: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The principal submatrices ``K_SS`` of ``kernels`` (B, N, N) at the flat indices ``sample``
    (``S[:, None] * N + S``) as a fresh float64 array (B, |S|, |S|), and the kernels' traces."""
    flat = kernels.reshape(kernels.shape[0], -1)
    submatrices = np.take(flat, sample, axis=1).astype(np.float64, copy=False)
    return submatrices, flat[:, :: kernels.shape[1] + 1].sum(axis=1, dtype=np.float64)


def samples_fail(submatrices: np.ndarray, traces: np.ndarray, tol: float) -> np.ndarray:
    """Per kernel, whether ``K_SS + 2 tol trace(K) I`` has no Cholesky factor (``submatrices``
    the ``K_SS`` of :func:`principal_samples`, shifted here in place).

    Then ``lambda_min(K) <= lambda_min(K_SS) < -2 tol trace(K)`` (Cauchy interlacing), and
    ``K`` may fail the exact check, which decides.  A ``K`` the exact check accepts has
    ``lambda_min >= -tol lambda_max`` and ``lambda_max <= trace(K) (1 + N tol)``: its
    ``K_SS`` shifted so factorises (Cholesky's rounding, about ``|S| eps max|K_SS|``, is far
    below the shift).  One batched factorisation; where it fails, each kernel's own.
    """
    shift = 2.0 * tol * np.maximum(traces, np.finfo(float).tiny)
    diagonal = np.arange(submatrices.shape[1])
    submatrices[:, diagonal, diagonal] += shift[:, None]
    if _factorises(submatrices):
        return np.zeros(submatrices.shape[0], dtype=bool)
    return np.array([not _factorises(one) for one in submatrices])  # which of them fail


def _factorises(matrices: np.ndarray) -> bool:
    """Whether every matrix of ``matrices`` (..., n, n) has a Cholesky factor (NumPy's, batched)."""
    try:
        np.linalg.cholesky(matrices)
    except np.linalg.LinAlgError:
        return False
    return True


def _check_psd(K: np.ndarray, tol: float, kernels: np.ndarray) -> None:
    """The exact check of ``K[kernels]``: smallest eigenvalue against the largest."""
    batch = max(1, min(_EIG_BATCH, _EIG_BATCH_BYTES // max(1, 8 * K.shape[1] ** 2)))
    for start in range(0, kernels.size, batch):
        which = kernels[start : start + batch]
        block = np.asarray(K[which], dtype=np.float64)
        eig = np.linalg.eigvalsh(0.5 * (block + block.transpose(0, 2, 1)))
        for m, lo, hi in zip(which, eig[:, 0], eig[:, -1]):
            check_eigenvalues(int(m), float(lo), float(hi), tol)


def check_eigenvalues(m: int, lo: float, hi: float, tol: float) -> None:
    """Refuse kernel ``m`` whose smallest eigenvalue ``lo`` is below ``-tol`` times its largest
    ``hi`` (the exact PSD check, host and device stacks alike)."""
    if lo < -tol * max(hi, float(np.finfo(float).tiny)):
        raise ValidationError(
            f"kernel {m} of K is not positive semidefinite (smallest eigenvalue "
            f"{lo:.3g}, largest {hi:.3g}; tolerance {tol:g} "
            "relative); this family needs PSD kernels (only family 'mikl' "
            "accepts indefinite ones)"
        )


def _list(indices: np.ndarray, limit: int = 10) -> str:
    shown = ", ".join(str(int(i)) for i in indices[:limit])
    return shown + (f", ... ({indices.size} in all)" if indices.size > limit else "")


def dense_targets(y: Any) -> Any:
    """``y`` as a NumPy array where it is a SciPy sparse matrix or array (a multi-label indicator
    matrix as scikit-learn's ``MultiLabelBinarizer(sparse_output=True)`` gives: N x L numbers,
    few beside the N x N kernels); anything else as it is."""
    from scipy import sparse

    return y.toarray() if sparse.issparse(y) else y


def check_targets(y: object, target: str, n_samples: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Targets checked against ``target``; returns ``(y, classes)``.

    ``binary``: y in {-1, +1}, both present.  ``real``: finite.  ``multiclass``:
    any labels with at least two values, returned as class indices 0..C-1 with
    ``classes`` the sorted labels.  ``multilabel``: Y of shape (N, L) in
    {-1, +1}, each column with both values, dense or SciPy sparse (:func:`dense_targets`).
    """
    y = _as_float_array(dense_targets(y), "y")
    expected_ndim = 2 if target == "multilabel" else 1
    if y.ndim != expected_ndim:
        shape = "(N, L)" if target == "multilabel" else "(N,)"
        raise ValidationError(f"targets must have shape {shape}, got {y.shape}")
    if y.shape[0] != n_samples:
        raise ValidationError(
            f"targets have {y.shape[0]} rows but K has {n_samples} samples"
        )
    if y.size == 0:
        raise ValidationError("targets are empty")
    if not np.isfinite(y).all():
        raise ValidationError("targets contain NaN or inf")
    if target == "real":
        return y, None
    if target == "multiclass":
        classes, index = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValidationError(f"targets have a single class ({classes[0]:g}); need at least 2")
        return index.astype(np.intp), classes
    if target not in ("binary", "multilabel"):
        raise ValueError(f"unknown target kind {target!r}")
    outside = ~np.isin(y, (-1.0, 1.0))
    if outside.any():
        raise ValidationError(
            "labels must be -1 or +1 for this family/loss; found "
            f"{_list(np.unique(y[outside]))}"
        )
    columns = y.reshape(n_samples, -1)
    single = np.flatnonzero(np.ptp(columns, axis=0) == 0)
    if single.size:
        where = "" if target == "binary" else f" in label column(s) {_list(single)}"
        raise ValidationError(
            f"targets have a single class{where}; both -1 and +1 are needed"
        )
    return y, None


def check_sample_weight(sample_weight: object, n_samples: int) -> np.ndarray | None:
    """Per-sample weights ``w`` of the loss, ``sum_i w_i loss(y_i, f_i)``, checked: None (every
    ``w_i = 1``), a number (every sample's weight) or an array of shape (N,), finite, ``>= 0`` and
    not all zero.  Returned as a new float64 array (the caller's is never written)."""
    if sample_weight is None:
        return None
    weights = _as_float_array(sample_weight, "sample_weight")
    if weights.ndim == 0:
        weights = np.full(n_samples, float(weights))
    if weights.shape != (n_samples,):
        raise ValidationError(f"sample_weight must have shape ({n_samples},), one weight per sample, "
                              f"got {weights.shape}")
    if not np.isfinite(weights).all():
        raise ValidationError("sample_weight contains NaN or inf")
    if (weights < 0).any():
        raise ValidationError(f"sample_weight must be >= 0; {int((weights < 0).sum())} are negative "
                              f"(the smallest {weights.min():g})")
    if not (weights > 0).any():
        raise ValidationError("sample_weight is all zero: at least one sample must weigh")
    return weights.copy()


def check_groups(groups: object, n_kernels: int) -> np.ndarray:
    """Group of each kernel, renumbered 0..G-1 in order of first label value."""
    array = np.asarray(groups)
    if array.shape != (n_kernels,):
        raise ValidationError(
            f"groups must have shape ({n_kernels},) (one group per kernel), got {array.shape}"
        )
    if not (np.issubdtype(array.dtype, np.integer) or (
        np.issubdtype(array.dtype, np.floating) and np.isfinite(array).all()
        and np.all(array == np.round(array))
    )):
        raise ValidationError(f"groups must be integers, got {array.dtype} values")
    return np.unique(array, return_inverse=True)[1].astype(np.intp)


# Parameter domains: one check per kind of setting, used by every attrs field of a solver, part
# or kernel (``tol: float = positive.field(1e-6)``) and by every parameter checked outside attrs
# (``positive.check("tol", value)``): the estimators' settings in fit, the kernel grid's.


def _is_real(value: object) -> bool:
    """A real number (not a bool, not text): Python's or numpy's."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _is_integer(value: object) -> bool:
    """An integer (not a bool, not a float of integer value)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@attrs.frozen
class Domain:
    """The values a parameter accepts, and the check that refuses any other by name.

    ``kind`` is ``"real"`` (an int or float, not a bool; returned as float), ``"integer"``
    (an int, not a bool or a float) or ``"flag"`` (True or False); ``accepts`` tests a
    value of that kind (NaN fails every comparison, so every domain below refuses it);
    ``requirement`` says what it accepts, for the message (for a real, its range only:
    "> 0 and finite").  ``none`` (when not empty) admits None and says what it means.
    """

    requirement: str
    accepts: Callable[[Any], bool] = lambda value: True
    kind: str = "real"
    none: str = ""

    def check(self, name: str, value: object) -> Any:
        """``value`` as the domain's type; a :class:`ValidationError` naming ``name``, the value
        and the accepted values otherwise."""
        if value is None and self.none:
            return None
        typed = {"real": _is_real, "integer": _is_integer,
                 "flag": lambda v: isinstance(v, (bool, np.bool_))}[self.kind](value)
        if not (typed and self.accepts(value)):
            wanted = f"a number ({self.requirement})" if self.kind == "real" and not typed \
                else self.requirement
            also = f", or None ({self.none})" if self.none else ""
            raise ValidationError(f"{name} must be {wanted}{also}, got {value!r}")
        return {"real": float, "integer": int, "flag": bool}[self.kind](value)

    def or_none(self, meaning: str) -> Domain:
        """The same domain, also admitting None (which means ``meaning``)."""
        return attrs.evolve(self, none=meaning)

    def field(self, default: Any = attrs.NOTHING, **kwargs: Any) -> Any:
        """An attrs field checked (and converted) by this domain, at creation and assignment."""
        return attrs.field(default=default, converter=attrs.Converter(
            lambda value, field: self.check(field.name, value), takes_field=True), **kwargs)


#: A finite number > 0 (tolerances, step sizes, widths).
positive = Domain("> 0 and finite", lambda v: 0 < v < math.inf)
#: A finite number >= 0.
nonnegative = Domain(">= 0 and finite", lambda v: 0 <= v < math.inf)
#: A number in [0, 1).
below_one = Domain("in [0, 1)", lambda v: 0 <= v < 1)
#: A growth factor of a schedule or step: a finite number >= 1 (non-decreasing).
growth_factor = Domain(">= 1 and finite: a non-decreasing schedule", lambda v: 1 <= v < math.inf)
#: A norm exponent in (1, 2] (p-norm MKL's p).
exponent_in_one_two = Domain("in (1, 2]", lambda v: 1 < v <= 2)
#: 1 or 2 (the MIKL family's p, q, r).
one_or_two = Domain("1 or 2", lambda v: v in (1, 2))
#: A finite number (any sign).
finite = Domain("finite", lambda v: -math.inf < v < math.inf)
#: A time limit in seconds: > 0, inf (the default) for no limit.
seconds = Domain("> 0 seconds (inf: no limit)", lambda v: v > 0)
#: An integer >= 0 (iteration bounds, epochs, bytes).
count = Domain("a non-negative integer", lambda v: v >= 0, kind="integer")
#: An integer >= 1.
positive_count = Domain("a positive integer", lambda v: v >= 1, kind="integer")
#: A random seed: an integer >= 0 (numpy's generators take no other), or None (fresh entropy).
random_seed = Domain("a non-negative integer", lambda v: v >= 0, kind="integer", none="fresh randomness")
#: True or False.
flag = Domain("True or False", kind="flag")
