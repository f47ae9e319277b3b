"""Where a training kernel stack lives: in memory, memory-mapped on disk, or rows on demand.

The ``(M, N, N)`` stack costs ``8 M N^2`` bytes in float64.  Three storages
stand behind the two kinds of kernels a solver reads
(:class:`~kernelfuse.problem.Problem` takes either):

* ``memory``: a numpy array (:func:`kernelfuse.kernel.compute_kernels`);
* ``memmap``: a ``numpy.memmap`` file written block of rows by block of
  rows (:func:`memmap_stack`), never holding more than one block in RAM.  It
  *is* a numpy array, so every solver reads it unchanged; the operating
  system pages it in and out, so a stack larger than RAM works, at the speed
  of the disk;
* ``rows``: :class:`~kernelfuse.kernel_rows.SpecKernelRows`, one example's
  rows computed from the specs when a solver asks (``O(M N)`` memory plus a
  bounded LRU cache), for the solvers that read rows (``obscure``,
  ``pegasos-mkl``).

:func:`choose_storage` picks one from a memory budget and says why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernel import DEFAULT_MEMORY_BUDGET, KernelSpec, compute_kernels, readable_bytes, stack_bytes
from kernelfuse.kernel_normalization import KernelNormalizer

#: The storages, in the order :func:`choose_storage` prefers them.
STORAGES = ("memory", "rows", "memmap")
#: Bytes of one block of rows while a memory-mapped stack is written, or test kernels computed.
BLOCK_BYTES = 64 * 2**20


@attrs.frozen
class StorageChoice:
    """The storage picked and why (the estimators print it with ``verbose`` and keep it)."""

    storage: str
    reason: str


def choose_storage(n_kernels: int, n_samples: int, *, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                   reads_rows: bool = False, folder: str | os.PathLike[str] | None = None
                   ) -> StorageChoice:
    """``memory`` when the stack fits ``memory_budget``; else ``rows`` when the solver reads
    rows; else ``memmap`` when ``folder`` (default: the temporary folder) has room on disk.

    Raises :class:`ValidationError` when none fits, saying what each would need.
    """
    need = stack_bytes(n_kernels, n_samples, n_samples)
    size = f"the stack ({n_kernels} kernels of {n_samples} x {n_samples}) needs {readable_bytes(need)}"
    if need <= memory_budget:
        return StorageChoice("memory", f"{size}, within the memory budget of {readable_bytes(memory_budget)}")
    if reads_rows:
        return StorageChoice("rows", f"{size}, over the memory budget of {readable_bytes(memory_budget)}; "
                                     "the solver reads kernel rows, computed on demand")
    where = Path(folder) if folder is not None else Path(_temporary_folder())
    free = shutil.disk_usage(where).free
    if need <= 0.9 * free:
        return StorageChoice("memmap", f"{size}, over the memory budget of {readable_bytes(memory_budget)}; "
                                       f"memory-mapped in {where} ({readable_bytes(free)} free)")
    raise ValidationError(
        f"{size}: over the memory budget of {readable_bytes(memory_budget)} and over the "
        f"{readable_bytes(free)} free in {where}; use a solver that reads kernel rows (obscure, "
        "pegasos-mkl), low-rank kernels, fewer kernels or samples, or raise memory_budget"
    )


def _temporary_folder() -> str:
    import tempfile

    return tempfile.gettempdir()


def is_memory_mapped(array: np.ndarray) -> bool:
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


def memmap_stack(specs: Sequence[KernelSpec], X: np.ndarray, path: str | os.PathLike[str],
                 normalizer: KernelNormalizer | None = None, *, block_bytes: int = BLOCK_BYTES
                 ) -> np.memmap:
    """The training stack of ``specs`` on ``X`` as a float64 memory-mapped file at ``path``.

    Written by blocks of rows (each at most ``block_bytes``): block ``b`` is
    ``K[:, rows_b, :] = specs(X[rows_b], X)``, normalised as the whole stack
    would be by a ``normalizer`` fitted on ``X`` (its scales are per kernel
    and per training point, so a block normalises alone).  Returns the
    file opened read-only.
    """
    X = np.asarray(X, dtype=np.float64)
    M, N = len(specs), X.shape[0]
    if normalizer is not None and normalizer.train_diagonal_ is None:
        raise ValidationError("memmap_stack needs a normalizer fitted on X")
    out = np.lib.format.open_memmap(os.fspath(path), mode="w+", dtype=np.float64, shape=(M, N, N))
    step = block_rows(M, N, block_bytes)
    for start in range(0, N, step):
        rows = slice(start, min(N, start + step))
        block = compute_kernels(specs, X, X[rows], memory_budget=max(block_bytes, stack_bytes(M, 1, N)))
        if normalizer is not None:
            block = normalizer.transform(block, specs, X[rows])
        out[:, rows, :] = block
    out.flush()
    del out
    return np.load(os.fspath(path), mmap_mode="r")
