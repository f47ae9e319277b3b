"""Independent jobs through joblib, on local cores or a Dask cluster, with the serial results.

:func:`map_jobs` runs work that shares nothing but the kernel stack (one-vs-rest
classes, the labels of a non-shared multi-label fit, row blocks of a stack) on
joblib's active backend; one MKL solve stays serial.  ``n_jobs`` follows
scikit-learn and joblib, and a run on one worker is the plain loop.  Results come
in job order and equal the serial ones bit for bit: each job gets its arrays at
the caller's address offset modulo 64, arrays in a file are mapped rather than
sent (:func:`shared_empty`, :class:`MappedFile`), workers' warnings and exceptions
are re-raised here, and the caller's BLAS is pinned to one thread during a run.
Why each is needed, and what was measured: docs/parallel.md.
:func:`kernelfuse.kernels.storage.compute_kernels_blocked` computes a stack by row blocks, one job per block.
"""

from __future__ import annotations

import contextlib
import contextvars
import copyreg
import mmap
import os
import pickle
import shutil
import socket
import sys
import tempfile
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from typing import Any
from urllib.parse import urlsplit

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.runtime.bandwidth import thread_pools
from kernelfuse.runtime.memory import ALIGNMENT


def check_n_jobs(n_jobs: Any) -> int | None:
    """``n_jobs`` if it is None or a non-zero integer, else a :class:`ValidationError`."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValidationError(
            f"n_jobs must be None (serial unless a joblib.parallel_config says otherwise), "
            f"a positive number of workers, or -1 for all cores (-2 all but one, ...); got {n_jobs!r}"
        )
    return int(n_jobs)


def effective_n_jobs(n_jobs: int | None = None) -> int:
    """How many workers ``n_jobs`` means under the active joblib backend (1: serial)."""
    import joblib

    n_jobs = check_n_jobs(n_jobs)
    if n_jobs == 1:
        return 1
    return max(1, int(joblib.effective_n_jobs(n_jobs)))


def map_jobs(
    function: Callable[..., Any],
    arguments: Iterable[Sequence[Any]],
    n_jobs: int | None = None,
    kwargs: Mapping[str, Any] | None = None,
    prefer: str | None = None,
) -> list[Any]:
    """``[function(*args, **kwargs) for args in arguments]``, the calls run by joblib's workers.

    The results are in the order of ``arguments``; an exception a call
    raises is raised here (the first joblib receives, when several fail).  ``n_jobs`` and the backend: see the module
    docstring.  ``function`` and the arguments must be picklable for a
    process or Dask backend (a module-level function, arrays, attrs objects).
    ``prefer="threads"``: threads of this process unless a
    ``joblib.parallel_config`` backend says otherwise (joblib's soft hint),
    for short jobs on a large shared argument.
    """
    jobs = [tuple(args) for args in arguments]
    kwargs = dict(kwargs or {})
    workers = effective_n_jobs(n_jobs) if len(jobs) > 1 else 1
    if workers == 1:
        return [function(*args, **kwargs) for args in jobs]

    import joblib
    from joblib.parallel import get_active_backend
    backend, _ = get_active_backend(prefer=prefer)
    files = _maps_files(backend)
    # BLAS pinned to one thread in this process, once, around the whole run: jobs run in
    # threads of this process (the threading backend, an in-process Dask cluster) would
    # otherwise enter and leave the solvers' own process-wide (and not thread-safe) limits
    # concurrently, and run with whatever count the last one restored.  Worker processes
    # have their own limits; this process only waits.
    global _PINNED_RUNS
    _PINNED_RUNS += 1
    try:
        with blas_threads(1):
            if getattr(backend, "uses_threads", False):  # the caller's arrays, warnings issued here
                # each job in a copy of this context: the solve's deadline (kernelfuse.runtime.deadline)
                return list(joblib.Parallel(n_jobs=n_jobs, prefer=prefer)(
                    joblib.delayed(contextvars.copy_context().run)(function, *args, **kwargs)
                    for args in jobs
                ))
            outputs = _resubmitting_lost(
                lambda pending: joblib.Parallel(n_jobs=n_jobs, prefer=prefer, return_as="generator")(
                    joblib.delayed(_run_job)(function, kwargs, os.getpid(), _offsets(jobs[k]),
                                             *(_by_file(a) if files else a for a in jobs[k]))
                    for k in pending
                ), len(jobs))
    finally:
        _PINNED_RUNS -= 1
    results = []
    for result, caught in outputs:
        _reissue(caught)
        results.append(result)
    return results


#: How many times :func:`map_jobs` submits again the jobs a lost worker took with it.
RESUBMISSIONS = 3


def lost_worker(exc: BaseException) -> bool:
    """Whether ``exc`` says a worker process died, not that a job failed: Dask's cancelled
    futures (their scattered arguments gone with the worker), its ``KilledWorker`` and closed
    connections, loky's terminated worker."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"FutureCancelledError", "CancelledError", "KilledWorker", "CommClosedError",
                         "TerminatedWorkerError"})


def _resubmitting_lost(run: Callable[[list[int]], Iterable[Any]], count: int) -> list[Any]:
    """The outputs of ``run(pending)`` (one per job index, in order) for the ``count`` jobs:
    where a worker dies mid-run (:func:`lost_worker`), the jobs without an output yet are
    submitted again, up to :data:`RESUBMISSIONS` times; the jobs are independent, so their
    outputs are the ones an undisturbed run gives."""
    outputs: list[Any] = []
    for attempt in range(RESUBMISSIONS + 1):
        pending = list(range(len(outputs), count))
        try:
            for output in run(pending):
                outputs.append(output)
            return outputs
        except Exception as exc:
            if not lost_worker(exc) or attempt == RESUBMISSIONS:
                raise
            import logging

            logging.getLogger(__name__).warning(
                "a worker was lost (%s); submitting the %d unfinished jobs again", type(exc).__name__,
                count - len(outputs))
    return outputs


#: Parallel runs of :func:`map_jobs` under way in this process (BLAS pinned to one thread).
_PINNED_RUNS = 0
#: Variables through which joblib's loky workers and Dask's nanny limit a worker's threads.
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def large_product_threads() -> int:
    """BLAS threads for one large matrix product inside a solve (kernel rows by blocks).

    The solvers pin BLAS to one thread (``OuterLoop.blas_threads``: their
    many small operations stall on thread wake-ups), but a block of kernel
    rows is one product over all N training points, which two threads
    share well.  The count: one while :func:`map_jobs` runs jobs from this
    process (threads of it share the process-wide limit); else the limit a
    worker was started with (joblib's loky workers and Dask's nanny set
    ``OPENBLAS_NUM_THREADS`` and friends); else the cores this process may use.
    """
    if _PINNED_RUNS:
        return 1
    for name in _THREAD_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return usable_cores()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def blas_threads(threads: int) -> Any:
    """A context in which BLAS uses ``threads`` threads (threadpoolctl), restored after."""
    return thread_pools().limit(limits=threads, user_api="blas")


#: Where :func:`shared_empty` puts its files when no folder is given, if it has room: memory.
SHARED_MEMORY_FOLDER = "/dev/shm"


def shares_files(n_jobs: int | None = None) -> bool:
    """Whether a parallel run of ``n_jobs`` would run its jobs in processes of this machine,
    which map the files of :func:`shared_empty` instead of receiving copies: loky (joblib's
    default), multiprocessing, or a Dask cluster whose workers are all on this machine."""
    if effective_n_jobs(n_jobs) == 1:
        return False
    from joblib.parallel import get_active_backend

    return _maps_files(get_active_backend()[0])


def shared_with_jobs(array: np.ndarray, n_jobs: int | None = None) -> bool:
    """Whether the jobs of a parallel run of ``n_jobs`` would see ``array`` itself, so that
    what they write into it reaches the caller: threads of this process, or worker processes
    mapping the file it lives in (:func:`shared_empty`, a ``numpy.memmap``)."""
    if effective_n_jobs(n_jobs) == 1:
        return True
    from joblib.parallel import get_active_backend

    backend = get_active_backend()[0]
    if getattr(backend, "uses_threads", False):
        return True
    return _maps_files(backend) and _by_file(array) is not array


def shared_empty(shape: tuple[int, ...], dtype: np.dtype | type | str = np.float64,
                 folder: str | None = None) -> tuple[np.ndarray, str]:
    """An uninitialised C-contiguous array in a new file, and the file's path.

    The file goes to ``folder``, by default :data:`SHARED_MEMORY_FOLDER` (memory) when it
    has room, else the temporary folder.  :func:`map_jobs` hands such an array to worker
    processes of this machine by the file's name: they map the same pages (nothing is
    copied, nothing is sent), and what a job writes into it the caller reads.  It starts on
    a page boundary (:data:`~kernelfuse.runtime.memory.ALIGNMENT` included) here and in every
    worker, and is a plain array (not a ``numpy.memmap``: solvers treat it as in memory).
    The caller removes the file with :func:`remove_shared` when done (the array stays
    valid); a caller that dies first leaves it to loky's resource tracker, which removes
    it once the caller and its workers have exited.
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if folder is None:
        roomy = (os.path.isdir(SHARED_MEMORY_FOLDER)
                 and shutil.disk_usage(SHARED_MEMORY_FOLDER).free >= nbytes + 2**30)
        folder = SHARED_MEMORY_FOLDER if roomy else tempfile.gettempdir()
    handle, path = tempfile.mkstemp(prefix="kernelfuse-shared-", suffix=".bin", dir=folder)
    try:
        os.ftruncate(handle, max(nbytes, 1))
    finally:
        os.close(handle)
    _resource_tracker().register(path, "file")
    return _map_file(path, 0, tuple(shape), dtype, writeable=True), path


def remove_shared(path: str) -> None:
    """Remove a file of :func:`shared_empty` (the arrays mapping it stay valid)."""
    _resource_tracker().unregister(path, "file")
    with contextlib.suppress(OSError):
        os.remove(path)


def _resource_tracker() -> Any:
    """loky's resource tracker (a process that removes registered files left by a dead caller)."""
    from joblib.externals.loky.backend import resource_tracker

    return resource_tracker


@attrs.frozen
class MappedFile:
    """An array argument of a job sent as the file it lives in (:func:`map_jobs`): the worker
    maps the file (``open``) instead of receiving the bytes.  ``device`` and ``inode`` identify
    the file: a worker that finds another file at ``path`` (on another machine) says so."""

    path: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    writeable: bool
    memory_mapped: bool  # a numpy.memmap in the caller: one in the worker too
    device: int
    inode: int

    def open(self) -> np.ndarray:
        try:
            status = os.stat(self.path)
        except OSError:
            status = None
        if status is None or (status.st_dev, status.st_ino) != (self.device, self.inode):
            raise ValidationError(
                f"a job's array lives in the file {self.path}, which this worker process "
                f"({socket.gethostname()}) does not see: workers on other machines need the "
                "arrays sent (a stack in memory, not in a file)")
        if self.memory_mapped:
            return np.memmap(self.path, dtype=self.dtype, mode="r+" if self.writeable else "r",
                             offset=self.offset, shape=self.shape)
        return _map_file(self.path, self.offset, self.shape, np.dtype(self.dtype), self.writeable)


def _map_file(path: str, offset: int, shape: tuple[int, ...], dtype: np.dtype,
              writeable: bool) -> np.ndarray:
    """``shape`` of ``dtype`` at ``offset`` of the file ``path``, mapped shared (a plain array
    viewing the map), recorded in :data:`_SHARED_FILES` for :func:`_by_file`."""
    count = int(np.prod(shape, dtype=np.int64))
    with open(path, "r+b" if writeable else "rb") as file:
        mapped = mmap.mmap(file.fileno(), offset + max(count * dtype.itemsize, 1),
                           access=mmap.ACCESS_WRITE if writeable else mmap.ACCESS_READ)
    start = np.frombuffer(mapped, dtype=np.uint8, count=1).ctypes.data
    key = id(mapped)
    _SHARED_FILES[key] = (weakref.ref(mapped, lambda _: _SHARED_FILES.pop(key, None)), path, start)
    array = np.frombuffer(mapped, dtype=dtype, count=count, offset=offset).reshape(shape)
    return array


#: The maps :func:`_map_file` made, by id: (the map, its file's path, its first byte's address).
_SHARED_FILES: dict[int, tuple[weakref.ref[mmap.mmap], str, int]] = {}


def _by_file(array: Any) -> Any:
    """A C-contiguous array viewing a file's map (:func:`shared_empty`, a ``numpy.memmap``)
    as a :class:`MappedFile`; anything else as it is."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous or array.dtype.hasobject:
        return array
    top = array
    while isinstance(top.base, np.ndarray):
        top = top.base
    if isinstance(top, np.memmap) and isinstance(top.base, mmap.mmap) and top.filename:
        path, offset = top.filename, top.offset + array.ctypes.data - top.ctypes.data
    else:
        mapped = top.base.obj if isinstance(top.base, memoryview) else None
        known = _SHARED_FILES.get(id(mapped)) if mapped is not None else None
        if known is None or known[0]() is not mapped:
            return array
        path, offset = known[1], array.ctypes.data - known[2]
    status = os.stat(path)
    return MappedFile(path, int(offset), tuple(array.shape), array.dtype.str, bool(array.flags.writeable),
                      isinstance(top, np.memmap), status.st_dev, status.st_ino)


def _maps_files(backend: Any) -> bool:
    """Whether ``backend``'s workers are processes of this machine (which map its files)."""
    if getattr(backend, "uses_threads", False):
        return False
    client = getattr(backend, "client", None)  # joblib's Dask backend
    if client is None:
        return True  # loky, multiprocessing
    local = {"127.0.0.1", "localhost", "::1", socket.gethostname()}
    try:
        local.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    workers = client.scheduler_info().get("workers", {})
    return bool(workers) and all(
        address.startswith("inproc://") or urlsplit(address).hostname in local for address in workers)


def _offsets(args: Sequence[Any]) -> tuple[int | None, ...]:
    """Where each array argument starts in memory, modulo :data:`~kernelfuse.runtime.memory.ALIGNMENT`."""
    return tuple(a.ctypes.data % ALIGNMENT if isinstance(a, np.ndarray) and not a.dtype.hasobject
                 else None for a in args)


def _placed(array: np.ndarray, offset: int | None) -> np.ndarray:
    """``array``, or a C-contiguous copy of it starting at ``offset`` modulo
    :data:`~kernelfuse.runtime.memory.ALIGNMENT`: where it started in the caller's process.

    numpy's vectorised loops round differently depending on where an
    operand starts (:func:`kernelfuse.kernels.functions.aligned`), and arrays arrive in
    a worker wherever its transport put them (Dask's: even at addresses not
    a multiple of 8, measured to change a solve's last bits).  Placed as in
    the caller, a job computes what it computes there.
    """
    if offset is None or not isinstance(array, np.ndarray) or array.ctypes.data % ALIGNMENT == offset:
        return array
    key = (id(array), offset)
    cached = _PLACED.get(key)
    if cached is not None and cached[0]() is array:
        return cached[1]
    buffer = np.empty(array.nbytes + ALIGNMENT, dtype=np.uint8)
    start = (offset - buffer.ctypes.data) % ALIGNMENT
    out = buffer[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    # A Dask worker hands every task the same scattered array: copy it once, for as long as
    # the worker keeps it (loky unpickles a new memory map per job, so nothing is kept there).
    _PLACED[key] = (weakref.ref(array, lambda _: _PLACED.pop(key, None)), out)
    return out


#: Copies made by :func:`_placed`, by (id, offset) of the array they copy, while it lives.
_PLACED: dict[tuple[int, int], tuple[weakref.ref[np.ndarray], np.ndarray]] = {}


def _run_job(function: Callable[..., Any], kwargs: dict[str, Any], caller: int,
             offsets: tuple[int | None, ...], *args: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    """Run one job in a worker, its arrays placed as in the caller (:func:`_placed`); return
    its result and the warnings it raised.  The arrays are separate arguments so that joblib's
    Dask backend scatters each array once for all the jobs sharing it (the kernel stack).

    In the caller's own process (``caller``, its pid: an in-process Dask cluster's worker
    threads) the job just runs: its warnings are issued where the caller sees them, and
    recording them would not be thread-safe."""
    args = tuple(a.open() if isinstance(a, MappedFile) else a for a in args)
    if os.getpid() == caller:
        return function(*args, **kwargs), []
    args = tuple(_placed(a, offset) for a, offset in zip(args, offsets))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the caller's filters decide, when re-issued
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            _make_picklable(exc)
            raise
    return result, [(w.message, w.category, w.filename, w.lineno) for w in caught]


def _make_picklable(exc: BaseException) -> None:
    """Let an exception whose class cannot be rebuilt from its ``args`` (an ``__init__``
    with other parameters) travel back from a worker: pickle it by its class, ``args`` and
    attributes instead.  Without this the worker pool breaks and the error is lost."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        copyreg.pickle(type(exc), _reduce_exception)


def _reduce_exception(exc: BaseException) -> tuple[Any, ...]:
    return _rebuild_exception, (type(exc), exc.args, dict(vars(exc)))


def _rebuild_exception(cls: type[BaseException], args: tuple[Any, ...],
                       state: dict[str, Any]) -> BaseException:
    exc = cls.__new__(cls)
    exc.args = args
    vars(exc).update(state)
    return exc


def _reissue(caught: Sequence[tuple[Any, ...]]) -> None:
    """Issue the warnings a worker recorded here, under this process's filters.

    The module each came from (which ``-W``/``filterwarnings`` entries match)
    is the loaded module with that file, as in the serial run.
    """
    if not caught:
        return
    modules = {getattr(m, "__file__", None): name for name, m in list(sys.modules.items())}
    for message, category, filename, lineno in caught:
        module = modules.get(filename) or filename.removesuffix(".py")
        warnings.warn_explicit(message, category, filename, lineno, module=module)
