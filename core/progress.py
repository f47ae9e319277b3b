"""Progress lines for long fits: iteration, objective, gap, time and work, on stderr."""

from __future__ import annotations

import sys
from typing import TextIO

from kernelfuse.result import Iteration


class ProgressPrinter:
    """A callback printing the first iterations, then at most two lines a second."""

    def __init__(self, stream: TextIO | None = None, interval: float = 0.5) -> None:
        self._stream = stream
        self._interval = interval
        self._last = -1.0

    def __call__(self, row: Iteration) -> None:
        if row.iteration > 3 and row.time - self._last < self._interval:
            return
        self._last = row.time
        work = "".join(f"  {name} {value:.0f}" for name, value in sorted(row.counters.items())
                       if name in ("svm_calls", "kernel_passes"))
        print(
            f"iter {row.iteration:5d}  objective {row.objective:.10g}  gap {row.gap:.3g}  "
            f"time {row.time:.2f}s{work}",
            file=self._stream or sys.stderr, flush=True,
        )
