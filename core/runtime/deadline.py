"""The solve's deadline, seen by every inner loop without passing it through each part.

:meth:`kernelfuse.assembly.outer_loop.OuterLoop.run` opens :func:`deadline` for its
``time_limit``; inner solvers and line searches ask :func:`expired` between their steps and stop
early with what they have.  Where a model already exists (inside :func:`cuttable`), :func:`check`
raises :class:`DeadlineReached` once it has passed, so the run ends with status ``time_limit``
and its best model within one inner solve of the limit.  The deadline is a
:class:`contextvars.ContextVar`: solves in other threads keep their own, jobs
:func:`kernelfuse.runtime.parallel.map_jobs` runs in threads get a copy, and a nested
:func:`deadline` can only bring it closer (docs/reliability.md, limits).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float] = ContextVar("kernelfuse_deadline", default=math.inf)
_CUTTABLE: ContextVar[bool] = ContextVar("kernelfuse_cuttable", default=False)


class DeadlineReached(Exception):
    """Raised by an oracle call made after the solve's deadline (caught by the outer loop)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Inner loops stop ``seconds`` from now (or at an enclosing deadline, if sooner)."""
    token = _DEADLINE.set(min(_DEADLINE.get(), time.perf_counter() + seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextmanager
def cuttable() -> Iterator[None]:
    """Work that :func:`check` may abandon at the deadline (a model exists outside it)."""
    token = _CUTTABLE.set(True)
    try:
        yield
    finally:
        _CUTTABLE.reset(token)


def check() -> None:
    """Raise :class:`DeadlineReached` when the deadline has passed inside :func:`cuttable` work."""
    if _CUTTABLE.get() and expired():
        raise DeadlineReached


def remaining() -> float:
    """Seconds left before the deadline (``inf`` without one; negative once passed)."""
    return _DEADLINE.get() - time.perf_counter()


def expired() -> bool:
    """Whether the deadline has passed."""
    return remaining() <= 0.0
