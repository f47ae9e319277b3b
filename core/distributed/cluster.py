"""The Dask cluster a distributed solve runs on: the connected client, or one at an address.

Dask (``dask[distributed]``, the ``dask`` extra) is imported here on use only: the rest of
kernelfuse never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelfuse.errors import ValidationError

if TYPE_CHECKING:
    from distributed import Client

#: Seconds to wait for a scheduler to answer before saying it cannot be reached.
CONNECT_TIMEOUT = 10.0


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - the test extra installs it
        raise ValidationError("a distributed solve needs Dask's distributed scheduler: "
                              "pip install 'kernelfuse[dask]'") from None
    return distributed


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
