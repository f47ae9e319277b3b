"""Where a training kernel stack lives: in memory, memory-mapped on disk, rows on demand, or factors.

The ``(M, N, N)`` stack costs ``8 M N^2`` bytes in float64, half in float32.  Four storages stand
behind the kinds of kernels a solver reads: ``factors``
(:class:`~kernelfuse.kernels.factors.FactorKernels`, ``N r`` numbers a kernel, when every kernel
has explicit features), ``memory`` (a numpy array filled by blocks of rows,
:func:`training_stack`), ``memmap`` (a file written the same way, paged by the operating system,
so a stack larger than RAM works at the disk's speed) and ``rows``
(:class:`~kernelfuse.kernels.rows.SpecKernelRows`, ``O(M N)`` memory plus a bounded cache).
:func:`choose_storage` picks one from a memory budget and says why (docs/scaling.md).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec, check_stack_request, compute_kernels, stack_bytes
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.runtime.memory import readable_bytes
from kernelfuse.runtime.parallel import effective_n_jobs, map_jobs, shared_with_jobs

#: The storages, in the order :func:`choose_storage` prefers them.
STORAGES = ("factors", "memory", "rows", "memmap")
#: The element types of a stored stack.
DTYPES = ("float64", "float32")
#: Bytes of one block of rows while a stack is written, or test kernels computed.
BLOCK_BYTES = 64 * 2**20
#: The fewest rows a kernel block of :func:`compute_kernels_blocked` gets (while there are
#: that many): OpenBLAS takes a product of one row to another routine (gemv), whose last bits
#: differ from the full product's (gemm); blocks of 64 rows or more measured bit-identical.
MIN_BLOCK_ROWS = 64


@attrs.frozen
class StorageChoice:
    """The storage picked and why (the estimators print it with ``verbose`` and keep it)."""

    storage: str
    reason: str


def choose_storage(n_kernels: int, n_samples: int, *, memory_budget: int | None = None,
                   reads_rows: bool = False, factors: bool = False, dtype: str = "float64",
                   folder: str | os.PathLike[str] | None = None) -> StorageChoice:
    """``factors`` when ``factors`` (every kernel has explicit features and the solver reads
    them); else ``memory`` when the stack of ``dtype`` fits ``memory_budget``; else ``rows``
    when the solver reads rows; else ``memmap`` when ``folder`` (default: the temporary
    folder) has room on disk and the process's address space (``ulimit -v``) room for the
    map.  ``memory_budget`` None: half the memory available
    (:func:`kernelfuse.runtime.memory.default_memory_budget`).

    Raises :class:`ValidationError` when none fits, saying what each would need.
    """
    from kernelfuse.runtime.memory import address_space_room, default_memory_budget

    if memory_budget is None:
        memory_budget = default_memory_budget()
    if factors:
        return StorageChoice("factors", "every kernel has explicit features and the solver reads "
                                        f"kernel factors: N x r numbers per kernel instead of {n_samples} x "
                                        f"{n_samples}")
    need = stack_bytes(n_kernels, n_samples, n_samples, dtype)
    size = f"the {dtype} stack ({n_kernels} kernels of {n_samples} x {n_samples}) needs {readable_bytes(need)}"
    if need <= memory_budget:
        return StorageChoice("memory", f"{size}, within the memory budget of {readable_bytes(memory_budget)}")
    if reads_rows:
        return StorageChoice("rows", f"{size}, over the memory budget of {readable_bytes(memory_budget)}; "
                                     "the solver reads kernel rows, computed on demand")
    where = Path(folder) if folder is not None else Path(_temporary_folder())
    free = shutil.disk_usage(where).free
    room = address_space_room()
    if need <= 0.9 * free and (room is None or need <= room):
        return StorageChoice("memmap", f"{size}, over the memory budget of {readable_bytes(memory_budget)}; "
                                       f"memory-mapped in {where} ({readable_bytes(free)} free)")
    half = need // 2
    hint = (f"kernel_dtype='float32' (half the bytes, {readable_bytes(half)}), "
            if dtype == "float64" and (half <= memory_budget or (half <= 0.9 * free and (room is None or half <= room)))
            else "")
    raise ValidationError(
        f"{size}: over the memory budget of {readable_bytes(memory_budget)} and over the "
        + (f"{readable_bytes(free)} free in {where}" if need > 0.9 * free
           else f"{readable_bytes(room or 0)} of address space left to the process (ulimit -v), which a "
                "memory map takes")
        + f"; use {hint}a solver that reads kernel rows "
        "(obscure, pegasos-mkl), low-rank kernels (Nystrom, random Fourier features: kept as "
        "factors), fewer kernels or samples, or raise memory_budget"
    )


def _temporary_folder() -> str:
    import tempfile

    return tempfile.gettempdir()


def is_memory_mapped(array: object) -> bool:
    """Whether ``array`` or an array it views is a ``numpy.memmap`` (``numpy.asarray`` of a
    memory-mapped stack is a plain array viewing the map)."""
    while isinstance(array, np.ndarray):
        if isinstance(array, np.memmap):
            return True
        array = array.base
    return False


def block_rows(n_kernels: int, n_samples: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Rows per block such that a block of the stack takes at most ``block_bytes`` (at least 1)."""
    return max(1, min(n_samples, block_bytes // max(1, stack_bytes(n_kernels, 1, n_samples))))


def training_stack(specs: Sequence[KernelSpec], X: np.ndarray, out: np.ndarray,
                   normalizer: KernelNormalizer | None = None, *, block_bytes: int = BLOCK_BYTES,
                   n_jobs: int | None = None) -> np.ndarray:
    """Fill ``out`` (M, N, N), of any float dtype, with the training stack of ``specs`` on ``X``.

    Written by blocks of rows (each at most ``block_bytes`` in float64): block
    ``b`` is ``K[:, rows_b, :] = specs(X[rows_b], X)``, normalised as the
    whole stack would be by a ``normalizer`` fitted on ``X`` (its scales are
    per kernel and per training point, so a block normalises alone), then
    stored in ``out``'s dtype.  Beyond ``out``, memory holds one block per worker.
    The blocks are jobs of :func:`~kernelfuse.runtime.parallel.map_jobs` on ``n_jobs``
    workers where the workers write into ``out`` itself (threads, or processes
    mapping the file of :func:`~kernelfuse.runtime.parallel.shared_empty`), else computed
    here one after the other; each block is the same computation either way.
    """
    X = np.asarray(X, dtype=np.float64)
    M, N = len(specs), X.shape[0]
    if out.shape != (M, N, N):
        raise ValidationError(f"the stack of {M} kernels on {N} points needs shape {(M, N, N)}, "
                              f"got {out.shape}")
    if normalizer is not None and normalizer.train_diagonal_ is None:
        raise ValidationError("the stack needs a normalizer fitted on X")
    step = block_rows(M, N, block_bytes)
    method, diagonal = (None, None) if normalizer is None else (normalizer.method, normalizer.train_diagonal_)
    map_jobs(_fill_rows, [(specs, X, diagonal, out, start, min(N, start + step)) for start in range(0, N, step)],
             n_jobs if shared_with_jobs(out, n_jobs) else 1, {"method": method, "block_bytes": block_bytes})
    return out


def _fill_rows(specs: Sequence[KernelSpec], X: np.ndarray, diagonal: np.ndarray | None, out: np.ndarray,
               start: int, stop: int, method: str | None, block_bytes: int) -> None:
    """Rows ``start:stop`` of :func:`training_stack`, normalised by ``method`` from the training
    ``diagonal`` (a job of :func:`~kernelfuse.runtime.parallel.map_jobs`: the arrays are arguments of
    their own, so that each reaches a worker where it starts in the caller)."""
    rows = slice(start, stop)
    block = compute_kernels(specs, X, X[rows], memory_budget=max(block_bytes, stack_bytes(len(specs), 1, len(X))))
    if method is not None and diagonal is not None:  # both or neither (training_stack)
        block = KernelNormalizer(method).fit_diagonal(diagonal).transform(block, specs, X[rows])
    out[:, rows, :] = block


def memmap_stack(specs: Sequence[KernelSpec], X: np.ndarray, path: str | os.PathLike[str],
                 normalizer: KernelNormalizer | None = None, *, dtype: str = "float64",
                 block_bytes: int = BLOCK_BYTES, n_jobs: int | None = None) -> np.memmap:
    """The training stack of ``specs`` on ``X`` (:func:`training_stack`, its blocks on ``n_jobs``
    workers) as a memory-mapped ``.npy`` file of ``dtype`` at ``path``, returned opened read-only."""
    N = np.shape(X)[0]
    out = np.lib.format.open_memmap(os.fspath(path), mode="w+", dtype=dtype, shape=(len(specs), N, N))
    training_stack(specs, X, out, normalizer, block_bytes=block_bytes, n_jobs=n_jobs)
    out.flush()
    del out
    return np.load(os.fspath(path), mmap_mode="r")


def row_blocks(n_rows: int, n_blocks: int, min_rows: int = MIN_BLOCK_ROWS) -> list[slice]:
    """``n_rows`` cut into at most ``n_blocks`` contiguous slices of nearly equal size,
    each of at least ``min_rows`` rows (one slice when there are fewer rows)."""
    n_blocks = max(1, min(int(n_blocks), n_rows // max(int(min_rows), 1)))
    bounds = np.linspace(0, n_rows, n_blocks + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def compute_kernels_blocked(
    specs: Sequence[KernelSpec],
    X: Any,
    Z: Any = None,
    *,
    n_jobs: int | None = None,
    n_blocks: int | None = None,
    dtype: np.dtype | type = np.float64,
    memory_budget: int | None = None,
) -> np.ndarray:
    """:func:`~kernelfuse.kernels.functions.compute_kernels` by row blocks of ``Z``, one job per block.

    The stack ``K[m] = specs[m](Z, X)``, shape (M, len(Z), len(X)), ``Z``
    defaulting to ``X``; blocks of rows of ``Z`` are computed by
    :func:`~kernelfuse.runtime.parallel.map_jobs` (``n_blocks``: by default one per worker) and copied
    into one stack, checked against ``memory_budget`` before anything is
    computed.  Each block has at least :data:`MIN_BLOCK_ROWS` rows.  Equal
    to the one-shot call up to the last bits of a BLAS product (each
    entry is the same dot product, but BLAS picks its kernel by the matrix
    shapes): bit-identical in every case measured with OpenBLAS, not a
    guarantee BLAS makes.  Worth it for large stacks and expensive kernels;
    a stack that fits in memory in one piece costs the same memory here.
    """
    X = np.asarray(X, dtype=np.float64)
    rows = check_stack_request(len(specs), X, Z, dtype, memory_budget)
    workers = effective_n_jobs(n_jobs)
    blocks = row_blocks(rows.shape[0], workers if n_blocks is None else n_blocks)
    if len(blocks) == 1:
        return compute_kernels(specs, X, None if Z is None else rows, dtype=dtype,
                               memory_budget=memory_budget)
    parts = map_jobs(compute_kernels, [(specs, X, rows[block]) for block in blocks], n_jobs,
                     {"dtype": dtype, "memory_budget": memory_budget})
    K = np.empty((len(specs), rows.shape[0], X.shape[0]), dtype=dtype)
    for block, part in zip(blocks, parts):
        K[:, block] = part
    return K

