"""The memory a run may use, and running out of it as a clear error.

The default ``memory_budget`` (the bytes a training kernel stack may take,
:mod:`kernelfuse.kernels.storage`) is :data:`BUDGET_FRACTION` of the memory available to this
process when it is read (:func:`available_memory`: the least of ``MemAvailable``, the cgroup's
limit less its usage and the address-space limit less the process's size; else
:data:`FALLBACK_BUDGET`).  Half, because the solvers keep a combined kernel, gradients and
workspace beside the stack.  A ``MemoryError`` in a solve or a fit becomes a
:class:`~kernelfuse.errors.SolverError` (:func:`out_of_memory`) naming what was being allocated
and the memory available.  Details: docs/scaling.md, the default memory budget.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import resource
import traceback
from pathlib import Path
from types import TracebackType

import numpy as np

from kernelfuse.errors import SolverError

#: Byte alignment of the arrays whose rounding must not depend on their address: the training
#: features a fitted model keeps (:func:`kernelfuse.kernels.functions.aligned`), a job's arrays.
ALIGNMENT = 64
#: The share of the available memory the default budget allows a kernel stack.
BUDGET_FRACTION = 0.5
#: The budget where the available memory cannot be read (8 GiB).
FALLBACK_BUDGET = 8 * 2**30


def _meminfo(path: str, key: str) -> int | None:
    """The value of ``key`` (kB) in a ``/proc`` file of ``key: value kB`` lines, in bytes."""
    try:
        with open(path) as stream:
            for line in stream:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """The cgroup v2 limit less its usage, or None (no cgroup limit, or not readable)."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        return None


def address_space_room() -> int | None:
    """``RLIMIT_AS`` less the process's virtual size, or None (no limit): a memory map counts
    against it too."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(0, soft - (_meminfo("/proc/self/status", "VmSize") or 0))


def _physical_available() -> int | None:
    """``MemAvailable``, else the available physical pages of ``os.sysconf``, or None."""
    available = _meminfo("/proc/meminfo", "MemAvailable")
    if available is not None:
        return available
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def available_memory() -> int | None:
    """Bytes this process can still allocate (the module docstring's rule), or None."""
    rooms = [room for room in (_physical_available(), _cgroup_room(), address_space_room())
             if room is not None]
    return min(rooms) if rooms else None


def default_memory_budget() -> int:
    """:data:`BUDGET_FRACTION` of :func:`available_memory`, or :data:`FALLBACK_BUDGET`."""
    available = available_memory()
    return FALLBACK_BUDGET if available is None else int(BUDGET_FRACTION * available)


def _kernelfuse_folders() -> tuple[str, ...]:
    """The folders of kernelfuse and of its built-in plugins (found without importing them)."""
    plugins = importlib.util.find_spec("kernelfuse.plugins")
    found = [] if plugins is None else list(plugins.submodule_search_locations or [])
    return tuple(str(Path(folder).resolve()) for folder in [str(Path(__file__).parents[1]), *found])


def _frame(frame: traceback.FrameSummary) -> str:
    return f"{frame.name} ({Path(frame.filename).name}:{frame.lineno}: {(frame.line or '').strip()})"


def _allocation_site(trace: TracebackType | None) -> str:
    """`` in f (file:line: code), called from g (...)``: the last two kernelfuse frames of
    ``trace`` (the allocation and what it was for), and the innermost frame where it is
    another library's."""
    frames = traceback.extract_tb(trace)
    if not frames:
        return ""
    folders = _kernelfuse_folders()
    ours = [f for f in frames if str(Path(f.filename).resolve()).startswith(folders)] or frames[-1:]
    text = " in " + ", called from ".join(_frame(f) for f in reversed(ours[-2:]))
    if frames[-1] is not ours[-1]:
        text += f", inside {frames[-1].name} of {Path(frames[-1].filename).name}"
    return text


def readable_bytes(n: int, exact: bool = False) -> str:
    """``n`` bytes in the largest binary unit that keeps it at least 1 (``"1.50 GiB"``),
    followed by the exact count where ``exact`` (``"1.50 GiB (1610612736 bytes)"``)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}" + (f" ({int(n)} bytes)" if exact else "")
    return f"{int(n)} bytes"


def is_out_of_memory(exc: BaseException) -> bool:
    """A ``MemoryError``, or an ``OSError`` ENOMEM (a memory map over the address-space limit)."""
    return isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM)


def out_of_memory(exc: MemoryError | OSError, during: str) -> SolverError:
    """The :class:`SolverError` for ``exc`` (:func:`is_out_of_memory`) raised while ``during``
    (``"solver 'cvxpy'"``, ``"MKLClassifier.fit"``): what was being allocated, its size where
    known, where, and the memory available."""
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is not None and dtype is not None:
        size = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
        what = f"an array of shape {tuple(shape)} and dtype {np.dtype(dtype).name} ({readable_bytes(size)})"
    elif isinstance(exc, OSError):
        what = f"memory ({exc.strerror})"
    elif str(exc):
        what = f"memory ({exc})"
    else:
        what = "memory (size not reported)"
    available = available_memory()
    room = "unknown" if available is None else readable_bytes(available)
    return SolverError(
        f"{during} ran out of memory allocating {what}{_allocation_site(exc.__traceback__)}; "
        f"memory available to this process: {room}.  Use fewer kernels or samples, "
        "kernel_dtype='float32', a solver that reads kernel rows or factors, or a machine "
        "with more memory")
