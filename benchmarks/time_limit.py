"""How closely every solver honours ``time_limit``, and how far healthy libsvm solves are from its bound.

``python benchmarks/time_limit.py [--quick]``

* **time_limit**: every registered solver (but the one-SVM baseline) on each
  family it takes, on problems it does not finish within the limit
  (:func:`kernelfuse.testing.small_problem`, 10 kernels: N = 300 with C = 1e4
  or lam = 1e-4; N = 1000 with 20% of the labels flipped and C = 100 or
  lam = 1e-2; tol = 1e-14), with ``time_limit`` 1 s and 5 s
  (``--quick``: N = 300, 1 s; ``--solvers``: only those named): the solve's own
  time and the whole ``kernelfuse.solve`` call against the limit.  Issue 23's target: within 10%
  or 1 s.  scikit-learn is imported before the first solve (a first libsvm
  call in a process imports it, 2.4 s on the 2-core AMD EPYC).
* **libsvm's bound**: SMO steps of healthy solves on the UCI sets' average
  unit-trace Gaussian kernel (widths 0.5-8 on all features) for C from 0.1 to
  1e4, against ``default_max_iter(N) = max(100_000, 100 N)``.

Writes ``benchmarks/results/time_limit[_quick][_SOLVERS].json`` (``--solvers`` names the file).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import kernelfuse
from common import RESULTS_DIR, fmt, gaussian_kernels, machine_info, markdown_table, uci_split, write_json
from kernelfuse.errors import SolverError
from kernelfuse.parts.registry import get_registry
from kernelfuse.problem.families import get_family
from kernelfuse.testing import small_problem


def hard_problem(family: str, n: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    K, y, extra = small_problem(family, seed=0, n=n, n_kernels=10)
    C = 1e4 if n <= 300 else 1e2
    if n > 300:  # label noise: many margin errors, slow SVMs
        flip = np.random.default_rng(1).random(n) < 0.2
        y = np.where(flip if y.ndim == 1 else flip[:, None], -y, y)
    names = {p.name for p in get_family(family).params}
    weight = {"C": C} if "C" in names else {"lam": 1.0 / C}
    return K, y, {"family": family, **extra, **weight}


def time_limits(limits: list[float], sizes: list[int], solvers: list[str]) -> list[dict[str, Any]]:
    registry = get_registry()
    rows = []
    for solver in solvers:
        recipe = registry.get("recipe", solver).factory
        accepted = recipe.parameters(registry)
        for family, n in ((f, n) for n in sizes for f in sorted(recipe.families)):
            K, y, kw = hard_problem(family, n)
            settings = {k: v for k, v in (("tol", 1e-14), ("max_iter", 10**9)) if k in accepted}
            for limit in limits:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        result = kernelfuse.solve(K, y, solver=solver, time_limit=limit, check_psd=False,
                                                  **kw, **settings)
                        seconds, status = result.time, result.status
                    except SolverError as exc:  # no model within the limit (cvxpy's attempts)
                        seconds, status = math.nan, f"SolverError: {exc}"
                wall = time.perf_counter() - start
                over = (wall if math.isnan(seconds) else seconds) - limit
                rows.append({"solver": solver, "family": family, "N": n, "time_limit": limit,
                             "time": seconds, "wall": wall, "status": status,
                             "over": over, "within": over <= max(0.1 * limit, 1.0)})
                print(f"{solver:22s} {family:10s} N {n:5d} limit {limit:4.1f} s  time {seconds:6.2f} s  "
                      f"wall {wall:6.2f} s  {status}", flush=True)
    return rows


def libsvm_steps(sets: list[str]) -> list[dict[str, Any]]:
    from kernelfuse.plugins.svm.libsvm import LibSVM, default_max_iter

    rows = []
    for name in sets:
        split = uci_split(name)
        K, _ = gaussian_kernels(split["X_train"], None, [(None, w) for w in (0.5, 1.0, 2.0, 4.0, 8.0)])
        K_avg = K.mean(axis=0)
        y = np.where(split["y_train"] == np.unique(split["y_train"])[-1], 1.0, -1.0)
        for C in (0.1, 1.0, 10.0, 100.0, 1e3, 1e4):
            solution = LibSVM().solve(K_avg, y, C)
            rows.append({"set": name, "N": y.size, "C": C, "steps": solution.n_iter,
                         "bound": default_max_iter(y.size), "converged": solution.converged})
            print(f"libsvm {name:11s} N {y.size:4d} C {C:8g}: {solution.n_iter:7d} steps "
                  f"(bound {default_max_iter(y.size)})", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--solvers", nargs="+", metavar="NAME", help="only these solvers")
    parser.add_argument("--out")
    args = parser.parse_args()
    limits, sizes = ([1.0], [300]) if args.quick else ([1.0, 5.0], [300, 1000])
    suffix = ("_quick" if args.quick else "") + ("_" + "_".join(s.replace("-", "_") for s in args.solvers)
                                                   if args.solvers else "")
    out = Path(args.out or RESULTS_DIR / f"time_limit{suffix}.json")  # a subset never overwrites the full run
    info = machine_info()
    steps = libsvm_steps(["liver", "wpbc", "ionosphere", "sonar"])
    solvers = args.solvers or sorted(set(get_registry().names("recipe")) - {"average"})
    runs = time_limits(limits, sizes, solvers)
    print(markdown_table(
        ["solver", "family", "N", "time_limit (s)", "solve time (s)", "whole call (s)", "status", "within"],
        [[r["solver"], r["family"], r["N"], fmt(r["time_limit"]), fmt(r["time"]), fmt(r["wall"]), r["status"],
          "yes" if r["within"] else "NO"] for r in runs]))
    print(markdown_table(["set", "N", "C", "SMO steps", "bound"],
                         [[r["set"], r["N"], fmt(r["C"]), r["steps"], r["bound"]] for r in steps]))
    write_json(out, {"settings": {"limits": limits, "sizes": sizes, "solvers": solvers}, "machine": info,
                     "time_limit": runs, "libsvm_steps": steps})


if __name__ == "__main__":
    main()
