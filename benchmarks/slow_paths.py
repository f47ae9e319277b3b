"""The slow paths against the default solver: SimpleMKL, GRAM and ML-MKL-SA beside spicymkl (and Sum).

    OMP_NUM_THREADS=1 python benchmarks/slow_paths.py [--quick] [--repeats R] [--out PATH]

Each case fits the estimator (or solves the problem) with the slow solver and with its
reference in the same run, alternating them, ``--repeats`` times (3; ``--quick``: 1, and no
ML-MKL case), and reports the median wall time of each, their ratio, the status and certified gap.
The first repeat fits the data as they are, each later one the features with every entry moved
by a relative 1e-13 (:func:`perturbed`; ML-MKL-SA: the next sampling seed), since SimpleMKL's
iteration count moves with rounding:

* ``breast cancer, default kernels``: ``MKLClassifier(solver=...)`` on scikit-learn's breast
  cancer (569 rows, all of them), its default kernels; ``simplemkl`` against ``spicymkl``;
* ``breast cancer, SimpleMKL's grid``: the same with SimpleMKL's kernel grid (Gaussian widths
  0.5 to 20 and polynomial degrees 1 to 3, on all features and on each: 403 kernels);
* ``breast cancer, 3 precomputed Gaussians``: ``kernels="precomputed"``, Gaussians of width
  0.5, 1 and 2 times the median squared distance of the standardised rows; ``gram`` against
  ``spicymkl`` (GRAM ends ``completed``: its own steps, not a certified optimum);
* ``pendigits, 10 classes``: ``MKLClassifier(views=...)`` on 500 seeded training digits of
  Pendigits' four views (the default grid on each: 24 kernels), ten one-vs-rest problems;
  ``simplemkl`` against ``spicymkl`` (needs ``../shared/data/pendigits``; skipped without it);
* ``ML-MKL, L = 50``: ``mlmkl-sa`` (seeds 0, 1, 2) against ``mlmkl-sum`` at tol 1e-4 (SA's
  default) and 1e-3, on ``mlmkl_labels.py``'s Pendigits problem (N = 1,000, 12 kernels, 50
  labels, C = 1).

Every fit runs at the estimator's tolerance (1e-3), every solve at the tolerance named.  The
estimators build their kernels in each fit, so the times include them (the same for both); one
small fit of each solver first loads the plugins, which the first fit of a process pays.
Writes ``benchmarks/results/slow_paths[_quick].json``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import common  # noqa: E402

#: The project's target: each slow path within this many times its reference's time.
TARGET = 5.0
#: Pendigits rows of the multi-class case, and their seed.
PENDIGITS_ROWS = 500
#: Labels of the ML-MKL case.
LABELS = 50


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def precomputed_gaussians(X: np.ndarray) -> np.ndarray:
    """Gaussians of width 0.5, 1 and 2 times the median squared distance of the standardised rows,
    as the stack ``(n, n, 3)`` of ``kernels="precomputed"``."""
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    D = common.sq_distances(Z, Z)
    median = float(np.median(D[np.triu_indices_from(D, 1)]))
    return np.stack([np.exp(-D / (w * median)) for w in (0.5, 1.0, 2.0)], axis=-1)


def pendigits() -> tuple[np.ndarray, np.ndarray, dict[str, list[int]]]:
    """500 seeded training digits, the four views side by side, and the views' columns."""
    views, labels = common.load_pendigits("train")
    rows = np.random.default_rng(0).permutation(labels.size)[:PENDIGITS_ROWS]
    blocks = [views[name][rows] for name in common.PENDIGITS_VIEWS]
    edges = np.cumsum([0] + [b.shape[1] for b in blocks])
    columns = {name: list(range(edges[i], edges[i + 1])) for i, name in enumerate(common.PENDIGITS_VIEWS)}
    return np.hstack(blocks), labels[rows], columns


def fit_run(X: Any, y: np.ndarray, **params: Any) -> dict[str, Any]:
    """One ``MKLClassifier(**params).fit(X, y)``: wall time, and the status and largest gap of its problems."""
    from kernelfuse import MKLClassifier

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MKLClassifier(**params).fit(X, y)
    wall = time.perf_counter() - start
    results = model.results_ if isinstance(model.results_, list) else [model.results_]
    statuses = sorted({r.status for r in results})
    return {"wall": wall, "status": "/".join(statuses), "gap": max(float(r.gap) for r in results),
            "n_iter": [int(r.n_iter) for r in results], "problems": len(results)}


def solve_run(K: np.ndarray, Y: np.ndarray, **params: Any) -> dict[str, Any]:
    """One ``kernelfuse.solve``: wall time, status, gap and SVM calls."""
    import kernelfuse

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(K, Y, check_psd=False, **params)
    return {"wall": time.perf_counter() - start, "status": result.status, "gap": float(result.gap),
            "n_iter": [int(result.n_iter)], "problems": 1,
            "svm_calls": float(result.counters.get("svm_calls", np.nan))}


def perturbed(X: np.ndarray, repeat: int) -> np.ndarray:
    """``X`` for the repeat ``repeat``: as it is for the first, then each entry moved by a relative
    1e-13 (seeded): SimpleMKL's iteration count moves with rounding (docs/methods/mirror-vskl.md),
    so each repeat is another draw of it rather than the same run again."""
    if repeat == 0:
        return X
    return X * (1.0 + 1e-13 * np.random.default_rng(repeat).standard_normal(X.shape))


def paired(name: str, slow: tuple[str, Callable[[int], dict[str, Any]]],
           reference: tuple[str, Callable[[int], dict[str, Any]]], repeats: int) -> dict[str, Any]:
    """Both runs on each repeat's instance, alternating; the median wall time of each and their ratio."""
    runs: dict[str, list[dict[str, Any]]] = {slow[0]: [], reference[0]: []}
    for repeat in range(repeats):
        for label, run in (reference, slow):
            runs[label].append(run(repeat))
            print(f"{name:42s} {label:22s} {runs[label][-1]['wall']:7.2f} s  {runs[label][-1]['status']}",
                  flush=True)
    median = {label: float(np.median([r["wall"] for r in rs])) for label, rs in runs.items()}
    return {"case": name, "slow": slow[0], "reference": reference[0], "runs": runs,
            "slow_seconds": median[slow[0]], "reference_seconds": median[reference[0]],
            "ratio": median[slow[0]] / median[reference[0]]}


def measure(repeats: int, quick: bool) -> list[dict[str, Any]]:
    from kernelfuse.frontends.kernel_grid import SIMPLEMKL_WIDTHS, kernel_grid

    X, y = breast_cancer()
    grid = kernel_grid(X.shape[1], widths=SIMPLEMKL_WIDTHS)
    stack = precomputed_gaussians(X)
    for solver in ("spicymkl", "simplemkl", "gram"):  # the first fit of a process loads the plugins
        fit_run(X[:60], y[:60], solver=solver)
    cases = [
        paired("breast cancer, default kernels",
               ("simplemkl", lambda k: fit_run(perturbed(X, k), y, solver="simplemkl")),
               ("spicymkl", lambda k: fit_run(perturbed(X, k), y, solver="spicymkl")), repeats),
        paired(f"breast cancer, SimpleMKL's grid (M = {len(grid)})",
               ("simplemkl", lambda k: fit_run(perturbed(X, k), y, solver="simplemkl", kernels=grid)),
               ("spicymkl", lambda k: fit_run(perturbed(X, k), y, solver="spicymkl", kernels=grid)), repeats),
        paired("breast cancer, 3 precomputed Gaussians",
               ("gram", lambda k: fit_run(stack, y, solver="gram", kernels="precomputed")),
               ("spicymkl", lambda k: fit_run(stack, y, solver="spicymkl", kernels="precomputed")), repeats),
    ]
    missing = common.missing_data("pendigits")
    if missing:
        print(missing)
        return cases
    Xp, yp, views = pendigits()
    cases.append(paired(f"pendigits, 10 classes (N = {PENDIGITS_ROWS}, M = 24)",
                        ("simplemkl", lambda k: fit_run(perturbed(Xp, k), yp, solver="simplemkl", views=views)),
                        ("spicymkl", lambda k: fit_run(perturbed(Xp, k), yp, solver="spicymkl", views=views)),
                        repeats))
    if quick:
        return cases
    import mlmkl_labels

    data = mlmkl_labels.pendigits(1000, 10)
    K, Y = data["K"], mlmkl_labels.label_unions(data["digits_train"], LABELS)
    for tol in (1e-4, 1e-3):
        cases.append(paired(
            f"ML-MKL, L = {LABELS}, tol = {tol:g}",
            ("mlmkl-sa", lambda k, tol=tol: solve_run(K, Y, solver="mlmkl-sa", family="mlmkl_max", C=1.0,
                                                      seed=k, tol=tol)),
            ("mlmkl-sum", lambda k, tol=tol: solve_run(K, Y, solver="mlmkl-sum", family="mlmkl_sum", C=1.0,
                                                       tol=tol)),
            repeats))
    return cases


def table(cases: list[dict[str, Any]]) -> str:
    rows = []
    for case in cases:
        slow, reference = case["runs"][case["slow"]][0], case["runs"][case["reference"]][0]
        iterations = ", ".join(str(sum(r["n_iter"])) for r in case["runs"][case["slow"]])
        rows.append([case["case"], case["slow"], case["slow_seconds"], case["reference"],
                     case["reference_seconds"], case["ratio"], "yes" if case["ratio"] <= TARGET else "NO",
                     f"{slow['status']}, {slow['gap']:.1e}", f"{reference['status']}, {reference['gap']:.1e}",
                     iterations])
    return common.markdown_table(
        ["case", "slow", "s (median)", "reference", "s (median)", "slow / reference", f"within {TARGET:g}x",
         "slow: status, gap", "reference: status, gap", "slow: iterations per repeat"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, no ML-MKL case")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    out = args.out or common.RESULTS_DIR / ("slow_paths_quick.json" if args.quick else "slow_paths.json")
    info = common.machine_info()
    cases = measure(repeats, args.quick)
    print()
    print(table(cases))
    common.write_json(out, {"machine": info, "repeats": repeats, "quick": args.quick, "target": TARGET,
                            "cases": cases})
    print(f"raw measurements: {out}")


if __name__ == "__main__":
    main()
