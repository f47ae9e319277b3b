"""The main job: MKL on scikit-learn's breast-cancer data with the papers' kernel grid.

``kernelfuse demo`` (and ``make demo``): a stratified 80/20 split (455 training points),
standardised features, the per-feature kernel grid (M = 837 kernels, a 1.39 GB stack), unit-trace
normalisation, then the default solver (``spicymkl`` on ``l1_mkl``, logistic loss, ``C = 0.3``,
a relative gap of 1e-3: the estimators' default, chosen by measurement, docs/main-job.md) against
the average-kernel SVM on the same kernels.  Prints test accuracy, the kernels selected,
objective, certified gap and time; writes PNG plots of the kernel weights and of the gap against
time (with the optional ``plot`` extra).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {"solver": "spicymkl", "family": "l1_mkl", "loss": "logistic", "C": 0.3, "tol": 1e-3}
#: The average-kernel SVM compared against: an SVC on the mean kernel.
AVERAGE: dict[str, Any] = {"family": "l1_mkl_sq", "C": 100.0}


def breast_cancer_split(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Standardised 80/20 stratified split of breast cancer (+1 benign / -1 malignant), feature names."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer()
    X, y = data.data, np.where(data.target == 1, 1.0, -1.0)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(X_train)
    return (scaler.transform(X_train), scaler.transform(X_test), y_train, y_test,
            list(data.feature_names))


def run_demo(output: str | PathLike[str], *, quick: bool = False, quiet: bool = False,
             solver: str = DEFAULTS["solver"]) -> dict[str, Any]:
    """Run the main job, writing into the folder ``output`` (created first, or refused before
    any work when it cannot be written); returns the figures it printed."""
    from kernelfuse.assembly.api import solve
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.frontends.progress import ProgressPrinter
    from kernelfuse.kernels.functions import compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer
    from kernelfuse.runtime.files import output_folder
    from kernelfuse.runtime.memory import readable_bytes

    say = (lambda *a: None) if quiet else print
    output = output_folder(output)  # refused before any work when it cannot be written
    X_train, X_test, y_train, y_test, names = breast_cancer_split()
    grid: dict[str, Any] = {"widths": (1.0, 5.0), "degrees": (1,)} if quick else {}
    specs = kernel_grid(X_train.shape[1], feature_names=names, **grid)
    logger.info("demo: building %d kernels on %d training and %d test points (%s with the test kernels)", len(specs),
                X_train.shape[0], X_test.shape[0],
                readable_bytes(len(specs) * X_train.shape[0] * (X_train.shape[0] + X_test.shape[0]) * 8))
    start = time.perf_counter()
    normalizer = KernelNormalizer("unit-trace").fit(specs, X_train)
    K = normalizer.transform(compute_kernels(specs, X_train))
    K_test = normalizer.transform(compute_kernels(specs, X_train, X_test), specs, X_test)
    kernel_time = time.perf_counter() - start
    say(f"breast cancer: {K.shape[1]} training / {K_test.shape[1]} test points, "
        f"{len(specs)} kernels (training stack {readable_bytes(K.nbytes)}), built in {kernel_time:.1f}s")

    params = {key: value for key, value in DEFAULTS.items() if key != "solver"}
    if solver != DEFAULTS["solver"]:  # another solver: the SVC form of the baseline
        params = {"tol": DEFAULTS["tol"], **AVERAGE}
    result = solve(K, y_train, solver=solver, check_psd=False,
                   callback=None if quiet else ProgressPrinter.wanted(), **params)
    average = solve(K, y_train, solver="average", check_psd=False, **AVERAGE)
    accuracy = float(np.mean(np.sign(result.decision_function(K_test)) == y_test))
    average_accuracy = float(np.mean(np.sign(average.decision_function(K_test)) == y_test))
    weights = result.kernel_weights
    assert weights is not None  # the l1_mkl family reports its kernel weights
    order = np.argsort(weights)[::-1]
    selected = int(np.sum(weights > 1e-3))
    say(f"\n{solver}: test accuracy {accuracy:.3f} (average-kernel SVM {average_accuracy:.3f}), "
        f"{selected} of {len(specs)} kernels selected (weight > 1e-3)")
    say(f"objective {result.objective:.6g}, certified gap {result.gap:.1e}, "
        f"{result.n_iter} iterations, {result.time:.1f}s ({_counters(result.counters)}); "
        f"average-kernel SVM {average.time:.2f}s")
    say("top kernels:")
    for m in order[:5]:
        say(f"  {weights[m]:.3f}  {specs[m].label}")
    figures: dict[str, Any] = {
        "n_train": int(K.shape[1]), "n_kernels": len(specs), "accuracy": accuracy,
        "average_accuracy": average_accuracy, "selected": selected,
        "objective": result.objective, "gap": result.gap, "time": result.time,
        "average_time": average.time, "kernel_time": kernel_time, "status": result.status,
    }
    result.save(output / "result.npz")
    say(f"wrote {output / 'result.npz'}")
    figures["plots"] = _plots(output, result, specs, order)
    if figures["plots"]:
        say(f"plots: {', '.join(str(p) for p in figures['plots'])}")
    else:
        say("plots skipped: matplotlib is not installed (pip install 'kernelfuse[plot]')")
    return figures


def _counters(counters: Mapping[str, float]) -> str:
    """``"91 svm calls, 128 kernel passes"``: the work a solver counted."""
    return ", ".join(f"{value:.0f} {name.replace('_', ' ')}" for name, value in counters.items()
                     if name != "active_kernels")


def _plots(output: Path, result: Any, specs: list[Any], order: np.ndarray) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from kernelfuse.runtime.files import write_png

    top = order[:20]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.barh([specs[m].label for m in top][::-1], result.kernel_weights[top][::-1])
    ax.set_xlabel("kernel weight d_m (f = sum_m d_m K_m alpha)")
    ax.set_title(f"top {len(top)} of {len(specs)} kernels")
    fig.tight_layout()
    weights_png = write_png(fig, output / "kernel_weights.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    times = [row.time for row in result.history]
    gaps = [max(row.gap, 1e-16) for row in result.history]
    ax.semilogy(times, gaps, marker=".")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("certified relative duality gap")
    ax.set_title(f"{result.solver} on {result.family}")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return [weights_png, write_png(fig, output / "gap_vs_time.png")]
