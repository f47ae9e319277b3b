"""kernelfuse's two-stage solvers beside MKLpy 0.6's one-step algorithms on the same kernels.

For each UCI set of ``../shared/data`` (ionosphere, sonar, liver) and each seeded 70/30
stratified split: a small grid of Gaussian kernels (five widths on all features, three on
seeded feature subsets; ``sigma = width * sqrt(#features)``, unit diagonal), computed once and
handed to both libraries; then each pair

    average / AverageMKL, fheuristic / FHeuristic, cka / CKA, pwmk / PWMK, easymkl / EasyMKL (lam 0.1),
    gram / GRAM, memo / MEMO, rmkl / RMKL (100 steps of 0.01 on both sides, of MKLpy's default 1000)

is fitted with the same SVM ``C`` (kernelfuse: ``kernelfuse.solve(..., family="l1_mkl_sq")``;
MKLpy: its algorithm with ``SVC(kernel="precomputed", C=C)`` as base learner,
``benchmarks/mklpy_peer.py``).  Recorded per run: both weight vectors (MKLpy's divided by the
sum of their absolute values), their largest difference, the test accuracy of both, and both
fit times (one thread each; kernelfuse's includes its certificate) with their ratio.  MKLpy's
CKA solves the alignment system without ``v >= 0`` (docs/methods/two-stage.md): where its
weights have a negative entry the difference is recorded, not expected below 1e-3.

``python benchmarks/mklpy_algorithms.py [--quick]``: JSON in
``benchmarks/results/mklpy_algorithms[_quick].json``; ``--quick`` one split, the full run five.
MKLpy is optional (``make bench-env`` installs it with a CPU build of torch): without it only kernelfuse's
side is measured, and the JSON says why.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from mklpy_peer import mklpy_status, run_mklpy

import common
import kernelfuse

SETS = ("ionosphere", "sonar", "liver")
#: kernelfuse solver -> MKLpy 0.6 algorithm (deterministic) and the parameters both get.
PAIRS: dict[str, tuple[str, dict[str, Any]]] = {
    "average": ("AverageMKL", {}), "fheuristic": ("FHeuristic", {}), "cka": ("CKA", {}), "pwmk": ("PWMK", {}),
    "easymkl": ("EasyMKL", {"lam": 0.1}), "gram": ("GRAM", {"max_iter": 100, "learning_rate": 0.01}),
    "memo": ("MEMO", {"max_iter": 100, "learning_rate": 0.01}),
    "rmkl": ("RMKL", {"max_iter": 100, "learning_rate": 0.01}),
}
C = 10.0
WIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0)


def kernels(split: dict[str, Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The grid on one split: (M, N, N) and (M, n_test, N), unit diagonal."""
    d = split["X_train"].shape[1]
    rng = np.random.default_rng(seed)
    subsets = [sorted(rng.choice(d, size=max(1, d // 3), replace=False).tolist()) for _ in range(3)]
    specs = [(None, w) for w in WIDTHS] + [(cols, 1.0) for cols in subsets]
    K, K_test = common.gaussian_kernels(split["X_train"], split["X_test"], specs)
    n = K.shape[1]
    assert K_test is not None
    return K * n, K_test * n  # undo the unit trace: Gaussians have unit diagonal


def run_ours(solver: str, K: np.ndarray, y: np.ndarray, K_test: np.ndarray, y_test: np.ndarray,
             params: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        start = time.perf_counter()
        result = kernelfuse.solve(K, y, solver=solver, family="l1_mkl_sq", C=C, **params)
        elapsed = time.perf_counter() - start
    return {"time": elapsed, "accuracy": common.accuracy(K_test, y_test, result.coef, result.intercept),
            "kernel_weights": result.kernel_weights.tolist(), "status": result.status, "gap": result.gap}


def measure(name: str, seed: int) -> list[dict[str, Any]]:
    split = common.uci_split(name, seed=seed)
    K, K_test = kernels(split, seed)
    y, y_test = split["y_train"], split["y_test"]
    runs = []
    for solver, (algorithm, params) in PAIRS.items():
        ours = run_ours(solver, K, y, K_test, y_test, params)
        theirs = run_mklpy(algorithm, K, y, K_test, y_test, C=C, params=params)
        row: dict[str, Any] = {"dataset": name, "seed": seed, "N": int(y.size), "M": int(K.shape[0]),
                               "solver": solver, "mklpy": algorithm, "ours": ours, "theirs": theirs}
        if theirs["status"] == "ok":
            w = np.asarray(theirs["kernel_weights"])
            row["max_weight_difference"] = float(np.max(np.abs(np.asarray(ours["kernel_weights"]) - w)))
            row["mklpy_negative_weights"] = bool(w.min() < 0)
            row["time_ratio"] = ours["time"] / theirs["time"]
        runs.append(row)
        print(f"{name} seed {seed} {solver:10s} acc {ours['accuracy']:.3f} / {theirs['accuracy']:.3f}  "
              f"max |dw| {row.get('max_weight_difference', float('nan')):.2e}  "
              f"time {ours['time']:.3f} s / {theirs['time']:.3f} s")
    return runs


def warm_up() -> None:
    """Every solver of both libraries once on a small problem, before any clock starts: imports,
    the registry and cvxpy's first compilation are not the methods' fit times."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = np.stack([np.exp(-common.sq_distances(X, X) / w) for w in (1.0, 4.0)])
    for solver, (algorithm, params) in PAIRS.items():
        run_ours(solver, K, y, K, y, {**params, "max_iter": 2} if "max_iter" in params else params)
        run_mklpy(algorithm, K, y, K, y, C=C, params={**params, "max_iter": 2} if "max_iter" in params else params)


def comparison_table(payload: dict[str, Any]) -> str:
    """One row per data set and method, over the splits: the largest weight difference, the
    mean test accuracies, the median fit times and their ratio."""
    rows = []
    for name in dict.fromkeys(r["dataset"] for r in payload["runs"]):
        for solver, (algorithm, _) in PAIRS.items():
            runs = [r for r in payload["runs"] if r["dataset"] == name and r["solver"] == solver]
            if not runs:
                continue
            compared = [r for r in runs if "max_weight_difference" in r]
            ours_time = float(np.median([r["ours"]["time"] for r in runs]))
            theirs_time = float(np.median([r["theirs"]["time"] for r in compared])) if compared else None
            diff = max(r["max_weight_difference"] for r in compared) if compared else None
            negative = any(r["mklpy_negative_weights"] for r in compared)
            rows.append([
                name, runs[0]["N"], f"{solver} / {algorithm}",
                None if diff is None else common.fmt(diff) + (" (MKLpy < 0)" if negative else ""),
                float(np.mean([r["ours"]["accuracy"] for r in runs])),
                float(np.mean([r["theirs"]["accuracy"] for r in compared])) if compared else None,
                ours_time, theirs_time,
                None if theirs_time is None else ours_time / theirs_time,
            ])
    splits = len({r["seed"] for r in payload["runs"]})
    return common.markdown_table(
        ["set", "N", "kernelfuse / MKLpy", "max weight diff.", "acc. kernelfuse", "acc. MKLpy",
         "fit kernelfuse (s)", "fit MKLpy (s)", "time ratio"], rows) + (
        f"\n\n{splits} split(s), M = {payload['runs'][0]['M']} Gaussian kernels, C = {payload['C']:g}, "
        f"MKLpy {payload['mklpy'].get('version')} with torch {payload['mklpy'].get('torch')}.")


TABLES = {"comparison": comparison_table}


def draw_times(payload: dict[str, Any], path: Path) -> Path | None:
    """The table's fit times as a picture: per method, the median seconds of kernelfuse and of
    MKLpy over the splits (log scale), one panel per data set; a method MKLpy did not run has
    kernelfuse's bar alone."""
    if not common.have_matplotlib():
        return None
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["dataset"] for r in payload["runs"]))
    methods = [m for m in PAIRS if any(r["solver"] == m for r in payload["runs"])]
    fig, axes = plt.subplots(1, len(sets), figsize=(3.6 * len(sets), 0.42 * len(methods) + 1.4),
                             sharey=True, squeeze=False)
    for ax, name in zip(axes[0], sets):
        for y, method in enumerate(methods):
            runs = [r for r in payload["runs"] if r["dataset"] == name and r["solver"] == method]
            ours = float(np.median([r["ours"]["time"] for r in runs]))
            theirs = [r["theirs"]["time"] for r in runs if "max_weight_difference" in r]
            ax.barh(y - 0.2, ours, height=0.4, color="tab:blue", label="kernelfuse" if y == 0 else None)
            if theirs:
                ax.barh(y + 0.2, float(np.median(theirs)), height=0.4, color="tab:gray",
                        label="MKLpy" if y == 0 else None)
        ax.set_xscale("log")
        ax.set_title(f"{name} (N={runs[0]['N']}, M={runs[0]['M']})", fontsize=9)
        ax.set_xlabel("median fit seconds (log)", fontsize=8)
        ax.tick_params(labelsize=8)
    axes[0][0].set_yticks(range(len(methods)), [f"{m} / {PAIRS[m][0]}" for m in methods])
    axes[0][0].invert_yaxis()
    axes[0][0].legend(fontsize=8, loc="upper right")  # over the short bars of the first methods
    return common.save_figure(fig, path)


#: Figures ``benchmarks/report.py`` draws from the JSON, as ``<json stem>_<name>.png``.
FIGURES = {"times": draw_times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one split per data set")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or common.RESULTS_DIR / f"mklpy_algorithms{'_quick' if args.quick else ''}.json"
    status = mklpy_status()
    if not status["available"]:
        print(f"MKLpy is not available ({status['reason']}): measuring kernelfuse alone")
    warm_up()
    runs = []
    for name in common.available_sets(SETS):
        for seed in range(1 if args.quick else 5):
            runs += measure(name, seed)
    payload = {"machine": common.machine_info(), "mklpy": status, "C": C, "widths": WIDTHS, "runs": runs}
    print()
    print(comparison_table(payload))
    common.save_results(out, payload, lambda path: None)


if __name__ == "__main__":
    main()
