"""The Dask cluster a distributed solve runs on: the connected client, one at an address, or
worker processes on this machine (:func:`local_cluster`).

Dask (``dask[distributed]``, the ``dask`` extra) is imported here on use only: the rest of
kernelfuse never needs it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kernelfuse.errors import ValidationError

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

#: Seconds to wait for a scheduler to answer before saying it cannot be reached.
CONNECT_TIMEOUT = 10.0


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - the test extra installs it
        raise ValidationError("a distributed solve needs Dask's distributed scheduler: "
                              "pip install 'kernelfuse[dask]'") from None
    return distributed


#: Dask's worker-environment setting that kernelfuse's own clusters leave unset: glibc's
#: ``MALLOC_TRIM_THRESHOLD_``, which Dask's nanny sets (64 KiB) for its workers.  Any such
#: setting turns off glibc's adaptive mmap threshold, so every NumPy temporary over 128 KiB is
#: mapped and unmapped again: twice the workers' system time on a one-vs-rest fit
#: (docs/parallel.md, "Dask on 16 workers").
MALLOC_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


def local_cluster(n_workers: int, malloc_trim: bool = False, **kwargs: Any) -> LocalCluster:
    """A ``distributed.LocalCluster`` of ``n_workers`` single-threaded worker processes on this
    machine, their ``MALLOC_TRIM_THRESHOLD_`` left to glibc (:data:`MALLOC_TRIM`; ``malloc_trim``:
    Dask's setting, for workers short of memory); ``kwargs`` go to ``LocalCluster``.  This
    process's environment is left as it was (Dask's nanny writes its workers' variables into it,
    ``OMP_NUM_THREADS=1`` among them, which would pin this process's later BLAS work to one
    thread)."""
    distributed = _distributed()
    import dask

    environment = dict(os.environ)
    try:
        with dask.config.set({} if malloc_trim else {MALLOC_TRIM: None}):
            return distributed.LocalCluster(**{"n_workers": n_workers, "threads_per_worker": 1,
                                               "dashboard_address": None, **kwargs})
    finally:
        os.environ.clear()
        os.environ.update(environment)


def connected_client() -> Client | None:
    """The ``distributed.Client`` this process is connected to, or None (Dask not installed, or
    no client)."""
    try:
        import distributed
    except ImportError:
        return None
    try:
        return distributed.get_client()
    except ValueError:  # no client
        return None


def client_for(scheduler: str | Client | None, timeout: float = CONNECT_TIMEOUT) -> Client:
    """A client: ``scheduler`` itself, a new one connected to the address ``scheduler``
    (``tcp://host:8786``) within ``timeout`` seconds, or the connected one for None; an
    unreachable address or no client at all is a :class:`ValidationError` saying which."""
    distributed = _distributed()
    if isinstance(scheduler, distributed.Client):
        return scheduler
    if scheduler is None:
        client = connected_client()
        if client is None:
            raise ValidationError("no Dask client is connected: start one (distributed.Client(...)) "
                                  "or name the scheduler's address (scheduler='tcp://host:8786')")
        return client
    if not isinstance(scheduler, str) or not scheduler:
        raise ValidationError(f"scheduler must be a scheduler address such as 'tcp://host:8786', a "
                              f"distributed.Client or None; got {scheduler!r}")
    try:
        return distributed.Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ValidationError(f"scheduler: no Dask scheduler answered at {scheduler} within {timeout:g} s "
                              f"({type(exc).__name__}): check the address and that "
                              "'dask scheduler' runs there") from None
