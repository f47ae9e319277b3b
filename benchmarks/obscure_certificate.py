"""OBSCURE with its default settings on 12 small generated ``pnorm_mkl`` problems: status, certified gap, time.

Run: ``.venv/bin/python benchmarks/obscure_certificate.py``

The problems are those of the generated test (``random_pnorm_problem`` of
``tests/helpers.py``, seeds 0-11 at full size): a random subset of breast
cancer, digits 3 vs 8 (binary), wine or iris (3 classes), N 36-400, M 8-30
Gaussian and polynomial kernels on random feature subsets, spherically
normalised, p in [1.1, 2], lam in 1e-3.5-1e-2.  For each: the cvxpy
reference's certified optimum ``P*``, then ``obscure`` with its defaults
(seed 0): status, epochs, solve time (the solver's own) and wall time of
the ``kernelfuse.solve`` call (input checks included), the certified gap,
``(P - P*) / P*``, and whether the certified lower bound is at most ``P*``.

Raw measurements: ``benchmarks/results/obscure_certificate.json``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import common  # noqa: E402
from helpers import random_pnorm_problem  # noqa: E402

SEEDS = range(12)


def measure(seed: int) -> dict[str, Any]:
    import kernelfuse

    case = random_pnorm_problem(seed)
    K, y, p, lam = case["K"], case["y"], case["p"], case["lam"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = kernelfuse.solve(K, y, solver="cvxpy", family="pnorm_mkl", p=p, lam=lam)
        start = time.perf_counter()
        result = kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", p=p, lam=lam, seed=0)
        wall = time.perf_counter() - start
    return {"seed": seed, "data": case["data"], "N": int(K.shape[1]), "M": int(K.shape[0]), "p": p, "lam": lam,
            "reference": best.objective, "reference_status": best.status, "status": result.status,
            "epochs": result.n_iter, "time": result.time, "wall": wall, "objective": result.objective,
            "dual_objective": result.dual_objective, "gap": result.gap,
            "above": (result.objective - best.objective) / best.objective,
            "lower_valid": bool(result.dual_objective <= best.objective * (1 + 1e-9))}


def table(payload: dict[str, Any]) -> str:
    return common.split_table(
        ["seed", "data", "N", "M", "p", "lam", "status", "epochs", "solve (s)", "wall (s)", "certified gap",
         "(P - P*) / P*", "lower <= P*"],
        [[r["seed"], r["data"], r["N"], r["M"], f"{r['p']:.2f}", f"{r['lam']:.1e}", r["status"], r["epochs"],
          f"{r['time']:.2f}", f"{r['wall']:.2f}", f"{r['gap']:.1e}", f"{r['above']:.1e}",
          "yes" if r["lower_valid"] else "NO"] for r in payload["problems"]],
        keys=[0], groups=[("The problems (seed of the generator):", [1, 2, 3, 4, 5]),
                          ("The runs with the defaults, and their certificates:", [6, 7, 8, 9, 10, 11, 12])])


TABLES = {"problems": table}


def main() -> None:
    problems = []
    for seed in SEEDS:
        row = measure(seed)
        problems.append(row)
        print(f"  seed {seed}: {row['data']} N = {row['N']} M = {row['M']}: {row['status']} after {row['epochs']} "
              f"epochs, {row['time']:.2f}s, gap {row['gap']:.1e}, {row['above']:.1e} above P*", flush=True)
    payload = {"machine": common.machine_info(), "problems": problems}
    print(f"\n{table(payload)}")
    common.save_results(common.RESULTS_DIR / "obscure_certificate.json", payload, lambda path: None)


if __name__ == "__main__":
    main()
