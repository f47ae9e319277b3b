"""Passes over a large array bound by memory bandwidth, run on threads.

One core does not saturate a machine's memory bandwidth: reading the 1.4 GB breast-cancer stack
(N = 455, M = 837) took 0.35 s on one thread and 0.14 s on two of a 2-core virtual machine
(benchmarks/input_checks.py).  :func:`run_threaded` splits such a pass into interleaved parts,
one thread each, as many as BLAS may use (the user's thread setting, ``OMP_NUM_THREADS`` or
``threadpool_limits``), with BLAS on one thread inside: the parts release the GIL in NumPy and
BLAS.  A small array is one part: a thread's start costs more than it saves there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from threadpoolctl import ThreadpoolController

#: Bytes per thread at least: smaller arrays take fewer threads.
BYTES_PER_THREAD = 64 * 2**20


@functools.cache
def thread_pools() -> ThreadpoolController:
    """threadpoolctl's controller of this process's thread pools, built once: a build scans every
    loaded library (3 to 10 ms, a good part of a small solve's fixed cost); its limits and counts
    are read live.  SciPy's LAPACK is loaded first: its wheels bring their own BLAS, apart from
    NumPy's, which a controller built before it would not limit."""
    import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)

    return ThreadpoolController()


def blas_threads() -> int:
    """The threads BLAS may use now (the most among the BLAS libraries loaded; 1 where none)."""
    return max([lib["num_threads"] for lib in thread_pools().select(user_api="blas").info()], default=1)


def run_threaded(work: Callable[[range], None], n: int, nbytes: int) -> None:
    """``work`` over the items ``range(n)`` of an array of ``nbytes``, split into interleaved
    ranges (``range(t, n, threads)``), each run on its own thread with BLAS on one thread.

    ``work`` must write only its own items' outputs, and set per thread what NumPy keeps per
    thread (``np.errstate``).  An exception in a part is raised here once every part ended."""
    threads = min(n, blas_threads(), max(1, nbytes // BYTES_PER_THREAD))
    with thread_pools().limit(limits=1, user_api="blas"):
        if threads <= 1:
            work(range(n))
            return
        with ThreadPoolExecutor(threads) as pool:
            for part in [pool.submit(work, range(t, n, threads)) for t in range(threads)]:
                part.result()
