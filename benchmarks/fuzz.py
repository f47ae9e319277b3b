"""The fuzz suite's long mode: tests/project/test_fuzz.py with the ``long`` hypothesis profile.

``python benchmarks/fuzz.py [--quick] [--examples N] [--seed S]`` runs every
fuzz test with N random draws (1,500 by default; ``--quick``: 100), prints
the outcome mix per entry point (hypothesis' statistics) and the wall time,
and writes both to ``benchmarks/results/fuzz.json`` (``fuzz_quick.json``).  A failing draw is
printed by hypothesis with the smallest input that fails; the exit status is
then non-zero, so this is the one benchmark a failure stops.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from common import write_json

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 draws per test")
    parser.add_argument("--examples", type=int, help="draws per test (default 1500)")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    parser.add_argument("--out", help="JSON path (default benchmarks/results/fuzz[_quick].json)")
    args = parser.parse_args()
    examples = args.examples or (100 if args.quick else 1500)
    out = Path(args.out or REPO / "benchmarks" / "results" / f"fuzz{'_quick' if args.quick else ''}.json")
    env = {**os.environ, "KERNELFUSE_FUZZ": "long", "KERNELFUSE_FUZZ_EXAMPLES": str(examples)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               str(REPO / "tests" / "project" / "test_fuzz.py"), "--hypothesis-show-statistics"]
    if args.seed is not None:
        command.append(f"--hypothesis-seed={args.seed}")
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cut = done.stdout.find("Hypothesis Statistics")
    statistics = done.stdout[cut:] if cut >= 0 else ""
    failures = done.stdout[:cut] if cut >= 0 else done.stdout
    # OSQP's C code prints "Polishing not needed ..." whatever its verbosity: not ours to show
    failures = "\n".join(line for line in failures.splitlines() if not line.startswith("Polishing"))
    if done.returncode != 0:  # the smallest failing input of each failing test, as hypothesis printed it
        print(failures[failures.find("FAILURES"):][-20000:])
    print(statistics or done.stdout[-3000:])
    print(done.stderr[-2000:], file=sys.stderr)
    tests = re.findall(r"test_fuzz\.py::(\w+):\n(.*?)(?=\ntests/|\Z)", statistics, re.S)
    report = {
        "examples_per_test": examples, "seed": args.seed, "seconds": round(seconds, 1),
        "exit_status": done.returncode,
        "failed": re.findall(r"^FAILED (\S+)", done.stdout, re.M),
        "tests": {name: {"events": dict((label.strip(), float(share)) for share, label in
                                        re.findall(r"\* ([\d.]+)%, (.+)", body))}
                  for name, body in tests},
    }
    write_json(out, report)
    print(f"{len(tests)} fuzz tests, {examples} draws each, {seconds:.0f} s, exit {done.returncode}; "
          f"wrote {out}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
