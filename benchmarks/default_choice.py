"""How the estimators' defaults are chosen: candidates against the better baseline, on splits of their own.

Issue 41's protocol.  The defaults are chosen on the choice splits of the sets of
``benchmarks/accuracy.py``'s full run (split ``k`` seeded ``accuracy.CHOICE_SEED + k``); the
published tables come from other splits (``accuracy.REPORT_SEED``), and the held-out IDA sets
are never used here.  On every choice split:

* the two baselines of ``accuracy.BASELINES`` (the average-kernel SVM and scikit-learn's RBF
  SVC, SVR for regression), each through ``accuracy.select_and_fit`` with the full run's grid:
  hyperparameters by 3-fold cross-validation in the training part, one refit, one test score;
* every candidate of :data:`CANDIDATES` (keyword arguments of ``MKLClassifier`` /
  ``MKLRegressor``, every other setting at its default; fixed values, so no cross-validation),
  fitted on the training part and scored on the test part.

A candidate passes a set where it is not significantly worse than the set's better baseline
(``accuracy.significantly_worse``: a lower mean and a two-sided paired t-test over the splits
with p < 0.05); the defaults are a candidate that passes on every set.  One run:

    python benchmarks/default_choice.py [--splits K] [--sets NAME ...] [--jobs J] [--out PATH]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import accuracy  # noqa: E402

import common  # noqa: E402

#: A candidate: the estimator's keyword arguments (``kernels``, ``C``, ``standardize``, ...) for
#: a set's task and number of features, or None where it is not a candidate for that task.
Candidate = Callable[[str, int], dict[str, Any] | None]
#: The previous defaults' grid, the papers': a Gaussian of width 0.1 on all features (a ridge
#: term), and SimpleMKL's widths and the polynomial degrees 1-3 on all features and on each.
RIDGE_WIDTH = 0.1


def papers_grid(d: int) -> list[Any]:
    """The grid of the previous defaults: ``1 + 13 (d + 1)`` specs on ``d`` features."""
    from kernelfuse.frontends.kernel_grid import SIMPLEMKL_WIDTHS, kernel_grid

    return [kernel_grid(d, widths=(RIDGE_WIDTH,), degrees=())[0], *kernel_grid(d, widths=SIMPLEMKL_WIDTHS)]


def candidate(task: str, grid: str = "median", **settings: Any) -> Candidate:
    """The estimator with ``settings`` (``C``, ``C2``, ``loss``) on ``grid``: "median", the
    estimators' own (``kernels="grid"``: :func:`kernelfuse.frontends.kernel_grid.view_grid` on
    all features), or "papers" (:func:`papers_grid`); for ``task`` only."""
    def build(of_task: str, d: int) -> dict[str, Any] | None:
        if of_task != task:
            return None
        return {**settings, **({"kernels": papers_grid(d)} if grid == "papers" else {})}
    return build


#: The candidates by name (the rows of the tables); add one to try it on the next run.  The
#: median grid with the logistic loss and the elastic net at ``C2 = 0.01`` and ``0.001``, with
#: the squared hinge loss, and the previous defaults (the papers' grid at ``C2 = 0.01``; the
#: regressor's ``C = 0.3``, ``C2 = 0``), which fell behind the RBF SVC on ionosphere and banana.
CANDIDATES: dict[str, Candidate] = {
    "median grid, C = 0.01, C2 = 0.001": candidate("classification", C=0.01, C2=0.001),
    "median grid, C = 0.01, C2 = 0.01": candidate("classification", C=0.01, C2=0.01),
    "median grid, squared hinge, C = 0.01, C2 = 0.01": candidate(
        "classification", C=0.01, C2=0.01, loss="squared_hinge"),
    "papers' grid, C = 0.01, C2 = 0.01": candidate("classification", "papers", C=0.01, C2=0.01),
    "median grid, C = 0.3, C2 = 0": candidate("regression", C=0.3, C2=0.0),
    "median grid, C = 0.1, C2 = 0.01": candidate("regression", C=0.1, C2=0.01),
    "median grid, C = 0.03, C2 = 0.001": candidate("regression", C=0.03, C2=0.001),
    "papers' grid, C = 0.3, C2 = 0": candidate("regression", "papers", C=0.3, C2=0.0),
}
TIME_LIMIT = 60.0


def run_set(name: str, n_splits: int, seed: int = accuracy.CHOICE_SEED,
            candidates: dict[str, Candidate] | None = None) -> dict[str, Any]:
    """The baselines and every candidate (:data:`CANDIDATES` unless given) on the first
    ``n_splits`` splits of ``seed`` of the set ``name``, as a set of ``accuracy.json``
    (``methods``; ``splits``, each with its ``runs`` by method)."""
    X, y, task = accuracy.load_set(name)
    settings = {c: kwargs for c, build in (candidates or CANDIDATES).items()
                if (kwargs := build(task, X.shape[1])) is not None}
    baselines = list(accuracy.BASELINES[task])
    cfg = {"seed": seed, "grids": accuracy.GRIDS, "time_limit": TIME_LIMIT, "tol": accuracy.TOL}
    splits = []
    for k in range(n_splits):
        split = accuracy.one_split(name, k, cfg, baselines, {})
        _, data, scale = accuracy.split_data(name, k, seed)
        for candidate, kwargs in settings.items():
            fit = accuracy.estimator_defaults(task, kwargs)
            run = fit({}, None, data["y"], None, data["y_test"], {"time_limit": TIME_LIMIT},
                      data["X"], data["X_test"])
            run["score"] *= scale
            split["runs"][candidate] = run
        splits.append(split)
        accuracy.log(f"{name} split {k}: done")
    return {"name": name, "task": task, "n": int(y.size), "d": int(X.shape[1]),
            "methods": [*baselines, *settings], "splits": splits}


def _sets(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The sets of the payload as sets of ``accuracy.json``; a file written before issue 41 (runs
    by grid and C, its bars taken from accuracy.json, no baseline) with its candidates by name."""
    out = []
    for data in payload["sets"]:
        if "splits" not in data:
            runs = {f"{grid}, C = {C}": rs for grid, by_c in data["runs"].items() for C, rs in by_c.items()}
            n_splits = len(next(iter(runs.values())))
            data = {"name": data["name"], "task": data["task"], "methods": list(runs),
                    "splits": [{"split": k, "runs": {m: rs[k] for m, rs in runs.items()}}
                               for k in range(n_splits)]}
        out.append(data)
    return out


def _candidates(data: dict[str, Any]) -> list[str]:
    return [m for m in data["methods"] if m not in accuracy.BASELINES[data["task"]]]


def choice_table(payload: dict[str, Any]) -> str:
    """Per candidate and task: the sets where it is not significantly worse than the better
    baseline, those where it is (or where no baseline was run on every split), seconds per fit."""
    sets = _sets(payload)
    if all(accuracy.better_baseline(data) is None for data in sets):
        return ("_No baseline in this file: it was written before issue 41's protocol (its bar was "
                "the best method of accuracy.json, on the published splits, less one std). To be "
                "regenerated by `python benchmarks/default_choice.py`._")
    rows = []
    for task in ("classification", "regression"):
        of_task = [data for data in sets if data["task"] == task]
        for candidate in dict.fromkeys(c for data in of_task for c in _candidates(data)):
            summaries = {data["name"]: accuracy.method_summary(data, candidate)
                         for data in of_task if candidate in data["methods"]}
            passed = [name for name, s in summaries.items() if s["worse"] is False]
            failed = [name if s["worse"] else f"{name} (no baseline)" for name, s in summaries.items()
                      if s["worse"] is not False]
            seconds = [s["seconds"] for s in summaries.values() if s["seconds"] is not None]
            rows.append([candidate, task, f"{len(passed)}/{len(summaries)}", ", ".join(failed) or "-",
                         common.fmt(float(np.mean(seconds)) if seconds else None)])
    return common.markdown_table(["candidate", "task", "sets not significantly worse than the better baseline",
                                  "sets significantly worse", "s per fit"], rows)


def by_set_table(payload: dict[str, Any]) -> str:
    """Every set and candidate: mean ± std over the splits, and against the set's better baseline
    the mean gain, the paired t-test's p and whether it is not significantly worse."""
    rows = []
    for data in _sets(payload):
        baseline, digits = accuracy.better_baseline(data), accuracy.score_digits(data["task"])
        baseline_cell = ("none in this file: to be regenerated" if baseline is None else
                         f"{baseline} {accuracy.pm(accuracy.method_summary(data, baseline), digits)}")
        for candidate in _candidates(data):
            s = accuracy.method_summary(data, candidate)
            rows.append([data["name"], baseline_cell, candidate, accuracy.pm(s, digits),
                         "-" if s["gain"] is None else f"{s['gain']:+.3g}", s["t_p"],
                         accuracy.not_worse_mark(s)])
    return common.markdown_table(["set", "better baseline (mean ± std)", "candidate",
                                  "test accuracy or RMSE (mean ± std)", "against the baseline (+: better)",
                                  "p (paired t)", "not significantly worse (p ≥ 0.05 or better)"], rows)


TABLES = {"choice": choice_table, "by_set": by_set_table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=accuracy.CONFIGS["full"]["n_splits"],
                        help="choice splits per set")
    parser.add_argument("--sets", nargs="+", default=None,
                        help="only these sets (default: the full run's; never the held-out ones)")
    parser.add_argument("--jobs", type=int, default=1, help="sets run at once (joblib)")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "default_choice.json")
    args = parser.parse_args(argv)
    names = args.sets or [*accuracy.CLASSIFICATION, *accuracy.REGRESSION]
    held_out = sorted(set(names) & set(accuracy.HELDOUT))
    if held_out:
        parser.error(f"{', '.join(held_out)}: held out, never used for choosing")
    skipped, available = [], []
    for name in names:
        try:
            accuracy.load_set(name)
            available.append(name)
        except common.DataUnavailable as exc:
            accuracy.log(str(exc))
            skipped.append(str(exc))
    from joblib import Parallel, delayed

    sets = Parallel(n_jobs=args.jobs)(delayed(run_set)(name, args.splits) for name in available)
    payload = {"benchmark": "default_choice", "n_splits": args.splits, "seed": accuracy.CHOICE_SEED,
               "choice_seed": accuracy.CHOICE_SEED, "report_seed": accuracy.REPORT_SEED,
               "time_limit": TIME_LIMIT, "tol": accuracy.TOL, "candidates": list(CANDIDATES),
               "baselines": accuracy.BASELINES,
               "grids": {m: accuracy.GRIDS[m] for ms in accuracy.BASELINES.values() for m in ms},
               "skipped_sets": skipped, "sets": sets, "machine": common.machine_info()}
    common.write_json(args.out, payload)
    for table in TABLES.values():
        print(table(payload) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
