"""MIKL at second-order speed (issue 27): ``mikl-newton`` against forward-backward ``mikl`` and ``cvxpy``.

Problems like the issue's: N rows of scikit-learn's breast cancer data (standardised), M kernels
on random groups of 1-4 features, in turn Gaussian (width ``sqrt(#features)``), negative distance
and sigmoid (two of three indefinite), each divided by its absolute trace (the sum of the absolute
eigenvalues, so the negative distance's zero diagonal scales too); family ``mikl`` with p = 2,
q = 1, r = 1, lam = 0.05 unless given.  Each solver to a certified relative gap of ``tol``
(1e-6), one run each: time, iterations, kernel passes (``kernel_passes``: the oracle's and,
for ``mikl-newton``, the Newton steps' own), and the ratios to ``mikl-newton`` in the same run.

    python benchmarks/mikl_newton.py [--sizes 200x30 260x30 500x120] [--lam 0.05] [--tol 1e-6]
                                     [--no-cvxpy] [--out PATH]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

import common

SOLVERS = ("mikl-newton", "mikl", "cvxpy")


def mixed_kernels(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The issue's stack: Gaussian, negative distance and sigmoid kernels on feature groups."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer()
    rng = np.random.default_rng(seed)
    rows = rng.permutation(data.target.size)[:n]
    X = StandardScaler().fit_transform(data.data)[rows]
    y = np.where(data.target[rows] == 1, 1.0, -1.0)
    kernels = []
    for t in range(m):
        Z = X[:, rng.choice(X.shape[1], size=rng.integers(1, 5), replace=False)]
        sq = np.maximum(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1), 0.0)
        if t % 3 == 0:
            K = np.exp(-sq / (2.0 * Z.shape[1]))
        elif t % 3 == 1:
            K = -np.sqrt(sq)
        else:
            K = np.tanh(Z @ Z.T / Z.shape[1] - 1.0)
        kernels.append(K / np.abs(np.linalg.eigvalsh(K)).sum())
    return np.stack(kernels), y


def passes(run: dict[str, Any]) -> float:
    counters = run.get("counters", {})
    return float(counters.get("kernel_passes", math.nan))


def speed_table(problems: list[dict[str, Any]]) -> str:
    """Per problem and solver: status, time, passes, gap, and the ratios to ``mikl-newton``."""
    rows = []
    for problem in problems:
        runs = problem["runs"]
        newton = runs["mikl-newton"]
        for solver, run in runs.items():
            rows.append([problem["N"], problem["M"], solver, run["status"], run.get("n_iter"), run.get("time"),
                         run.get("passes"), run.get("gap"),
                         # a ratio only between two certified runs (benchmarks/common.py, honest ratios)
                         common.ratio_cell(run, run.get("time"), newton, newton.get("time")),
                         common.ratio_cell(run, run.get("passes"), newton, newton.get("passes"))
                         if solver != "cvxpy" else None])
    return common.markdown_table(
        ["N", "M", "solver", "status", "iterations", "time (s)", "kernel passes", "gap",
         "time / mikl-newton", "passes / mikl-newton"], rows)


TABLES = {"speed": lambda d: speed_table(d["problems"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["200x30"], help="NxM problems (default: 200x30)")
    parser.add_argument("--lam", type=float, default=0.05)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--no-cvxpy", action="store_true", help="skip the exact reference")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "mikl_newton.json")
    args = parser.parse_args()
    solvers = [s for s in SOLVERS if not (args.no_cvxpy and s == "cvxpy")]
    params = {"family": "mikl", "p": 2, "q": 1, "r": 1, "lam": args.lam}
    problems = []
    for size in args.sizes:
        n, m = (int(v) for v in size.split("x"))
        K, y = mixed_kernels(n, m)
        runs = {}
        for solver in solvers:
            extra = {} if solver == "cvxpy" else {"tol": args.tol}
            run = common.run_solver(K, y, solver, **params, **extra)
            run["passes"] = passes(run)
            runs[solver] = run
            print(f"N={n} M={m} {solver}: {run['status']} {common.fmt(run.get('time'))} s, "
                  f"{common.fmt(run['passes'])} passes, gap {common.fmt(run.get('gap'))}, "
                  f"objective {run.get('objective')}")
        problems.append({"N": n, "M": m, "runs": runs})
    payload = {"params": params, "tol": args.tol, "sizes": args.sizes, "machine": common.machine_info(),
               "problems": problems}
    print(speed_table(problems))
    common.write_json(args.out, payload)
    print(f"raw measurements: {args.out}")


if __name__ == "__main__":
    main()
