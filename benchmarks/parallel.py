"""One-vs-rest fits on 1 and 2 workers: loky processes and a Dask LocalCluster (issue 11).

Run: ``.venv/bin/python benchmarks/parallel.py [--quick]``

Data: the four aligned Pendigits views (``dyn`` 16, ``sta4`` 16, ``sta8``
64, ``sta16`` 256 features) from ``../shared/data/pendigits``, a seeded
subset of N training digits (full: 1,500; quick: 500), standardised by the
estimator (``standardize=True``), and 1,000 test digits for the accuracy.
Kernels: per view a linear and three Gaussians (width ``w sqrt(d)``, w =
0.5, 1, 2, ``d`` the view's features): 16 kernels, unit trace.  The model:
``MKLClassifier`` with its defaults (SpicyMKL, ``l1_mkl``, logistic loss,
C = 0.3, gap 1e-3), 10 classes one-vs-rest: 10 independent problems on one
kernel stack.

Configurations, one after the other in this process, each timed over
``repeats`` fits (median; the first fit of a pool, which starts its
workers, is timed apart as ``first``):

* ``serial``: ``n_jobs=1``, in-process, the reference;
* ``loky 2``: ``n_jobs=2``, joblib's default process backend;
* ``dask 2``: ``joblib.parallel_config(backend="dask")`` with a
  ``distributed.LocalCluster`` of 2 worker processes (one thread each),
  ``n_jobs=None`` (all the cluster's workers).

One worker is the ``serial`` row for both backends: joblib runs the jobs of
a single worker (``n_jobs=1``, or a Dask cluster of one single-threaded
worker) in the calling process.

Reported: wall time of ``fit`` (kernel stack, built serially in the calling
process, included; measured alone as ``kernel stack``), the speed-up against
``serial``; whether ``coef_`` and ``intercept_`` equal the serial fit's bit
for bit; the test accuracy; the load average of the machine before and
after (the speed-up of 2 workers needs 2 idle cores).

Then one ML-MKL-Sum solve (``MultiLabelMKLClassifier``, family
``mlmkl_sum``, one kernel combination shared by L +-1 labels: the ten
digits one-vs-rest, and 50 seeded unions of 2-5 digits;
:data:`MLMKL_STEPS` mirror-descent steps, each solving the L label SVMs on
``K(p)``): ``n_jobs=1``, ``n_jobs=2`` (threads, ``LabelSVMs``' default),
and ``n_jobs=2`` on loky processes (``joblib.parallel_config``), timed the
same way; the accuracy is over every test label.

Raw measurements: ``benchmarks/results/parallel[_quick].json``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

CONFIG = {
    "full": {"N": 1500, "n_test": 1000, "repeats": 3},
    "quick": {"N": 500, "n_test": 1000, "repeats": 2},
}
WIDTHS = (0.5, 1.0, 2.0)
#: Mirror-descent steps of the timed ML-MKL-Sum solve (fixed: every configuration does the same work).
MLMKL_STEPS = 10
#: Labels of the ML-MKL-Sum solves: the ten digits, and seeded unions of digits.
MLMKL_LABELS = (10, 50)


def log(message: str) -> None:
    print(message, flush=True)


def pendigits(N: int, n_test: int, seed: int) -> dict[str, Any]:
    """The four views side by side (raw: the estimator standardises), 16 kernel specs, labels."""
    from kernelfuse import get_registry
    from kernelfuse.kernels.functions import KernelSpec

    registry = get_registry()
    views_tr, y_tr = common.load_pendigits("train")
    views_te, y_te = common.load_pendigits("test")
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.permutation(y_tr.size)[:N])
    test = np.sort(rng.permutation(y_te.size)[:n_test])
    specs, start = [], 0
    for group, view in enumerate(common.PENDIGITS_VIEWS):
        d = views_tr[view].shape[1]
        cols = list(range(start, start + d))
        start += d
        specs.append(KernelSpec(registry.create("kernel", "linear"), cols, group, f"linear {view}"))
        specs += [KernelSpec(registry.create("kernel", "gaussian", width=w * math.sqrt(d)), cols, group,
                             f"gaussian {w} {view}") for w in WIDTHS]
    return {"X_train": np.hstack([views_tr[v][rows] for v in common.PENDIGITS_VIEWS]),
            "y_train": y_tr[rows],
            "X_test": np.hstack([views_te[v][test] for v in common.PENDIGITS_VIEWS]),
            "y_test": y_te[test], "specs": specs}


def label_matrix(digits: np.ndarray, L: int) -> np.ndarray:
    """0/1 labels (an indicator matrix): the ten digits one-vs-rest for L = 10, else L seeded
    unions of 2-5 digits."""
    if L == 10:
        return np.eye(10, dtype=int)[digits]
    rng = np.random.default_rng(L)
    unions = [rng.choice(10, size=rng.integers(2, 6), replace=False) for _ in range(L)]
    return np.stack([np.isin(digits, u) for u in unions], axis=1).astype(int)


def fit(data: dict[str, Any], n_jobs: int | None, labels: int | None = None) -> tuple[float, Any]:
    """One-vs-rest ``MKLClassifier`` (``labels`` None), or one ML-MKL-Sum solve on that many labels."""
    from kernelfuse.frontends.estimators import MKLClassifier, MultiLabelMKLClassifier

    if labels:
        model = MultiLabelMKLClassifier(kernels=data["specs"], standardize=True, solver="mlmkl-sum",
                                        family="mlmkl_sum", max_iter=MLMKL_STEPS, tol=None, n_jobs=n_jobs)
        target = label_matrix(data["y_train"], labels)
    else:
        model, target = MKLClassifier(kernels=data["specs"], standardize=True, n_jobs=n_jobs), data["y_train"]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data["X_train"], target)
    return time.perf_counter() - start, model


def measure(name: str, data: dict[str, Any], n_jobs: int | None, repeats: int,
            reference: Any | None, labels: int | None = None) -> dict[str, Any]:
    """``repeats`` fits after a first one (which starts the workers of a fresh pool)."""
    first, model = fit(data, n_jobs, labels)
    times = [fit(data, n_jobs, labels)[0] for _ in range(repeats)]
    truth = label_matrix(data["y_test"], labels) if labels else data["y_test"]
    row = {"config": name, "n_jobs": n_jobs, "first": first, "times": times,
           "wall": statistics.median(times),
           "test_accuracy": float(np.mean(model.predict(data["X_test"]) == truth)),
           "solver_seconds": float(sum(r.time for r in model.results_)),
           "_model": model}
    if reference is not None:
        row["identical"] = bool(np.array_equal(model.coef_, reference.coef_)
                                and np.array_equal(model.intercept_, reference.intercept_))
    log(f"  {name}: median {row['wall']:.2f}s over {repeats} fits (first {first:.2f}s), "
        f"test accuracy {row['test_accuracy']:.4f}"
        + (f", identical to serial: {row['identical']}" if "identical" in row else ""))
    return row


def dask_rows(data: dict[str, Any], repeats: int, reference: Any) -> list[dict[str, Any]]:
    rows = []
    for workers in (2,):
        with common.local_cluster(workers) as startup:
            row = measure(f"dask {workers}", data, None, repeats, reference)
        row["cluster_startup"] = startup
        rows.append(row)
    return rows


def kernel_seconds(data: dict[str, Any]) -> float:
    """The training stack alone, as the estimator builds it (standardised, unit trace)."""
    from kernelfuse.kernels.functions import compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer

    X = data["X_train"]
    scale = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    start = time.perf_counter()
    KernelNormalizer("unit-trace").fit(data["specs"], X).transform(compute_kernels(data["specs"], X))
    return time.perf_counter() - start


def mlmkl_rows(data: dict[str, Any], repeats: int) -> list[dict[str, Any]]:
    """One ML-MKL-Sum solve on 10 and 50 labels: its label SVMs serial, on 2 threads (the
    default of ``n_jobs=2`` there), on 2 loky processes."""
    import joblib

    rows = []
    for L in MLMKL_LABELS:
        serial = measure(f"L = {L}: serial", data, 1, repeats, None, labels=L)
        rows += [serial, measure(f"L = {L}: 2 threads", data, 2, repeats, serial["_model"], labels=L)]
        with joblib.parallel_config(backend="loky"):
            rows.append(measure(f"L = {L}: 2 loky processes", data, 2, repeats, serial["_model"], labels=L))
    return rows


def table(payload: dict[str, Any], key: str = "rows") -> str:
    rows, cells, serial = payload[key], [], 0.0
    for r in rows:
        serial = r["wall"] if "identical" not in r else serial  # each group's serial row comes first
        cells.append([r["config"], r["wall"], r["first"], common.ratio(serial, r["wall"]),
                      r.get("identical"), r["test_accuracy"]])
    return common.markdown_table(
        ["configuration", "fit (s, median)", "first fit (s)", "speed-up vs serial",
         "coef bit-identical", "test accuracy"], cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 500 (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="subset seed")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args()
    cfg = CONFIG["quick" if args.quick else "full"]
    machine = common.machine_info()
    data = pendigits(cfg["N"], cfg["n_test"], args.seed)
    stack = kernel_seconds(data)
    log(f"Pendigits N = {cfg['N']}, {len(data['specs'])} kernels, 10 classes one-vs-rest; "
        f"kernel stack alone {stack:.2f}s; {machine['cpu_count']} CPUs")
    serial = measure("serial", data, 1, cfg["repeats"], None)
    rows = [serial, measure("loky 2", data, 2, cfg["repeats"], serial["_model"])]
    rows += dask_rows(data, cfg["repeats"], serial["_model"])
    labels = mlmkl_rows(data, cfg["repeats"])
    payload = {"machine": machine, "config": cfg, "kernel_stack_seconds": stack,
               "n_kernels": len(data["specs"]), "rows": rows, "mlmkl_rows": labels,
               "mlmkl_steps": MLMKL_STEPS, "loadavg_after": list(os.getloadavg())}
    print(f"\n### One-vs-rest fit, 1 and 2 workers (N = {cfg['N']}, 10 problems)\n\n{table(payload)}")
    print(f"\n### One ML-MKL-Sum solve, its label SVMs of each step on 1 and 2 workers "
          f"({MLMKL_STEPS} steps)\n\n{table(payload, 'mlmkl_rows')}")
    print(f"\nkernel stack alone (serial in every configuration): {stack:.2f}s; "
          f"solver time summed over the 10 problems (serial fit): {serial['solver_seconds']:.2f}s; "
          f"load average (1 min) before {machine['loadavg_1_5_15min'][0]:.2f}, "
          f"after {payload['loadavg_after'][0]:.2f} on {machine['cpu_count']} CPUs")
    out = args.out or common.RESULTS_DIR / f"parallel{'_quick' if args.quick else ''}.json"
    common.write_json(out, payload)
    print(f"raw measurements: {out}")


if __name__ == "__main__":
    main()
