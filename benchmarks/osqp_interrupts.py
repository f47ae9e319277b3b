"""Interrupts of ML-MKL solves whose label SVMs run on OSQP: how many are served within a second.

``python benchmarks/osqp_interrupts.py [--quick] [--interrupts N] [--svms KIND ...] [--seed S]``

Each trial starts a child process that solves an ML-MKL-SA problem
(:func:`kernelfuse.testing.small_problem`, ``mlmkl_max``, N = 100, 6 kernels, C = 1e4,
``tol`` 1e-15: it runs for minutes) on one BLAS thread, and sends it SIGINT at a random
moment, uniform in the first ``--delay`` seconds (2) after its first iteration.
The label SVMs (``--svms``):

* ``fallback``: the active-set SVM with its steps bounded to one (``max_iter`` and
  ``warm_max_iter`` 1), so that most solves end in its fallback, OSQP;
* ``osqp``: every label SVM on the ``osqp`` SVM solver.

OSQP installs its own SIGINT handler while it solves; an interrupt is *served* when the
child prints the status ``interrupted`` (the outer loop's answer) or ``KeyboardInterrupt``
(raised before the first iteration ended), and *lost* when it still runs 30 s later without
an answer.
Per trial: the outcome, the wall time from the signal to the answer, the child's CPU time
over it (/proc; the work done, whatever else the machine runs), and whether the signal
landed inside an OSQP solve (the child records its OSQP calls' intervals on the shared
monotonic clock), and OSQP's share of the solve's time.  The target: every interrupt served
within 1 s (wall time).  ``--quick``: 10 trials per kind instead of 100.

Writes ``benchmarks/results/osqp_interrupts.json`` (``osqp_interrupts_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import RESULTS_DIR, fmt, machine_info, markdown_table, process_cpu_seconds, write_json

#: The label SVMs' settings of each kind (``--svms``).
SVMS = {
    "fallback": {"oracle.label_svms.svm_solver.max_iter": 1, "warm_max_iter": 1},
    "osqp": {"svm_solver": "osqp"},
}
#: A trial whose child has not answered this many seconds after the signal counts as lost.
LOST_AFTER = 30.0

CHILD = textwrap.dedent("""
    import json, sys, time, warnings
    import kernelfuse
    from kernelfuse.plugins.svm.osqp_qp import OSQPSolver
    from kernelfuse.testing import small_problem

    warnings.simplefilter("ignore")
    intervals = []
    solve = OSQPSolver.solve

    def recorded(self, *args, **kwargs):
        start = time.monotonic()
        try:
            return solve(self, *args, **kwargs)
        finally:
            intervals.append((start, time.monotonic()))

    OSQPSolver.solve = recorded
    K, Y, _ = small_problem("mlmkl_max", 0, n=100, n_kernels=6)

    def ready(row):
        if row.iteration == 1:
            print("status: ready", flush=True)

    started = time.monotonic()
    try:
        status = kernelfuse.solve(K, Y, solver="mlmkl-sa", C=1e4, tol=1e-15, max_iter=10**9,
                                  callback=ready, **{settings!r}).status
    except KeyboardInterrupt:
        status = "KeyboardInterrupt"
    print("status:", status, flush=True)
    print("osqp:", json.dumps({{"calls": len(intervals), "seconds": sum(b - a for a, b in intervals),
                                "solve_seconds": time.monotonic() - started, "last": intervals[-50:]}}),
          flush=True)
""")


class ChildLines:
    """The child's stdout lines, read by a thread, so that waiting for one can time out."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.put(line)
        self.lines.put(None)  # the stream ended

    def tagged(self, tag: str, deadline: float) -> str | None:
        """The rest of the next line starting with ``tag`` (OSQP's C code prints its own notes on
        the same stream), or None once ``deadline`` (monotonic) has passed or the stream ended."""
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            if line.startswith(tag):
                return line[len(tag):].strip()
        return None


def trial(kind: str, delay: float) -> dict[str, Any]:
    """One child solve with label SVMs of ``kind``, interrupted ``delay`` s after its first iteration."""
    one_thread = {**os.environ, **dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                 "MKL_NUM_THREADS"), "1")}
    process = subprocess.Popen([sys.executable, "-c", CHILD.format(settings=SVMS[kind])], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=one_thread,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = ChildLines(process)
    try:
        if lines.tagged("status:", time.monotonic() + 120) != "ready":
            raise RuntimeError(f"the child did not start solving (exit {process.poll()})")
        time.sleep(delay)
        sent, cpu_sent = time.monotonic(), process_cpu_seconds(process.pid)
        process.send_signal(signal.SIGINT)
        outcome = lines.tagged("status:", sent + LOST_AFTER)
        wall, cpu = time.monotonic() - sent, process_cpu_seconds(process.pid) - cpu_sent
        osqp = lines.tagged("osqp:", time.monotonic() + 10) if outcome is not None else None
        running = process.poll() is None
    finally:
        process.kill()
        process.wait()
    calls = json.loads(osqp) if osqp else {"calls": 0, "seconds": 0.0, "solve_seconds": math.nan, "last": []}
    served = outcome in ("interrupted", "KeyboardInterrupt")
    return {"svms": kind, "delay": delay, "outcome": outcome or ("lost" if running else "died"),
            "served": served,
            "wall": wall if served else math.nan, "cpu": cpu if served else math.nan,
            "in_osqp": any(start <= sent <= end for start, end in calls["last"]),
            "osqp_calls": calls["calls"], "osqp_share": calls["seconds"] / calls["solve_seconds"]}


def summary(kind: str, trials: list[dict[str, Any]]) -> dict[str, Any]:
    mine = [t for t in trials if t["svms"] == kind]
    served = [t for t in mine if t["served"]]
    return {"svms": kind, "interrupts": len(mine), "served": len(served),
            "within_1s_wall": sum(t["wall"] <= 1.0 for t in served),
            "within_1s_cpu": sum(t["cpu"] <= 1.0 for t in served),
            "in_osqp": sum(t["in_osqp"] for t in mine),
            "interrupted": sum(t["outcome"] == "interrupted" for t in mine),
            "keyboard_interrupt": sum(t["outcome"] == "KeyboardInterrupt" for t in mine),
            "max_wall": max((t["wall"] for t in served), default=math.nan),
            "max_cpu": max((t["cpu"] for t in served), default=math.nan),
            "osqp_share": float(np.nanmean([t["osqp_share"] for t in served])) if served else math.nan}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 interrupts per kind")
    parser.add_argument("--interrupts", type=int, help="interrupts per kind (default 100)")
    parser.add_argument("--svms", nargs="+", choices=sorted(SVMS), default=sorted(SVMS))
    parser.add_argument("--delay", type=float, default=2.0, help="latest moment of the signal (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    count = args.interrupts or (10 if args.quick else 100)
    out = Path(args.out or RESULTS_DIR / f"osqp_interrupts{'_quick' if args.quick else ''}.json")
    info = machine_info()
    rng = np.random.default_rng(args.seed)
    trials = []
    for index in range(count):
        for kind in args.svms:
            row = trial(kind, float(rng.uniform(0.0, args.delay)))
            trials.append(row)
            print(f"{index + 1:3d} {kind:8s} delay {row['delay']:.2f} s  {row['outcome']:17s} "
                  f"wall {fmt(row['wall'])} s  cpu {fmt(row['cpu'])} s  "
                  f"{'in OSQP' if row['in_osqp'] else ''}", flush=True)
    summaries = [summary(kind, trials) for kind in args.svms]
    print(markdown_table(
        ["label SVMs", "interrupts", "served", "within 1 s (wall)", "within 1 s (CPU)", "landed in OSQP",
         "slowest (wall s)", "slowest (CPU s)", "OSQP's share of the time"],
        [[s["svms"], s["interrupts"], s["served"], s["within_1s_wall"], s["within_1s_cpu"], s["in_osqp"],
          fmt(s["max_wall"]), fmt(s["max_cpu"]), fmt(s["osqp_share"])] for s in summaries]))
    for s in summaries:
        verdict = "PASS" if s["within_1s_wall"] == s["interrupts"] else "FAIL"
        print(f"target ({s['svms']}): every interrupt served within 1 s: {verdict} "
              f"({s['within_1s_wall']} of {s['interrupts']})")
    write_json(out, {"settings": {"interrupts": count, "svms": args.svms, "delay": args.delay,
                                  "seed": args.seed, "lost_after": LOST_AFTER},
                     "machine": info, "summary": summaries, "trials": trials})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
