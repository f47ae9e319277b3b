"""How the estimators' default kernel grid and C were chosen: the accuracy protocol's splits.

For every set of ``benchmarks/accuracy.py`` (the same splits and standardised features) and
every candidate, a kernel grid and a fixed ``C`` of ``l1_mkl``, ``MKLClassifier`` or
``MKLRegressor`` fitted with them, every other setting at its default; test accuracy (RMSE)
mean +- std over the splits.  The bar of each set is issue 26's target: the best method's
mean in ``benchmarks/results/accuracy.json`` less its standard deviation.  The defaults are a
candidate that clears the bar on every set.  Fixed values, so no cross-validation here.  One
run:

    python benchmarks/default_choice.py [--splits K] [--sets NAME ...] [--jobs J] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import accuracy  # noqa: E402

import common  # noqa: E402
from kernelfuse.frontends.kernel_grid import SIMPLEMKL_WIDTHS, default_grid, kernel_grid  # noqa: E402

#: The candidate grids, each a function of the number of features.
GRIDS: dict[str, Callable[[int], list[Any]]] = {
    "the papers' grid (24 widths from 0.1)": kernel_grid,
    "SimpleMKL's widths (from 0.5)": lambda d: kernel_grid(d, widths=SIMPLEMKL_WIDTHS),
    "default_grid (SimpleMKL's, and width 0.1 on all features)": default_grid,
}
CS = {"classification": (0.03, 0.1, 0.3, 1.0), "regression": (0.1, 0.3, 1.0)}
TIME_LIMIT = 60.0


def run_set(name: str, n_splits: int, seed: int) -> dict[str, Any]:
    """Every candidate on the first ``n_splits`` splits of the set ``name``."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    task = "classification"
    for k in range(n_splits):
        task, data, scale = accuracy.split_data(name, k, seed)
        for grid_name, grid in GRIDS.items():
            for C in CS[task]:
                fit = accuracy.estimator_defaults(task, grid, C)
                run = fit({}, None, data["y"], None, data["y_test"], {"time_limit": TIME_LIMIT},
                          data["X"], data["X_test"])
                run["score"] *= scale
                runs.setdefault(grid_name, {}).setdefault(f"{C:g}", []).append(run)
        accuracy.log(f"{name} split {k}: done")
    return {"name": name, "task": task, "runs": runs}


def bars(payload: dict[str, Any]) -> dict[str, tuple[str, float, float]]:
    """Per set of an ``accuracy.json`` payload: its best method (the estimators' defaults left
    out, so that the bar does not move with them), that method's mean and std (accuracy, or
    RMSE)."""
    out = {}
    for data in payload["sets"]:
        summaries = {m: accuracy.method_summary(data, m) for m in data["methods"]
                     if m != accuracy.DEFAULTS[data["task"]]}
        best = accuracy.best_method(data, summaries)
        if best is not None:
            out[data["name"]] = (best, summaries[best]["mean"], summaries[best]["std"] or 0.0)
    return out


def _clears(task: str, mean: float, bar: tuple[str, float, float]) -> bool:
    """Whether ``mean`` (accuracy or RMSE) is within the bar's one standard deviation of its best."""
    return accuracy.score_sign(task) * (bar[1] - mean) <= bar[2]


def _summary(task: str, runs: list[dict[str, Any]]) -> tuple[float, float]:
    """Mean and std over the splits, as accuracy or RMSE."""
    scores = accuracy.score_sign(task) * np.array([r["score"] for r in runs])
    return float(scores.mean()), float(scores.std(ddof=1)) if scores.size > 1 else 0.0


def choice_table(payload: dict[str, Any]) -> str:
    """Per candidate: the sets where it clears the bar, those where it does not, seconds per fit."""
    rows = []
    for grid_name in GRIDS:
        for task in ("classification", "regression"):
            sets = [s for s in payload["sets"] if s["task"] == task]
            for C in CS[task] if sets else ():
                runs = {s["name"]: s["runs"][grid_name][f"{C:g}"] for s in sets}
                fails = [name for name, r in runs.items()
                         if not _clears(task, _summary(task, r)[0], tuple(payload["bars"][name]))]
                seconds = np.mean([r["seconds"] for rs in runs.values() for r in rs])
                rows.append([grid_name, task, f"{C:g}", f"{len(runs) - len(fails)}/{len(runs)}",
                             ", ".join(fails) or "-", common.fmt(seconds)])
    return common.markdown_table(["grid", "task", "C", "sets within one std of the best",
                                  "sets not within", "s per fit"], rows)


def by_set_table(payload: dict[str, Any]) -> str:
    """Every set, grid and C: mean +- std over the splits, ``*`` where it clears the bar."""
    rows = []
    for data in payload["sets"]:
        task, bar = data["task"], tuple(payload["bars"][data["name"]])
        digits = accuracy.score_digits(task)
        for grid_name in GRIDS:
            cells = []
            for C in CS[task]:
                mean, std = _summary(task, data["runs"][grid_name][f"{C:g}"])
                mark = "*" if _clears(task, mean, bar) else ""
                cells.append(f"C = {C:g}: {mean:.{digits}f} ± {std:.{digits}f}{mark}")
            rows.append([data["name"], f"{bar[0]} {bar[1]:.{digits}f} ± {bar[2]:.{digits}f}",
                         grid_name, "; ".join(cells)])
    return common.markdown_table(["set", "best of accuracy.json (defaults left out)", "grid",
                                  "test accuracy or RMSE (mean ± std; *: within one std of the best)"], rows)


TABLES = {"choice": choice_table, "by_set": by_set_table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=None, help="splits per set (default: accuracy.json's)")
    parser.add_argument("--sets", nargs="+", default=None, help="only these sets")
    parser.add_argument("--jobs", type=int, default=1, help="sets run at once (joblib)")
    parser.add_argument("--accuracy", type=Path, default=common.RESULTS_DIR / "accuracy.json",
                        help="the accuracy protocol's results: the bars and the splits")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "default_choice.json")
    args = parser.parse_args(argv)
    if not args.accuracy.is_file():
        print(f"{args.accuracy}: not found; run python benchmarks/accuracy.py first (it sets the bars)",
              file=sys.stderr)
        return 2
    measured = json.loads(args.accuracy.read_text())
    known = bars(measured)
    names = [n for n in (args.sets or known) if n in known]
    n_splits = args.splits or measured["n_splits"]
    from joblib import Parallel, delayed

    sets = Parallel(n_jobs=args.jobs)(delayed(run_set)(name, n_splits, measured["seed"]) for name in names)
    payload = {"benchmark": "default_choice", "n_splits": n_splits, "seed": measured["seed"],
               "time_limit": TIME_LIMIT, "grids": list(GRIDS), "cs": CS,
               "bars": {name: known[name] for name in names},
               "bars_from": {"git_commit": measured["machine"]["git_commit"], "date": measured["machine"]["date"]},
               "sets": sets, "machine": common.machine_info()}
    common.write_json(args.out, payload)
    for table in TABLES.values():
        print(table(payload) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
