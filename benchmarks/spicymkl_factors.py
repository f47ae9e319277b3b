"""SpicyMKL from low-rank kernel factors against the same kernels as a dense stack, as N grows.

Run: ``.venv/bin/python benchmarks/spicymkl_factors.py [--quick]``

Data: pendigits (``../shared/data/pendigits``, the 7,494 training and 3,498
test rows pooled, 10,992 in all), a seeded random N of them, N = 1000,
2000, 4000, 8000 (quick: 500, 1000, 2000), target even digit (+1) against
odd (-1).  Kernels: M = 12 Nystrom kernels of rank 50 (uniform landmarks,
the seed of kernel m being m), a Gaussian of width (0.5, 1, 2) x sqrt(d) on
each of the four views (dyn, sta4, sta8, sta16: 16, 16, 64 and 256
features, standardised on the N rows), unit trace on the training rows.

The same kernels are solved twice: from their factors ``K_m = Phi_m Phi_m'``
(:class:`~kernelfuse.kernels.factors.FactorKernels`: ``8 N sum r_m`` bytes,
``O(N r M)`` products, the Newton system by the Woodbury identity in
``O(N k^2)``) and as the dense stack ``Phi_m Phi_m'`` (``8 M N^2`` bytes,
formed only while it takes at most 4 GiB: N <= 4000 here; ``O(N^2 M)``
products, an ``O(N^3)`` dense Newton solve).  Model: ``l1_mkl``, logistic
loss, C = 0.3, ``spicymkl`` with its defaults to a relative gap of 1e-6; the
time and kernel passes to 1e-3 are read off the per-iteration history, and
the objective at 1e-6 of the two runs is compared.  One BLAS thread, one
run per setting.  The log-log slope of the time to 1e-3 against N is
fitted over the sizes each path ran.

Raw measurements: ``benchmarks/results/spicymkl_factors[_quick].json``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread: steadier times on a shared 2-core machine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

CONFIG = {"full": {"sizes": (1000, 2000, 4000, 8000)}, "quick": {"sizes": (500, 1000, 2000)}}
WIDTHS = (0.5, 1.0, 2.0)  # times sqrt(d) of the view
RANK = 50
DENSE_BYTES = 4 * 2**30
SOLVE = {"family": "l1_mkl", "loss": "logistic", "C": 0.3, "tol": 1e-6}
TARGET_GAP = 1e-3


def log(message: str) -> None:
    print(message, flush=True)


def pendigits(n: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``n`` seeded random rows of pooled pendigits: each view standardised, labels even (+1) / odd (-1)."""
    train, labels_train = common.load_pendigits("train")
    test, labels_test = common.load_pendigits("test")
    labels = np.concatenate([labels_train, labels_test])
    rows = np.random.default_rng(seed).permutation(labels.size)[:n]
    views = {}
    for view in common.PENDIGITS_VIEWS:
        X = np.concatenate([train[view], test[view]])[rows]
        views[view] = common.standardise(X, X[:1])[0]
    return views, np.where(labels[rows] % 2 == 0, 1.0, -1.0)


def factor_kernels(views: dict[str, np.ndarray]) -> Any:
    """The 12 Nystrom kernels of rank :data:`RANK` as :class:`FactorKernels` (unit trace)."""
    from kernelfuse import get_registry
    from kernelfuse.kernels.factors import FactorKernels
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.plugins.kernels.nystrom import Nystrom

    X = np.hstack(list(views.values()))
    specs, start = [], 0
    for view in views.values():
        columns = list(range(start, start + view.shape[1]))
        start += view.shape[1]
        for width in WIDTHS:
            gaussian = get_registry().create("kernel", "gaussian", width=width * math.sqrt(view.shape[1]))
            specs.append(KernelSpec(Nystrom.fit(gaussian, view, RANK, seed=len(specs)), features=columns))
    return FactorKernels.from_specs(specs, X)


def to_gap(result: Any, gap: float) -> tuple[float, float]:
    """Seconds and kernel passes when the certified gap first reached ``gap`` (nan if never)."""
    for row in result.history:
        if row.gap <= gap:
            return float(row.time), float(row.counters.get("kernel_passes", math.nan))
    return math.nan, math.nan


def measure(K: Any, y: np.ndarray) -> dict[str, Any]:
    import kernelfuse

    result = kernelfuse.solve(K, y, solver="spicymkl", check_psd=False, **SOLVE)
    seconds, passes = to_gap(result, TARGET_GAP)
    return {"status": result.status, "objective": result.objective, "gap": result.gap,
            "n_iter": result.n_iter, "time": result.time, "time_to_1e-3": seconds,
            "passes_to_1e-3": passes, "kernel_passes": float(result.counters["kernel_passes"]),
            "newton_steps": int(result.counters["newton_steps"]),
            "n_selected": int(np.sum(result.kernel_weights > 1e-6))}


def slope(runs: list[dict[str, Any]], key: str) -> float:
    """Least-squares slope of ``log time to 1e-3`` against ``log N`` over the runs that have it."""
    points = [(r["N"], r[key]["time_to_1e-3"]) for r in runs
              if r.get(key) and math.isfinite(r[key]["time_to_1e-3"])]
    if len(points) < 2:
        return math.nan
    N, t = np.log(np.array(points)).T
    return float(np.polyfit(N, t, 1)[0])


def table(payload: dict[str, Any]) -> str:
    """One row per N: time and passes to 1e-3 from factors and from the stack, objectives, memory."""
    rows = []
    for r in payload["runs"]:
        f, d = r["factors"], r.get("dense")
        rows.append([r["N"], f["time_to_1e-3"], f["passes_to_1e-3"], f["time"], f["status"],
                     d["time_to_1e-3"] if d else None, d["passes_to_1e-3"] if d else None,
                     d["time"] if d else None, d["status"] if d else "not formed",
                     abs(f["objective"] - d["objective"]) / max(1.0, abs(d["objective"])) if d else None,
                     r["factors_mb"], r["stack_mb"]])
    return common.split_table(
        ["N", "s to 1e-3", "passes", "s to 1e-6", "status", "s to 1e-3", "passes",
         "s to 1e-6", "status", "objective rel. diff.", "factors (MiB)", "stack (MiB)"], rows, keys=[0], groups=[
            ("From the factors:", [1, 2, 3, 4]),
            ("From the stack (formed while it fits 4 GiB):", [5, 6, 7, 8]),
            ("The two paths' objectives (relative difference) and the memory of each input:", [9, 10, 11]),
        ])


TABLES = {"by_N": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="row sample seed")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args()
    cfg = CONFIG["quick" if args.quick else "full"]
    machine = common.machine_info()
    runs = []
    for N in cfg["sizes"]:
        views, y = pendigits(N, args.seed)
        with common.Timer() as t_factors:
            F = factor_kernels(views)
        row: dict[str, Any] = {"N": N, "ranks": F.ranks.tolist(), "factor_time": t_factors.seconds,
                               "factors_mb": F.nbytes / 2**20, "stack_mb": 8 * F.shape[0] * N * N / 2**20}
        row["factors"] = measure(F, y)
        log(f"N = {N}: factors {row['factors']['time_to_1e-3']:.2f}s to 1e-3 "
            f"({row['factors']['passes_to_1e-3']:.1f} passes), {row['factors']['time']:.2f}s to "
            f"{row['factors']['gap']:.1e} ({row['factors']['status']})")
        if 8 * F.shape[0] * N * N <= DENSE_BYTES:
            start = time.perf_counter()
            K = np.stack([Phi @ Phi.T for Phi in F.factors])
            row["stack_time"] = time.perf_counter() - start
            row["dense"] = measure(K, y)
            del K
            log(f"         stack {row['dense']['time_to_1e-3']:.2f}s to 1e-3 "
                f"({row['dense']['passes_to_1e-3']:.1f} passes), {row['dense']['time']:.2f}s to "
                f"{row['dense']['gap']:.1e} ({row['dense']['status']}); objectives "
                f"{row['factors']['objective']:.10g} / {row['dense']['objective']:.10g}")
        runs.append(row)
    machine["loadavg_end"] = list(os.getloadavg())
    payload = {"machine": machine,
               "config": {**cfg, "widths": WIDTHS, "rank": RANK, "solve": SOLVE, "seed": args.seed,
                          "dense_bytes": DENSE_BYTES},
               "runs": runs, "slopes": {key: slope(runs, key) for key in ("factors", "dense")}}
    print(f"\n### spicymkl from factors and from the stack (pendigits, M = 12, rank {RANK})\n")
    print(table(payload))
    print(f"\nlog-log slope of the time to 1e-3 in N: factors {payload['slopes']['factors']:.2f}, "
          f"stack {payload['slopes']['dense']:.2f}")
    out = args.out or common.RESULTS_DIR / f"spicymkl_factors{'_quick' if args.quick else ''}.json"
    common.save_results(out, payload, lambda path: None)


if __name__ == "__main__":
    main()
