"""Kernel rows on demand: a kernel set on the training points without its N x N stack.

Stochastic solvers read one example's rows ``K_m[i, :]`` at a time (OBSCURE section 3.1).
:class:`SpecKernelRows` computes them from kernel specs and the training features when asked,
normalised as the stack would be, so memory stays O(M N) plus a bounded cache of recent rows
(near convergence the same margin violators come back every epoch).  A :class:`KernelRows` goes
wherever a stack goes: solvers whose parts declare ``reads_kernel_rows`` use it, the others
refuse it by name.  The objective reads only the rows of non-zero coefficients
(:meth:`KernelRows.products`).  Rows are not checked for PSD (specs of PSD functions give PSD
kernels); a function with explicit features gives a row as ``Phi @ phi(x_i)``, ``O(N r)``.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec, Pairwise
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.runtime.parallel import blas_threads, large_product_threads
from kernelfuse.validation import count, positive_count

#: Bytes of the row sets one product of :meth:`SpecKernelRows.prefetch` computes.
PREFETCH_BYTES = 64 * 2**20
#: Buffers of dropped row sets kept for reuse at most (each dropped set is reused by the next
#: one computed, so a few suffice).
_SPARE_ROW_SETS = 64


class KernelRows(ABC):
    """``M`` kernels on ``N`` training points, read row by row."""

    #: ``(M, N, N)``, the shape of the stack it stands for.
    shape: tuple[int, int, int]
    ndim = 3

    @abstractmethod
    def rows(self, i: int) -> np.ndarray:
        """``K_m[i, :]`` for every kernel: shape (M, N)."""

    @abstractmethod
    def diagonal(self) -> np.ndarray:
        """``K_m[i, i]``: shape (M, N)."""

    def entries(self, indices: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``K_m[indices, columns]`` for every kernel: shape (M, len(indices), len(columns))
        (here: from the row sets)."""
        return np.stack([self.rows(int(i))[:, columns] for i in indices], axis=1)

    def prefetch(self, indices: np.ndarray) -> None:  # noqa: B027 (a no-op default, not abstract)
        """Prepare the rows of ``indices``, about to be read (here: nothing; rows computed in
        blocks override it)."""

    def row_block(self, indices: np.ndarray) -> np.ndarray:
        """The row sets of ``indices`` together: shape (B, M, N)."""
        return np.stack([self.rows(int(i)) for i in indices])

    def products(self, coef: np.ndarray) -> np.ndarray:
        """``K_m @ coef_m`` for every kernel (and output), reading the rows of non-zero coefficients
        by blocks of at most :data:`PREFETCH_BYTES` (one matrix product per kernel and block)."""
        M, N = coef.shape[0], coef.shape[-1]
        flat = coef.reshape(M, -1, N)  # (M, C, N)
        out = np.zeros(flat.shape)
        nonzero = np.flatnonzero(np.any(flat != 0, axis=(0, 1)))
        step = max(1, PREFETCH_BYTES // (8 * M * N))
        for start in range(0, nonzero.size, step):
            block = nonzero[start:start + step]
            out += np.matmul(flat[:, :, block], self.row_block(block).transpose(1, 0, 2))
        return out.reshape(coef.shape)


def _spec_list(specs: Iterable[KernelSpec]) -> list[KernelSpec]:
    return list(specs)


def _float64(X: object) -> np.ndarray:
    return np.asarray(X, dtype=np.float64)


@attrs.define(eq=False)
class SpecKernelRows(KernelRows):
    """Rows of ``specs`` on the training features ``X``, normalised (fitted on ``X``) when read."""

    specs: Sequence[KernelSpec] = attrs.field(converter=_spec_list)
    X: np.ndarray = attrs.field(converter=_float64)
    normalization: str = "unit-trace"
    #: Bytes of recently read row sets kept (least recently used dropped first); 0: none.
    cache_bytes: int = count.field(512 * 2**20)
    #: BLAS threads for computing rows (one product per feature subset over all N points);
    #: None: :func:`~kernelfuse.runtime.parallel.large_product_threads` (the cores this process may
    #: use, one inside parallel jobs): two threads share the products well (docs/parallel.md).
    blas_threads: int | None = positive_count.or_none("the cores this process may use").field(None)

    def __attrs_post_init__(self) -> None:
        if self.X.ndim != 2 or not np.isfinite(self.X).all():
            raise ValidationError(f"X must be a finite 2-D feature matrix, got shape {self.X.shape}")
        if not self.specs:
            raise ValidationError("kernel rows need at least one kernel spec")
        normalizer = KernelNormalizer(self.normalization).fit(self.specs, self.X)
        N = self.X.shape[0]
        self.shape = (len(self.specs), N, N)
        self._scales = normalizer.training_scales()  # K_m[i, j] = s_mi k_m(x_i, x_j) s_mj
        self._diagonal = normalizer.train_diagonal_ * self._scales**2
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cache_size = self.cache_bytes // (8 * len(self.specs) * N)  # row sets it holds
        # Buffers of row sets the cache dropped and nothing else holds, reused for the next rows
        # computed: memory mapped fresh costs more than the rows' arithmetic (docs/scaling.md).
        self._spare: list[np.ndarray] = []
        self._work: np.ndarray | None = None  # :meth:`_workspace`
        # Each feature subset once, contiguous, with its squared norms: a row costs one
        # matrix-vector product per subset.
        self._subsets: dict[tuple[int | str, ...] | None, tuple[np.ndarray, np.ndarray]] = {}
        for spec in self.specs:
            if spec.features not in self._subsets:
                columns = np.ascontiguousarray(spec.columns(self.X))
                self._subsets[spec.features] = (columns, np.einsum("ij,ij->i", columns, columns))
        # Kernels given by explicit features (Nystrom, random features): phi of the training
        # points once, so that a row is one (N, r) x (r,) product instead of r features of N points.
        self._feature_maps = {
            m: np.ascontiguousarray(spec.function.features(self._subsets[spec.features][0]))
            for m, spec in enumerate(self.specs) if callable(getattr(spec.function, "features", None))
        }

    def rows(self, i: int) -> np.ndarray:
        """The row set of example ``i`` (read-only: it may be shared with the cache)."""
        cached = self._cache.get(i)
        if cached is not None:
            self._cache.move_to_end(i)
            return cached
        out = self._compute(np.array([i]))[0]
        self._keep(i, out)
        return out

    def entries(self, indices: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``K_m[indices, columns]`` computed for those entries only (``O(M B C)`` work for B
        indices and C columns, where their row sets are ``O(M B N)``)."""
        out = np.empty((len(self.specs), len(indices), len(columns)))
        for m, values in self._kernel_values(indices, columns):
            np.multiply(values, np.outer(self._scales[m, indices], self._scales[m, columns]), out=out[m])
        return out

    def prefetch(self, indices: np.ndarray) -> None:
        """Compute the row sets of ``indices`` not in the cache together and cache them.

        One matrix-matrix product per feature subset reads the training
        features once for a block of rows, where row by row reads them once
        per row (measured: docs/scaling.md).  A block takes at most
        :data:`PREFETCH_BYTES` (larger requests are split), so memory stays
        within the cache plus one block.  Nothing happens when the cache
        cannot hold the rows asked for."""
        missing = self._missing(indices)
        if not missing or len(missing) > self._cache_size:
            return
        step = max(1, PREFETCH_BYTES // (8 * len(self.specs) * self.shape[1]))
        for start in range(0, len(missing), step):
            block = missing[start:start + step]
            for i, out in zip(block, self._compute(np.array(block))):
                self._keep(i, out)

    def row_block(self, indices: np.ndarray) -> np.ndarray:
        """The row sets of ``indices`` (B, M, N): those in the cache from it, the others computed
        together and not cached (a one-off read, such as the objective's, would evict the rows
        an epoch comes back to)."""
        wanted = [int(i) for i in indices]
        missing = self._missing(wanted)
        computed = dict(zip(missing, self._compute(np.array(missing, dtype=int)))) if missing else {}
        return np.stack([computed[i] if i in computed else self._cache[i] for i in wanted])

    def _missing(self, indices: Iterable[int]) -> list[int]:
        """The distinct examples of ``indices`` whose rows are not in the cache, in order."""
        return [i for i in dict.fromkeys(int(i) for i in indices) if i not in self._cache]

    def _keep(self, i: int, out: np.ndarray) -> None:
        if self._cache_size > 0:
            out.flags.writeable = False
            self._cache[i] = out
            if len(self._cache) > self._cache_size:
                _, dropped = self._cache.popitem(last=False)
                # Its buffer is reused only if nothing else holds it or a view of it: CPython's
                # reference count is then 2, ``dropped`` and getrefcount's argument.
                if sys.getrefcount(dropped) == 2 and len(self._spare) < _SPARE_ROW_SETS:
                    self._spare.append(dropped)

    def _buffer(self) -> np.ndarray:
        """An (M, N) buffer for one row set: a recycled one, else fresh memory."""
        if self._spare:
            buffer = self._spare.pop()
            buffer.flags.writeable = True
            return buffer
        return np.empty((len(self.specs), self.shape[1]))

    def _compute(self, indices: np.ndarray) -> list[np.ndarray]:
        """The row sets of ``indices``, each its own (M, N) array (so that the cache frees a row
        set when it drops it, not when it has dropped every row set of its block).

        Every intermediate of the block (inner products, squared distances, one kernel's
        values) is written into the same three (B, N) work arrays, kept between blocks: a
        temporary of that size is mapped fresh by the allocator each time, and at N = 7,494
        first touches cost more than the arithmetic."""
        threads = self.blas_threads or large_product_threads()
        if threads == 1:
            return self._compute_rows(indices)
        with blas_threads(threads):
            return self._compute_rows(indices)

    def _compute_rows(self, indices: np.ndarray) -> list[np.ndarray]:
        out = [self._buffer() for _ in indices]
        workspace = self._workspace(len(indices))
        for m, values in self._kernel_values(indices, None, workspace):
            # Normalised as written: s_mj for the columns once for the block, then s_mi per row
            # (one write of each row set, where scaling it afterwards read and wrote it twice more).
            values *= self._scales[m]
            for rows, scale, row in zip(out, self._scales[m, indices], values):
                np.multiply(row, scale, out=rows[m])
        return out

    def _kernel_values(self, indices: np.ndarray, columns: np.ndarray | None,
                       workspace: tuple[np.ndarray, ...] | None = None
                       ) -> Iterator[tuple[int, np.ndarray]]:
        """``(m, k_m(x_indices, x_columns))`` for every kernel, not normalised (``columns``
        None: every training point).  Consecutive specs on one feature subset share its
        inner products and distances; with ``workspace`` (four arrays of the result's shape)
        everything is written there, the values of each kernel into the fourth (valid until
        the next is yielded)."""
        values = None if workspace is None else workspace[3]
        pairs: Pairwise  # set at the first spec that is not a feature map: features starts unlike any spec's
        features: object = object()
        for m, spec in enumerate(self.specs):
            if m in self._feature_maps:
                phi = self._feature_maps[m]
                right = phi if columns is None else phi[columns]
                yield m, np.matmul(phi[indices], right.T, out=values)
                continue
            if spec.features != features:
                X, sqnorms = self._subsets[spec.features]
                if columns is not None:
                    X, sqnorms = X[columns], sqnorms[columns]
                source = self._subsets[spec.features][0]
                pairs = Pairwise(source[indices], X, sqnorms, None if workspace is None else workspace[:3])
                features = spec.features
            if values is None:
                yield m, spec.function.on_pairwise(pairs)
            else:
                yield m, spec.function.on_pairwise_into(pairs, values)

    def _workspace(self, n_rows: int) -> tuple[np.ndarray, ...]:
        """Four (n_rows, N) work arrays: views of buffers kept for the largest block so far."""
        if self._work is None or self._work.shape[1] < n_rows:
            self._work = np.empty((4, n_rows, self.shape[1]))
        return tuple(self._work[:, :n_rows])

    def diagonal(self) -> np.ndarray:
        return self._diagonal


def kernel_rows(K: np.ndarray | KernelRows, i: int) -> np.ndarray:
    """``K_m[i, :]`` for every kernel, from a stack or from rows."""
    return K.rows(i) if isinstance(K, KernelRows) else K[:, i, :]


def kernel_entries(K: np.ndarray | KernelRows, indices: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``K_m[indices, columns]`` for every kernel, from a stack or from rows:
    shape (M, len(indices), len(columns))."""
    return K.entries(indices, columns) if isinstance(K, KernelRows) else K[:, indices][:, :, columns]


def kernel_diagonal(K: np.ndarray | KernelRows) -> np.ndarray:
    """``K_m[i, i]``, shape (M, N), from a stack (NumPy, or on a device) or from rows."""
    from kernelfuse.kernels import array_backend

    if isinstance(K, KernelRows):
        return K.diagonal()
    return array_backend.diagonals(K) if array_backend.is_device_array(K) else np.diagonal(K, axis1=1, axis2=2)
