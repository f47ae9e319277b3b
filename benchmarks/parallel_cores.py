"""One-vs-rest on all the cores of a machine: loky and a Dask LocalCluster against n_jobs=1 (issue 30).

Run: ``python benchmarks/parallel_cores.py [--out DIR] [--smoke] [--jobs 1,2,4,10,16]
[--dask-workers 16] [--commit SHA]`` (``--commit``: the commit measured, recorded
where the tree is a copy without git).

Data: scikit-learn's digits (bundled with it, no download: 1,797 images of
64 pixels), a seeded subset of N = 1,200 for training and the other 597 for
the test accuracy.  Kernels: ``kernel_grid(64, widths=(1, 5), degrees=(1,))``,
a Gaussian of width 1 and 5 and a linear kernel on every pixel and on all of
them: 195 kernels, unit trace, on features standardised by the estimator
(``standardize=True``); the stack is 2.2 GB.  The model: ``MKLClassifier``
with its defaults (SpicyMKL, ``l1_mkl``, logistic loss, C = 0.3, gap 1e-3),
10 classes one-vs-rest: 10 independent problems on one stack.

Configurations, one after the other in this process:

* ``serial``: ``n_jobs=1`` (in-process, the reference), one fit;
* ``loky k``: ``n_jobs=k`` for each ``k`` of ``--jobs`` above 1, joblib's
  default process backend; a first fit starts the workers (timed apart as
  ``first``), the second is the one timed;
* ``dask w, no malloc trim`` then ``dask w``: ``joblib.parallel_config(backend="dask")``
  with a ``distributed.LocalCluster`` of ``w`` worker processes of one thread
  each (``n_jobs=None``: all of them), timed the same way: first with
  kernelfuse's worker environment (``kernelfuse.distributed.cluster.local_cluster``:
  glibc's own ``MALLOC_TRIM_THRESHOLD_``), then with Dask's default (64 KiB).
  Skipped, with the reason recorded, where ``distributed`` cannot be imported.

A configuration of more than one worker is skipped (and recorded so) once
the run has taken :data:`BUDGET_SECONDS`.  Each fit's wall time includes
building the kernel stack (``stack``: its part, timed inside the fit) and
is compared with ``serial``: the speed-up, and whether ``coef_`` and
``intercept_`` equal the serial fit's bit for bit.  ``cpu``: the CPU time
of this process and its child processes (the workers) during the fit
(psutil), the work a parallel fit adds whatever else the machine runs, and
``cpu_system`` its system part (the kernel's: page faults, mapping memory).  Recorded with them: the
machine (CPU model, cores, load), the versions (numpy, scipy, scikit-learn,
joblib, threadpoolctl, dask, distributed) and the commit, and which of
cvxpy, osqp and clarabel the run imported (none should be: this path does
not need them).

``--smoke``: N = 150, 65 kernels, ``n_jobs`` 1 and 2, 2 Dask workers: a
check that the script runs (seconds), written as ``parallel_cores_smoke.json``;
its figures are not measurements.  Output: ``DIR/parallel_cores.json``
(``DIR`` defaults to ``benchmarks/results``); ``python benchmarks/report.py``
renders docs/parallel.md's table from ``benchmarks/results/parallel_cores.json``.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

CONFIG = {
    "full": {"N": 1200, "widths": [1.0, 5.0], "degrees": [1], "jobs": [1, 2, 4, 10, 16], "dask_workers": 16},
    "smoke": {"N": 150, "widths": [1.0], "degrees": [], "jobs": [1, 2], "dask_workers": 2},
}
#: Seconds after which no further parallel configuration starts (the run stays within ~4 minutes
#: on 16 cores: the serial fit measured 35.6 s there before issue 30).
BUDGET_SECONDS = 180.0
#: The issue's target: this many times faster than n_jobs=1 with n_jobs=10 (and on 16 Dask workers).
TARGET_SPEEDUP = 6.0
#: Packages this path must not import (not installed on every machine that runs it).
OPTIONAL_SOLVER_PACKAGES = ("cvxpy", "osqp", "clarabel")


def log(message: str) -> None:
    print(message, flush=True)


def digits(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    """N seeded digits for training and the rest for testing; the kernel specs."""
    from sklearn.datasets import load_digits

    from kernelfuse.frontends.kernel_grid import kernel_grid

    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(y.size)
    train, test = np.sort(order[:cfg["N"]]), np.sort(order[cfg["N"]:])
    specs = kernel_grid(X.shape[1], widths=cfg["widths"], degrees=cfg["degrees"])
    return {"X_train": X[train], "y_train": y[train], "X_test": X[test], "y_test": y[test], "specs": specs}


class StackTimer:
    """The seconds each fit spends building its training stack (the estimator's ``_train_stack``)."""

    def __init__(self) -> None:
        from kernelfuse.frontends.estimators import MKLEstimator

        self.seconds = 0.0
        build = MKLEstimator._train_stack

        def timed(estimator: Any, X: np.ndarray) -> Any:
            start = time.perf_counter()
            try:
                return build(estimator, X)
            finally:
                self.seconds = time.perf_counter() - start

        MKLEstimator._train_stack = timed  # type: ignore[method-assign]


def cpu_seconds() -> tuple[float, float] | None:
    """CPU time (user + system, and system) of this process and its child processes (loky's
    workers, a LocalCluster's), alive ones included; None without psutil."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()
    user, system = me.cpu_times()[:2]
    for child in me.children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended meanwhile
            continue
        user, system = user + times[0], system + times[1]
    return user + system, system


def fit(data: dict[str, Any], n_jobs: int | None, timer: StackTimer) -> dict[str, Any]:
    from kernelfuse.frontends.estimators import MKLClassifier

    model = MKLClassifier(kernels=data["specs"], standardize=True, n_jobs=n_jobs)
    cpu, start = cpu_seconds(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data["X_train"], data["y_train"])
    wall, cpu_after = time.perf_counter() - start, cpu_seconds()
    used = None if cpu is None or cpu_after is None else (cpu_after[0] - cpu[0], cpu_after[1] - cpu[1])
    return {"wall": wall, "cpu": None if used is None else used[0], "cpu_system": None if used is None else used[1],
            "stack": timer.seconds, "model": model}


def measure(name: str, data: dict[str, Any], n_jobs: int | None, timer: StackTimer,
            serial: dict[str, Any] | None, workers: int) -> dict[str, Any]:
    """One fit (serial), or a first fit that starts the workers and the timed second one."""
    first = fit(data, n_jobs, timer) if serial is not None else None
    run = fit(data, n_jobs, timer)
    model = run.pop("model")
    row: dict[str, Any] = {
        "config": name, "workers": workers, "n_jobs": n_jobs, **run,
        "first": None if first is None else first["wall"],
        "solver_seconds": [float(r.time) for r in model.results_],
        "test_accuracy": float(np.mean(model.predict(data["X_test"]) == data["y_test"])),
        "loadavg_1min": os.getloadavg()[0],
        "_model": model,
    }
    if serial is not None:
        reference = serial["_model"]
        row["identical"] = bool(np.array_equal(model.coef_, reference.coef_)
                                and np.array_equal(model.intercept_, reference.intercept_))
        row["speedup"] = common.ratio(serial["wall"], row["wall"])
    log(f"  {name}: {row['wall']:.2f}s (stack {row['stack']:.2f}s, CPU {row['cpu'] or math.nan:.1f}s"
        + ("" if first is None else f", first fit {row['first']:.2f}s") + ")"
        + ("" if serial is None else f", {row['speedup']:.2f}x, identical to serial: {row['identical']}")
        + f", test accuracy {row['test_accuracy']:.4f}")
    return row


def dask_name(workers: int, malloc_trim: bool) -> str:
    return f"dask {workers}" + ("" if malloc_trim else ", no malloc trim")


def dask_row(data: dict[str, Any], workers: int, timer: StackTimer, serial: dict[str, Any],
             malloc_trim: bool) -> dict[str, Any]:
    """The fit on a LocalCluster of ``workers`` single-threaded processes, with Dask's default
    worker environment (``malloc_trim``) or kernelfuse's, or why it was skipped."""
    name = dask_name(workers, malloc_trim)
    try:
        import distributed  # noqa: F401
    except ImportError as exc:  # not installed on every machine
        return {"config": name, "workers": workers,
                "skipped": f"distributed not importable: {type(exc).__name__}: {exc}"}
    with common.local_cluster(workers, malloc_trim) as startup:
        row = measure(name, data, None, timer, serial, workers)
    row["cluster_startup"] = startup
    return row


def shared_memory_free_gb() -> float | None:
    """Free space of the folder a parallel fit's stack file goes to when it has room (memory)."""
    import shutil

    from kernelfuse.runtime.parallel import SHARED_MEMORY_FOLDER

    try:
        return shutil.disk_usage(SHARED_MEMORY_FOLDER).free / 1e9
    except OSError:
        return None


def versions() -> dict[str, str | None]:
    out = {}
    for package in ("numpy", "scipy", "scikit-learn", "joblib", "threadpoolctl", "dask", "distributed"):
        try:
            out[package] = md.version(package)
        except md.PackageNotFoundError:
            out[package] = None
    return out


def targets(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, from the rows measured (none where the row was not run, or in a smoke run)."""
    if payload["smoke"]:
        return []
    rows = {r["config"]: r for r in payload["rows"]}
    checks = []
    workers = CONFIG["full"]["dask_workers"]
    for name in ("loky 10", dask_name(workers, True), dask_name(workers, False)):
        row = rows.get(name)
        if row is None or "skipped" in row:
            continue
        checks.append({"target": f"{name} at least {TARGET_SPEEDUP:g}x faster than n_jobs=1",
                       "pass": bool(row["speedup"] >= TARGET_SPEEDUP and row["identical"]),
                       "detail": f"{row['speedup']:.2f}x ({row['wall']:.2f} s against "
                                 f"{rows['serial']['wall']:.2f} s), bit-identical: {row['identical']}"})
    return checks


def table(payload: dict[str, Any]) -> str:
    machine = payload["machine"]
    cells = []
    for r in payload["rows"]:
        if "skipped" in r:
            cells.append([r["config"], r["workers"], "-", "-", "-", "-", "-", "-", "-", f"skipped: {r['skipped']}",
                          "-"])
            continue
        cells.append([r["config"], r["workers"], r["wall"], r["stack"], r.get("cpu"), r.get("cpu_system", "-"),
                      r.get("first"), r.get("speedup", 1.0), r.get("identical", "-"), r["test_accuracy"],
                      r["loadavg_1min"]])
    cfg = payload["config"]
    head = (f"Digits, N = {cfg['N']:,}, {payload['n_kernels']} kernels, 10 classes one-vs-rest "
            f"({payload['stack_gb']:.2f} GB stack); {machine['cpu']}, {machine['cpu_count']} CPUs; "
            f"load average {machine['loadavg_1_5_15min'][0]:.1f} at the start.\n\n")
    lines = common.target_lines(payload["targets"])
    headers = ["configuration", "workers", "fit (s)", "of which stack (s)", "CPU (s)", "of which system (s)",
               "first fit (s)", "speed-up vs n_jobs=1", "coef bit-identical", "test accuracy", "load (1 min) after"]
    return head + common.split_table(headers, cells, keys=[0, 1], groups=[
        ("Times and speed-up:", [2, 3, 4, 5, 6, 7]),
        ("Agreement with the serial fit, accuracy and load:", [8, 9, 10])]) + (
        "\n\n" + "\n".join(lines) if lines else "")


TABLES = {"speedups": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny run that checks the script (seconds)")
    parser.add_argument("--out", type=Path, default=None, help="folder of the JSON (benchmarks/results)")
    parser.add_argument("--jobs", default=None, help="n_jobs values, comma-separated (1 first)")
    parser.add_argument("--dask-workers", type=int, default=None, help="workers of the LocalCluster (0: none)")
    parser.add_argument("--n-train", type=int, default=None, help="training digits (1,200; smoke: 150)")
    parser.add_argument("--seed", type=int, default=0, help="training subset seed")
    parser.add_argument("--commit", default=None,
                        help="the commit measured (recorded in place of the tree's own git HEAD)")
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS,
                        help="seconds after which no further parallel configuration starts")
    args = parser.parse_args()
    cfg = dict(CONFIG["smoke" if args.smoke else "full"])
    if args.jobs:
        cfg["jobs"] = sorted({int(j) for j in args.jobs.split(",")} | {1})
    if args.n_train is not None:
        cfg["N"] = args.n_train
    if args.dask_workers is not None:
        cfg["dask_workers"] = args.dask_workers
    began = time.perf_counter()
    machine = common.machine_info()
    machine["git_commit"] = args.commit or machine["git_commit"]  # a copied tree may carry a stale .git
    data = digits(cfg, args.seed)
    M, N = len(data["specs"]), cfg["N"]
    log(f"digits N = {N}, {M} kernels ({8 * M * N * N / 1e9:.2f} GB), 10 classes one-vs-rest; "
        f"{machine['cpu']}, {machine['cpu_count']} CPUs, load {machine['loadavg_1_5_15min'][0]:.2f}")
    timer = StackTimer()
    fit({**data, "X_train": data["X_train"][:40], "y_train": data["y_train"][:40]}, 1, timer)  # imports
    serial = measure("serial", data, 1, timer, None, 1)
    rows = [serial]
    for k in [j for j in cfg["jobs"] if j > 1]:
        if time.perf_counter() - began > args.budget:
            rows.append({"config": f"loky {k}", "workers": k, "skipped": "over the run's time budget"})
            continue
        rows.append(measure(f"loky {k}", data, k, timer, serial, k))
    for malloc_trim in (False, True) if cfg["dask_workers"] > 0 else ():
        if time.perf_counter() - began > args.budget:
            rows.append({"config": dask_name(cfg["dask_workers"], malloc_trim), "workers": cfg["dask_workers"],
                         "skipped": "over the run's time budget"})
        else:
            rows.append(dask_row(data, cfg["dask_workers"], timer, serial, malloc_trim))
    payload = {"machine": machine, "versions": versions(), "config": cfg, "smoke": args.smoke,
               "n_kernels": M, "stack_gb": 8 * M * N * N / 1e9,
               "rows": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
               "imported_optional": [p for p in OPTIONAL_SOLVER_PACKAGES if p in sys.modules],
               "shared_memory_free_gb": shared_memory_free_gb(),
               "total_seconds": time.perf_counter() - began}
    payload["targets"] = targets(payload)
    print("\n" + table(payload))
    print(f"\ntotal {payload['total_seconds']:.0f} s; optional solver packages imported: "
          f"{payload['imported_optional'] or 'none'}")
    name = "parallel_cores_smoke.json" if args.smoke else "parallel_cores.json"
    out = common.write_json((args.out or common.RESULTS_DIR) / name, payload)
    print(f"raw measurements: {out}")


if __name__ == "__main__":
    main()
