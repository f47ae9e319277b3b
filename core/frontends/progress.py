"""Progress lines of long fits through :mod:`logging` (:mod:`kernelfuse.runtime.logs`): iteration,
objective, gap, time, active kernels, work."""

from __future__ import annotations

import logging

from kernelfuse.assembly.result import Iteration

logger = logging.getLogger(__name__)


class ProgressPrinter:
    """A solver callback logging every iteration: the first ones and then at most two a second
    at INFO, the others at DEBUG (``verbose=2``)."""

    def __init__(self, interval: float = 0.5) -> None:
        self._interval = interval
        self._last = -1.0

    def __call__(self, row: Iteration) -> None:
        level = logging.DEBUG
        if row.iteration <= 3 or row.time - self._last >= self._interval:
            self._last = row.time
            level = logging.INFO
        if not logger.isEnabledFor(level):
            return
        work = "".join(f"  {name.replace('_', ' ')} {row.counters[name]:.0f}"
                       for name in ("active_kernels", "svm_calls", "kernel_passes")
                       if name in row.counters)
        logger.log(level, "iter %5d  objective %.10g  gap %.3g  time %.2fs%s",
                   row.iteration, row.objective, row.gap, row.time, work)

    @staticmethod
    def wanted() -> ProgressPrinter | None:
        """A printer where iteration lines would be shown (INFO enabled), else None: a solve
        without one records its history only."""
        return ProgressPrinter() if logger.isEnabledFor(logging.INFO) else None
