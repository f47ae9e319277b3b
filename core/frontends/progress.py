"""Progress lines for long fits on stderr: iteration, objective, gap, time, active kernels, work."""

from __future__ import annotations

import sys
from typing import TextIO

from kernelfuse.assembly.result import Iteration


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
        work = "".join(f"  {name.replace('_', ' ')} {row.counters[name]:.0f}"
                       for name in ("active_kernels", "svm_calls", "kernel_passes")
                       if name in row.counters)
        print(
            f"iter {row.iteration:5d}  objective {row.objective:.10g}  gap {row.gap:.3g}  "
            f"time {row.time:.2f}s{work}",
            file=self._stream or sys.stderr, flush=True,
        )
