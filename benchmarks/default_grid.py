"""The estimators' default kernel grid sized to the data (issue 29): the whole grid against the sized one.

``MKLClassifier()`` with the papers' whole grid (``27 (d + 1)`` kernels) and with the default
``kernels="grid"`` (:func:`kernelfuse.frontends.kernel_grid.sized_grid`, within 512 MiB): on
breast cancer, 5-fold stratified cross-validation (raw features, the default, and
``standardize=True``): accuracy, time, kernels and the stack's GiB per fold; on a synthetic
N = 1000, d = 8 problem (``make_classification``), one fit: time, kernels, GiB.  One run each.

    python benchmarks/default_grid.py [--out PATH]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import common


def measure(X: np.ndarray, y: np.ndarray, whole: bool, standardize: bool, folds: int) -> dict[str, Any]:
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    from kernelfuse import MKLClassifier
    from kernelfuse.frontends.kernel_grid import GRID_BYTES, kernel_grid, sized_grid
    from kernelfuse.runtime.memory import default_memory_budget

    model = MKLClassifier(kernels=kernel_grid(X.shape[1]) if whole else "grid", standardize=standardize)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if folds > 1:
            accuracy = float(cross_val_score(model, X, y, cv=StratifiedKFold(folds, shuffle=True,
                                                                             random_state=0)).mean())
        else:
            accuracy = float(model.fit(X, y).score(X, y))
    elapsed = time.perf_counter() - start
    n_train = X.shape[0] - X.shape[0] // folds if folds > 1 else X.shape[0]  # one fold's training set
    M = len(kernel_grid(X.shape[1]) if whole
            else sized_grid(X.shape[1], n_train, min(GRID_BYTES, default_memory_budget())))
    return {"grid": "whole" if whole else "sized", "standardize": standardize, "folds": folds,
            "accuracy": accuracy, "time": elapsed, "kernels": M, "gib": M * n_train**2 * 8 / 2**30}


def table(payload: dict[str, Any]) -> str:
    rows = [[r["data"], r["grid"], "yes" if r["standardize"] else "no", r["kernels"],
             common.fmt(r["gib"]), common.fmt(r["time"]), common.fmt(r["accuracy"], 4)]
            for r in payload["runs"]]
    return common.markdown_table(["data", "grid", "standardize", "kernels", "GiB", "time (s)",
                                  "accuracy"], rows)


def main() -> None:
    from sklearn.datasets import load_breast_cancer, make_classification

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "default_grid.json")
    args = parser.parse_args()
    X, y = load_breast_cancer(return_X_y=True)
    runs = []
    for standardize in (False, True):
        for whole in (True, False):
            runs.append({"data": "breast cancer, 5-fold CV", **measure(X, y, whole, standardize, 5)})
            print(runs[-1], flush=True)
    X, y = make_classification(1000, 8, n_informative=5, random_state=0)
    for whole in (True, False):
        runs.append({"data": "N = 1000, d = 8, one fit (training accuracy)",
                     **measure(X, y, whole, True, 1)})
        print(runs[-1], flush=True)
    payload = {"machine": common.machine_info(), "runs": runs}
    print(table(payload))
    common.save_results(args.out, payload, lambda path: None)


if __name__ == "__main__":
    main()
