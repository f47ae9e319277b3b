"""What the fuzz suite (tests/project/test_fuzz.py) accepts as the outcome of a hostile input.

An entry point given anything must end in one of two ways, within
:data:`HANG_SECONDS`:

* a clear error: a :class:`~kernelfuse.KernelfuseError`, or the plain
  ``ValueError``/``TypeError`` scikit-learn's input validation raises, with a
  message (never an ``IndexError``, ``KeyError``, ``ZeroDivisionError``,
  ``LinAlgError``, ... escaping from inside);
* a correct result: a status of :data:`kernelfuse.assembly.result.STATUSES`, a finite
  objective, and, when it says ``converged`` with a certified lower bound,
  a gap within its tolerance.
"""

from __future__ import annotations

import contextlib
import math
import signal
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernelfuse.assembly.result import STATUSES, Result
from kernelfuse.errors import KernelfuseError

#: An entry point taking longer than this on a fuzz input counts as a hang.
HANG_SECONDS = 60


class Hang(AssertionError):
    """An entry point ran past :data:`HANG_SECONDS`."""


@contextlib.contextmanager
def no_hang(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Fail with :class:`Hang` when the body runs longer than ``seconds`` (SIGALRM)."""
    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def is_clear_error(exc: BaseException, scikit_learn: bool = True) -> bool:
    """A kernelfuse error with a message; with ``scikit_learn`` (an estimator's call) also a plain
    ValueError/TypeError, scikit-learn's own checks."""
    clear = isinstance(exc, KernelfuseError) or (scikit_learn and type(exc) in (ValueError, TypeError))
    return clear and bool(str(exc).strip())


def outcome(call: Callable[[], Any], scikit_learn: bool = True) -> Any:
    """Run ``call``; return its value or the clear error it raised; fail on anything else
    (``scikit_learn=False``: a call of kernelfuse's own API, where only its errors are clear)."""
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call()
        except Hang:
            raise
        except Exception as exc:  # noqa: BLE001 - sorting every exception is the point
            if not is_clear_error(exc, scikit_learn):
                raise AssertionError(f"unclear failure {type(exc).__name__}: {exc}") from exc
            return exc


#: The largest gap a ``converged`` result stopping on its gap may report (every
#: solver's default tolerance is at most 1e-4).
GAP_BOUND = 1e-3


def check_result(result: Result, stops_on_gap: bool) -> None:
    """A result that is correct as far as it can be checked without a reference solver."""
    assert result.status in STATUSES, result.status
    if result.status == "diverged":
        return
    assert math.isfinite(result.objective), f"status {result.status} with objective {result.objective}"
    assert np.isfinite(result.coef).all() and math.isfinite(result.intercept)
    if result.status == "converged" and stops_on_gap:
        assert result.gap <= GAP_BOUND, f"converged with gap {result.gap:.3g}"
