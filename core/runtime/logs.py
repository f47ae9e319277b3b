"""kernelfuse's messages: the :mod:`logging` logger ``kernelfuse``, one child per module.

The library prints nothing by itself: the package puts a ``NullHandler`` on ``kernelfuse``, so
its messages reach only the handlers an application configures
(``logging.basicConfig(level=logging.INFO)`` shows them).  The estimators' ``verbose`` and the
command line attach a handler writing ``kernelfuse: message`` lines to stderr for the duration
of a fit or a command (:func:`log_to_stderr`).  Levels (docs/estimators.md, "Progress and
logging"): INFO for the phases (kernels built, solves started and ended, one-vs-rest classes,
the demo's steps) and the iteration lines of a solve at most twice a second; DEBUG for every
iteration.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

from kernelfuse.errors import ValidationError

#: The name of the library's root logger.
LOGGER_NAME = "kernelfuse"
#: The level each ``verbose`` value shows: 0 (False) nothing but warnings, 1 (True) the phases
#: and iteration lines twice a second, 2 every iteration.
VERBOSE_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}
#: The name of the handler :func:`log_to_stderr` attaches.
_HANDLER = "kernelfuse-stderr"


def verbose_level(verbose: object, name: str = "verbose") -> int:
    """The logging level of ``verbose`` (:data:`VERBOSE_LEVELS`; True is 1, False 0); a
    :class:`ValidationError` naming ``name`` for any other value."""
    if isinstance(verbose, bool) or (isinstance(verbose, int) and verbose in VERBOSE_LEVELS):
        return VERBOSE_LEVELS[int(verbose)]
    raise ValidationError(f"{name} must be 0, 1 or 2 (or False/True: 0/1), got {verbose!r}")


@contextlib.contextmanager
def log_to_stderr(level: int, stream: TextIO | None = None) -> Iterator[None]:
    """Messages of ``level`` and above written as ``kernelfuse: message`` lines to ``stream``
    (stderr) while the block runs; nothing is attached for ``WARNING`` or above (warnings
    reach the user through :mod:`warnings`).  The logger's level and handlers are restored."""
    logger = logging.getLogger(LOGGER_NAME)
    if level >= logging.WARNING:
        yield
        return
    # One such handler at a time: a fit with verbose inside a command lowers its level only.
    handler = next((h for h in logger.handlers if h.get_name() == _HANDLER), None)
    added = handler is None
    if handler is None:
        handler = logging.StreamHandler(stream or sys.stderr)
        handler.set_name(_HANDLER)
        handler.setFormatter(logging.Formatter("kernelfuse: %(message)s"))
        handler.setLevel(level)
        logger.addHandler(handler)
    previous, previous_handler = logger.level, handler.level
    handler.setLevel(min(level, handler.level))
    if logger.getEffectiveLevel() > level:
        logger.setLevel(level)
    try:
        yield
    finally:
        handler.setLevel(previous_handler)
        logger.setLevel(previous)
        if added:
            logger.removeHandler(handler)
