"""What choosing C by cross-validation costs: a warm-started path against one default fit, per fold.

Breast cancer (scikit-learn's; the benchmarks' seeded 70/30 stratified split, standardised on
the training part: N = 398 training rows), 5 stratified folds of the training part, the
estimators' default grid.  Per fold: the wall time of an ``MKLClassifierCV`` fold (the fold's
kernels, a path of 10 values of C from C_max down to 1e-3 C_max, each solve warm-started at the
one before, the validation kernels and the scores) against one cold default ``MKLClassifier()``
fit on the fold's training rows, and the same path solved cold (a built solver takes no warm
start).
Then the whole fit (the kernels of all rows, every fold, the refit) against ``GridSearchCV``
over the same 10 values.  A default fit takes about 0.05 s here, so after one untimed fit (imports,
first calls) every time is the median of :data:`REPEATS` runs, each repeat timing the default
fits and the warm path one after the other; run it single-threaded (``OMP_NUM_THREADS=1``).

    OMP_NUM_THREADS=1 python benchmarks/cv_path.py [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import common

#: Runs per measurement, their median kept: a fold's fit is tens of milliseconds.
REPEATS = 5


def median_run(run: Any) -> dict[str, Any]:
    """``run()`` (an ``MKLClassifierCV`` fit, :func:`cv_run`) :data:`REPEATS` times: :func:`medians`."""
    return medians([run() for _ in range(REPEATS)])


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The last of ``runs`` (``MKLClassifierCV`` fits, :func:`cv_run`)' path, with the median wall
    time of the whole fit and of each fold."""
    return {**runs[-1], "seconds": float(np.median([r["seconds"] for r in runs])),
            "fold_seconds": np.median([r["fold_seconds"] for r in runs], axis=0).tolist(),
            "repeats": REPEATS}


def cv_run(X: np.ndarray, y: np.ndarray, folds: list, **params: Any) -> dict[str, Any]:
    """One ``MKLClassifierCV`` fit: its wall time, fold times and path."""
    from kernelfuse.frontends.cv_estimators import MKLClassifierCV

    start = time.perf_counter()
    model = MKLClassifierCV(cv=folds, **params).fit(X, y)
    return {"seconds": time.perf_counter() - start, "fold_seconds": model.fold_times_.tolist(),
            "Cs": model.Cs_.tolist(), "C": model.C_, "mean_scores": model.scores_.mean(axis=0).tolist(),
            "statuses": model.path_statuses_.tolist(), "gaps": model.path_gaps_.tolist(),
            "n_iter": model.path_n_iter_.tolist()}


def measure(quick: bool) -> dict[str, Any]:
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from kernelfuse import MKLClassifier, get_registry

    split = common.uci_split("breast-cancer", seed=0)
    X, y = split["X_train"], split["y_train"]
    n_folds, n_Cs = (3, 5) if quick else (5, 10)
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=0).split(X, y))
    MKLClassifier().fit(X[folds[0][0]], y[folds[0][0]])  # untimed: imports and first calls
    # Each repeat times every fold's default fit, then the warm path's whole fit: both see the
    # same moments of a machine's load.
    times: list[list[float]] = [[] for _ in folds]
    warm_runs = []
    for _ in range(REPEATS):
        for k, (train, _) in enumerate(folds):
            start = time.perf_counter()
            MKLClassifier().fit(X[train], y[train])
            times[k].append(time.perf_counter() - start)
        warm_runs.append(cv_run(X, y, folds, Cs=n_Cs))
    default_fits = [float(np.median(t)) for t in times]
    warm = medians(warm_runs)
    print("default fits: " + ", ".join(f"{t:.3f}" for t in default_fits) + " s", flush=True)
    print(f"warm path: {warm['seconds']:.1f} s", flush=True)
    cold_solver = get_registry().get("recipe", "spicymkl").factory.build()
    cold = median_run(lambda: cv_run(X, y, folds, Cs=warm["Cs"], solver=cold_solver))
    print(f"cold path: {cold['seconds']:.1f} s", flush=True)
    payload = {"machine": common.machine_info(), "quick": quick, "N": int(y.size), "n_folds": n_folds,
               "n_Cs": n_Cs, "fold_rows": [int(train.size) for train, _ in folds],
               "default_fit_seconds": default_fits, "warm": warm, "cold": cold}
    if not quick:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search = GridSearchCV(MKLClassifier(), {"C": warm["Cs"]}, cv=folds).fit(X, y)
        payload["grid_search"] = {"seconds": time.perf_counter() - start, "C": search.best_params_["C"],
                                  "mean_scores": search.cv_results_["mean_test_score"].tolist()}
        print(f"GridSearchCV: {payload['grid_search']['seconds']:.1f} s", flush=True)
    return payload


def folds_table(payload: dict[str, Any]) -> str:
    """Per fold: a default fit, the warm path and the cold path, in seconds and default fits."""
    warm, cold = payload["warm"], payload["cold"]
    rows = []
    for k, default in enumerate(payload["default_fit_seconds"]):
        statuses, gaps = warm["statuses"][k], warm["gaps"][k]
        converged = sum(status == "converged" for status in statuses)
        rows.append([k, payload["fold_rows"][k], default, warm["fold_seconds"][k],
                     warm["fold_seconds"][k] / default, cold["fold_seconds"][k], cold["fold_seconds"][k] / default,
                     f"{converged}/{len(statuses)}", max(gaps), sum(warm["n_iter"][k]), sum(cold["n_iter"][k])])
    return common.markdown_table(
        ["fold", "training rows", "default fit (s)", f"warm path of {payload['n_Cs']} (s)", "x default fit",
         "cold path (s)", "x default fit", "warm points certified", "largest gap", "outer iterations warm",
         "cold"], rows)


def totals_table(payload: dict[str, Any]) -> str:
    """The whole fit (kernels of all rows, folds, refit) against GridSearchCV on the same values."""
    warm, cold = payload["warm"], payload["cold"]
    ratios = [w / d for w, d in zip(warm["fold_seconds"], payload["default_fit_seconds"])]
    rows = [["MKLClassifierCV (warm path)", warm["seconds"], warm["C"], max(warm["mean_scores"])],
            ["MKLClassifierCV (cold path)", cold["seconds"], cold["C"], max(cold["mean_scores"])]]
    search = payload.get("grid_search")
    if search:
        rows.append(["GridSearchCV(MKLClassifier())", search["seconds"], search["C"], max(search["mean_scores"])])
    table = common.markdown_table(["fit", "seconds", "C chosen", "best mean CV accuracy"], rows)
    return (table + f"\n\nA path of {payload['n_Cs']} values costs at most {max(ratios):.2f} default fits per "
            f"fold (mean {np.mean(ratios):.2f}).")


TABLES = {"folds": folds_table, "totals": totals_table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 folds, 5 values of C, no GridSearchCV")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or common.RESULTS_DIR / ("cv_path_quick.json" if args.quick else "cv_path.json")
    payload = measure(args.quick)
    print()
    print(folds_table(payload))
    print()
    print(totals_table(payload))
    common.save_results(out, payload, lambda path: None)


if __name__ == "__main__":
    main()
