"""Low-rank kernels on Ringnorm: Nystrom and random Fourier features against the exact Gaussians.

Run: ``.venv/bin/python benchmarks/low_rank.py [--quick]``

Data: Ringnorm (``../shared/data/ringnorm``, 7,400 x 20), a seeded random
N training points (full 2,000, quick 600) and test points (full the other
5,400, quick 2,000), standardised with training statistics.  Kernels:
three Gaussians of widths (0.25, 0.5, 1) x sqrt(20), unit trace on the
training set.  Each kernel approximated by Nystrom with uniform landmarks,
Nystrom with ridge-leverage landmarks (oversample 2, the default
regularisation), and random Fourier features, of rank (features) r = 25,
50, 100, 200, 400, 800 (quick: 25, 100, 400), the seed of kernel m being m.
Model: ``l1_mkl``, logistic loss, C = 0.3, ``spicymkl`` to a relative gap
of 1e-3 (the estimators' default), ``check_psd=False``.

Measured per method and r, single runs on one BLAS thread: the time to fit the maps (landmarks
or draws), to build the training stack (features, their products,
normalisation), to solve, and to predict the test set (a) through the test
stack ``K(x_test, x_train)`` as every kernelfuse model does and (b) from
the features: ``f(x) = b + sum_m s_m phi_m(x) . w_m`` with
``w_m = Phi_m' coef_m`` computed once (O(r d) per test point and kernel, the
Nystrom projection folded into ``w_m``; its decision values are checked
against (a)); the relative Frobenius error
``||K~_m - K_m||_F / ||K_m||_F`` of each training kernel (mean over the
three); test accuracy; the bytes of the features against the stack.  The
exact kernels are measured in the same run.

Raw measurements: ``benchmarks/results/low_rank[_quick].json`` (+ PNG).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread: steadier times on a shared 2-core machine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

CONFIG = {
    "full": {"n_train": 2000, "n_test": 5400, "ranks": (25, 50, 100, 200, 400, 800)},
    "quick": {"n_train": 600, "n_test": 2000, "ranks": (25, 100, 400)},
}
WIDTHS = (0.25, 0.5, 1.0)  # times sqrt(d)
SOLVE = {"family": "l1_mkl", "loss": "logistic", "C": 0.3, "tol": 1e-3, "check_psd": False}
METHODS = ("nystrom-uniform", "nystrom-leverage", "random-fourier")


def log(message: str) -> None:
    print(message, flush=True)


def ringnorm(n_train: int, n_test: int, seed: int) -> dict[str, np.ndarray]:
    """A seeded train / test split of Ringnorm, standardised with the training statistics."""
    values = np.loadtxt(common.data_dir() / "ringnorm" / "data.csv", delimiter=",", skiprows=1)
    X, y = values[:, :-1], values[:, -1]
    rows = np.random.default_rng(seed).permutation(y.size)
    train, test = rows[:n_train], rows[n_train:n_train + n_test]
    X_train, X_test = common.standardise(X[train], X[test])
    return {"X_train": X_train, "y_train": y[train], "X_test": X_test, "y_test": y[test]}


def low_rank_kernels(method: str, rank: int, X: np.ndarray) -> list[Any]:
    """The approximation ``method`` of rank ``rank`` of each Gaussian, kernel m with seed m."""
    from kernelfuse import get_registry
    from kernelfuse.plugins.kernels.nystrom import Nystrom
    from kernelfuse.plugins.kernels.random_features import RandomFourierFeatures

    d = X.shape[1]
    out = []
    for m, width in enumerate(w * math.sqrt(d) for w in WIDTHS):
        if method == "random-fourier":
            out.append(RandomFourierFeatures.draw(d, width=width, n_features=rank, seed=m))
        else:
            base = get_registry().create("kernel", "gaussian", width=width)
            out.append(Nystrom.fit(base, X, rank, sampling=method.split("-")[1], seed=m))
    return out


def measure(kernels: list[Any], data: dict[str, np.ndarray], exact_raw: np.ndarray | None
            ) -> tuple[dict[str, Any], np.ndarray]:
    """Stacks, solve, both predictions, errors and accuracy of one kernel list; its raw training stack."""
    from kernelfuse.kernels.functions import KernelSpec, compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer

    X, X_test, y, y_test = data["X_train"], data["X_test"], data["y_train"], data["y_test"]
    specs = [KernelSpec(k) for k in kernels]
    with common.Timer() as t_train:
        normalizer = KernelNormalizer("unit-trace").fit(specs, X)
        raw = compute_kernels(specs, X)
        K = normalizer.transform(raw.copy())
    run = common.run_solver(K, y, "spicymkl", **SOLVE)
    del K
    result = run.pop("_result")
    with common.Timer() as t_test:
        K_test = normalizer.transform(compute_kernels(specs, X, X_test), specs, X_test)
        f_stack = result.decision_function(K_test)
    del K_test
    row = {"status": run["status"], "solve_time": run["time"], "n_iter": run["n_iter"],
           "gap": run["gap"], "kernel_weights": run["kernel_weights"],
           "train_stack_time": t_train.seconds, "test_stack_predict_time": t_test.seconds,
           "accuracy": float(np.mean(np.where(f_stack >= 0, 1.0, -1.0) == y_test)),
           "stack_mb": raw.nbytes / 2**20}
    if hasattr(kernels[0], "features"):
        scales = 1.0 / normalizer.train_diagonal_.sum(axis=1)  # unit trace
        with common.Timer() as t_features:
            f = np.full(X_test.shape[0], result.intercept)
            for m, kernel in enumerate(kernels):
                f += scales[m] * feature_decision(kernel, kernel.features(X).T @ result.coef[m], X_test)
        row.update({"features_predict_time": t_features.seconds,
                    "features_vs_stack_max_abs": float(np.abs(f - f_stack).max()),
                    "features_mb": sum(X.shape[0] * k.features(X[:1]).shape[1] * 8 for k in kernels) / 2**20})
    if exact_raw is not None:
        errors = [float(np.linalg.norm(raw[m] - exact_raw[m]) / np.linalg.norm(exact_raw[m]))
                  for m in range(len(kernels))]
        row.update({"errors": errors, "error": float(np.mean(errors))})
    return row, raw


def feature_decision(kernel: Any, w: np.ndarray, X_test: np.ndarray) -> np.ndarray:
    """``phi(x) . w`` for every test row; for Nystrom ``k_L(x) . (W^{+1/2} w)``, O(r d) per row."""
    from kernelfuse.plugins.kernels.nystrom import Nystrom

    if isinstance(kernel, Nystrom):
        return kernel.base_kernel(X_test, kernel.landmarks) @ (kernel.projection @ w)
    return kernel.features(X_test) @ w


def trade_off_table(payload: dict[str, Any]) -> str:
    """One row per method and rank: errors, accuracy, times (s) and memory against the exact kernels."""
    exact = payload["exact"]
    widths = " / ".join(f"{w:g}" for w in payload["config"]["widths"])
    rows = [["exact", "-", "0", f"{exact['accuracy']:.4f}", "-", "-",
             *(common.fmt(exact[key])
               for key in ("train_stack_time", "solve_time", "test_stack_predict_time")),
             "-", f"{exact['stack_mb']:.0f}", "-"]]
    for r in payload["runs"]:
        rows.append([r["method"], r["rank"], " / ".join(common.fmt(e, 2) for e in r["errors"]),
                     f"{r['accuracy']:.4f}", f"{r['accuracy'] - exact['accuracy']:+.4f}",
                     *(common.fmt(r[key]) for key in ("fit_time", "train_stack_time", "solve_time",
                                                      "test_stack_predict_time", "features_predict_time")),
                     f"{r['stack_mb']:.0f}", f"{r['features_mb']:.1f}"])
    headers = ["kernels", "r", f"rel. error (widths {widths} x sqrt(d))", "test acc.", "vs exact",
               "fit maps (s)", "train stack (s)", "solve (s)", "predict via test stack (s)",
               "predict via features (s)", "stack (MiB)", "features (MiB)"]
    return common.split_table(headers, rows, keys=[0, 1], groups=[
        ("Accuracy against the exact kernels:", [2, 3, 4]),
        ("Time and memory:", [5, 6, 7, 8, 9, 10, 11])])


TABLES = {"trade_off": trade_off_table}


def plot(payload: dict[str, Any], path: Path) -> Path | None:
    if not common.have_matplotlib():
        return None
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    exact = payload["exact"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for method, marker in zip(METHODS, "osd", strict=True):
        runs = [r for r in payload["runs"] if r["method"] == method]
        ranks = [r["rank"] for r in runs]
        axes[0].loglog(ranks, [r["error"] for r in runs], marker=marker, label=method)
        axes[1].semilogx(ranks, [r["accuracy"] for r in runs], marker=marker, label=method)
        axes[2].loglog(ranks, [r["features_predict_time"] for r in runs], marker=marker,
                       label=f"{method}, via features")
    axes[1].axhline(exact["accuracy"], color="k", linestyle="--", label="exact")
    axes[2].axhline(exact["test_stack_predict_time"], color="k", linestyle="--",
                    label="exact, via test stack")
    axes[0].set(xlabel="rank r", ylabel="relative Frobenius error",
                title="approximation error (mean of the kernels)")
    axes[1].set(xlabel="rank r", ylabel="test accuracy", title="l1_mkl test accuracy")
    axes[2].set(xlabel="rank r", ylabel="seconds", title="predicting the test set")
    ranks = sorted({r["rank"] for r in payload["runs"]})
    for ax in axes:
        ax.set_xticks(ranks, [str(r) for r in ranks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return common.save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="split seed")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args()
    cfg = CONFIG["quick" if args.quick else "full"]
    machine = common.machine_info()
    data = ringnorm(cfg["n_train"], cfg["n_test"], args.seed)
    log(f"Ringnorm: {cfg['n_train']} training and {cfg['n_test']} test points, "
        f"{len(WIDTHS)} Gaussian kernels")

    from kernelfuse import get_registry

    d = data["X_train"].shape[1]
    exact_kernels = [get_registry().create("kernel", "gaussian", width=w * math.sqrt(d))
                     for w in WIDTHS]
    exact, exact_raw = measure(exact_kernels, data, None)
    log(f"  exact: accuracy {exact['accuracy']:.4f}, train stack {exact['train_stack_time']:.2f}s, "
        f"solve {exact['solve_time']:.2f}s ({exact['status']}), "
        f"predict {exact['test_stack_predict_time']:.2f}s")
    runs = []
    for method in METHODS:
        for rank in cfg["ranks"]:
            with common.Timer() as t_fit:
                kernels = low_rank_kernels(method, rank, data["X_train"])
            row, _ = measure(kernels, data, exact_raw)
            row.update({"method": method, "rank": rank, "fit_time": t_fit.seconds})
            runs.append(row)
            log(f"  {method} r = {rank}: error {row['error']:.4f}, accuracy {row['accuracy']:.4f}, fit "
                f"{row['fit_time']:.2f}s, train stack {row['train_stack_time']:.2f}s, solve "
                f"{row['solve_time']:.2f}s ({row['status']}), predict {row['test_stack_predict_time']:.2f}s "
                f"(stack) / {row['features_predict_time']:.3f}s (features; max difference "
                f"{row['features_vs_stack_max_abs']:.1e})")
    machine["loadavg_end"] = list(os.getloadavg())
    payload = {"machine": machine, "config": {**cfg, "widths": WIDTHS, "solve": SOLVE, "seed": args.seed},
               "exact": exact, "runs": runs}
    print(f"\n### Low-rank kernels against the exact Gaussians (Ringnorm, N = {cfg['n_train']})\n")
    print(trade_off_table(payload))
    out = args.out or common.RESULTS_DIR / f"low_rank{'_quick' if args.quick else ''}.json"
    common.save_results(out, payload, lambda path: plot(payload, path))


if __name__ == "__main__":
    main()
