"""OBSCURE per epoch in the primal on kernel factors, against kernel rows and the dense stack, as N grows.

Run: ``.venv/bin/python benchmarks/obscure_factors.py [--quick | --full]``

Data: the four Pendigits views (``dyn`` 16, ``sta4`` 16, ``sta8`` 64,
``sta16`` 256 features) of the official training and test files pooled
(10,992 digits), a seeded subset of N of them, each column standardised.
Kernels: per view three Gaussians of widths (0.5, 1, 2) x sqrt(d), each
approximated by Nystrom on ``r = 64`` uniform landmarks (seed m for kernel
m): M = 12 factors ``Phi_m`` (N x 64), spherically normalised
(:meth:`~kernelfuse.kernels.factors.FactorKernels.from_specs`).  10 classes,
the Crammer-Singer loss, ``pnorm_mkl`` with ``p = 1.5`` and ``lam = 0.01``
at every N, ``obscure``'s stochastic stage (``online_epochs=0``: Algorithm 2
with its adaptive steps from the first epoch) for two epochs, seed 0, one
BLAS thread.  A fixed ``lam`` keeps the share of examples with a positive
loss (the updates, which cost a kernel row each on rows and on the stack)
near 38% at every N, so the times compare the same work per example; with
the paper's ``lam = 1/N`` and the online stage that share falls as N grows.

The same kernels in three storages, each run giving the same iterates (the
same example order and updates; the largest coefficient difference against
the factors' run is recorded):

* ``factors``: :class:`~kernelfuse.kernels.factors.FactorKernels`, solved
  in the primal (:class:`~kernelfuse.plugins.obscure.feature_expansion.FeatureExpansion`,
  ``O(N r M C)`` per epoch);
* ``rows``: the same factors behind a plain
  :class:`~kernelfuse.kernels.rows.KernelRows` (rows ``Phi_m Phi_m[i]`` on
  demand, ``O(N r M)`` each), solved as before the primal iterate existed
  (:class:`~kernelfuse.plugins.obscure.kernel_expansion.KernelExpansion`:
  ``O(N r M)`` per update for the row, ``O(M N)`` per updated class for the
  products, so ``O(N^2 r M)`` per epoch);
* ``stack``: ``Phi_m Phi_m'`` in memory (``8 M N^2`` bytes), the kernel
  expansion reading its rows (``O(N^2 M)`` per epoch); the time to form it
  is recorded apart.

Measured per storage and N: the time per epoch (from the history: the time
after the last epoch less the time after ``P(0)``, over the epochs), the
set-up before the first epoch (stacking the factors, ``P(0)``), kernel
passes, updates (from the factors' pass count: :mod:`kernelfuse.plugins.obscure.feature_expansion`
gives ``(examples + updates + N evaluations) r / N^2`` passes; the stack's
count, ``updates / N``, is recorded beside it), the objective; the log-log
slope of the time per epoch against N per storage.  Default: factors at
N = 1000 ... 10,992, rows and the stack up to 8000, about 2.5 minutes;
``--quick``: N = 500 ... 2000.

Raw measurements: ``benchmarks/results/obscure_factors[_quick].json`` (+ PNG).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread: steadier times on a shared 2-core machine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

CONFIG = {
    "full": {"Ns": (1000, 2000, 4000, 8000, 10992), "rows_max_N": 8000, "stack_max_N": 8000},
    "quick": {"Ns": (500, 1000, 2000), "rows_max_N": 2000, "stack_max_N": 2000},
}
RANK = 64
WIDTHS = (0.5, 1.0, 2.0)  # times sqrt(d)
EPOCHS = 2
P = 1.5
LAM = 0.01
STORAGES = ("factors", "rows", "stack")


def log(message: str) -> None:
    print(message, flush=True)


def pendigits(N: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """N seeded digits of the pooled training and test files: standardised views side by side, labels,
    and each view's column range."""
    views = [common.load_pendigits(split) for split in ("train", "test")]
    X = np.vstack([np.hstack([v[name] for name in common.PENDIGITS_VIEWS]) for v, _ in views])
    y = np.concatenate([labels for _, labels in views])
    rows = np.sort(np.random.default_rng(seed).permutation(y.size)[:N])
    X = X[rows]
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    bounds, start = [], 0
    for name in common.PENDIGITS_VIEWS:
        d = views[0][0][name].shape[1]
        bounds.append((start, start + d))
        start += d
    return (X - X.mean(axis=0)) / scale, y[rows], bounds


def factor_kernels(X: np.ndarray, bounds: list[tuple[int, int]]) -> Any:
    """The 12 Nystrom Gaussians (rank :data:`RANK`, kernel m with seed m), spherically normalised."""
    from kernelfuse import get_registry
    from kernelfuse.kernels.factors import FactorKernels
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.plugins.kernels.nystrom import Nystrom

    specs = []
    for start, stop in bounds:
        cols = list(range(start, stop))
        for width in WIDTHS:
            base = get_registry().create("kernel", "gaussian", width=width * math.sqrt(len(cols)))
            specs.append(KernelSpec(Nystrom.fit(base, X[:, cols], RANK, seed=len(specs)), cols))
    return FactorKernels.from_specs(specs, X, "spherical")


def as_rows(kernels: Any) -> Any:
    """The factor kernels seen as plain kernel rows (``Phi_m Phi_m[i]`` on demand, O(N r M) a row)."""
    from kernelfuse.kernels.rows import KernelRows

    class FactorRows(KernelRows):
        def __init__(self) -> None:
            self.shape = kernels.shape

        def rows(self, i: int) -> np.ndarray:
            return kernels.rows(i)

        def diagonal(self) -> np.ndarray:
            return kernels.diagonal()

    return FactorRows()


def run(K: Any, y: np.ndarray) -> dict[str, Any]:
    """:data:`EPOCHS` stochastic epochs of ``obscure``, seed 0: time per epoch from the history.

    ``check_psd=False``: the check's eigendecompositions of a stack (``O(M N^3)``) would dwarf the
    epochs, and ``Phi Phi'`` is PSD by construction."""
    import kernelfuse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # stopped by max_iter on purpose
        result = kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", p=P, lam=LAM, online_epochs=0,
                                  max_iter=EPOCHS, tol=1e-12, seed=0, check_psd=False)
    first, last = result.history[0], result.history[-1]
    return {"epoch_time": (last.time - first.time) / EPOCHS, "setup_time": first.time,
            "solve_time": result.time, "objective": result.objective, "status": result.status,
            "kernel_passes": result.counters["kernel_passes"], "examples": result.counters["examples"],
            "coef": result.coef}


def slope(Ns: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) against log(N)."""
    return float(np.polyfit(np.log(Ns), np.log(times), 1)[0]) if len(Ns) >= 2 else math.nan


def epoch_table(payload: dict[str, Any]) -> str:
    """One row per N: seconds per epoch per storage, their ratios, the work, the memory; the slopes."""
    rows = []
    for N in payload["config"]["Ns"]:
        by = {r["storage"]: r for r in payload["runs"] if r["N"] == N}
        factors = by["factors"]
        differences = [r["coef_difference"] for r in by.values() if "coef_difference" in r]
        cells: list[Any] = [N, f"{factors['updates'] / (EPOCHS * N):.2f}"]
        cells += [common.fmt(by[s]["epoch_time"]) if s in by else "-" for s in STORAGES]
        cells += [common.fmt(by[s]["epoch_time"] / factors["epoch_time"], 2) if s in by else "-"
                  for s in STORAGES[1:]]
        cells += [common.fmt(1e6 * factors["epoch_time"] / N, 3),
                  common.fmt(1e3 * by["rows"]["epoch_time"] * EPOCHS / factors["updates"], 3) if "rows" in by else "-",
                  common.fmt(factors["kernel_passes"] / EPOCHS, 2),
                  common.fmt(by["rows"]["kernel_passes"] / EPOCHS, 2) if "rows" in by else "-",
                  f"{factors['factors_mb']:.0f}", f"{factors['stack_mb']:.0f}",
                  common.fmt(by["stack"]["stack_build_time"]) if "stack" in by else "-",
                  common.fmt(max(differences), 1) if differences else "-"]
        rows.append(cells)
    rows.append(["slope (log-log)", "-", *(common.fmt(payload["slopes"][s], 2) for s in STORAGES),
                 *["-"] * 10])
    headers = ["N", "updates / example", "factors (s / epoch)", "rows (s / epoch)", "stack (s / epoch)",
               "rows / factors", "stack / factors", "factors (us / example)", "rows (ms / update)",
               "passes / epoch (factors)", "passes / epoch (rows)", "factors (MiB)", "stack (MiB)",
               "forming the stack (s)", "max coef difference"]
    return common.split_table(headers, rows, keys=[0], groups=[
        ("Seconds per epoch by storage, and their ratios:", [1, 2, 3, 4, 5, 6]),
        ("Work per example, update and epoch:", [7, 8, 9, 10]),
        ("Memory, forming the stack, and agreement of the models:", [11, 12, 13, 14])])


TABLES = {"epochs": epoch_table}


def plot(payload: dict[str, Any], path: Path) -> Path | None:
    if not common.have_matplotlib():
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for storage, marker in zip(STORAGES, "osd", strict=True):
        runs = [r for r in payload["runs"] if r["storage"] == storage]
        ax.loglog([r["N"] for r in runs], [r["epoch_time"] for r in runs], marker=marker,
                  label=f"{storage} (slope {payload['slopes'][storage]:.2f})")
    ax.set(xlabel="N", ylabel="seconds per epoch",
           title=f"OBSCURE on Pendigits, M = 12, r = {RANK}, 10 classes")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return common.save_figure(fig, path)


def measure(N: int, cfg: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """The three storages at one N (as many as the configuration allows)."""
    X, y, bounds = pendigits(N, seed)
    with common.Timer() as t_factors:
        kernels = factor_kernels(X, bounds)
    runs: list[dict[str, Any]] = []
    reference = None
    for storage in STORAGES:
        extra: dict[str, Any] = {}
        if storage == "factors":
            K = kernels
            extra.update({"factor_time": t_factors.seconds, "factors_mb": kernels.nbytes / 2**20,
                          "stack_mb": 8 * 12 * N * N / 2**20})
        elif storage == "rows" and N <= cfg["rows_max_N"]:
            K = as_rows(kernels)
        elif storage == "stack" and N <= cfg["stack_max_N"]:
            with common.Timer() as t_stack:
                K = np.stack([Phi @ Phi.T for Phi in kernels.factors])
            extra["stack_build_time"] = t_stack.seconds
        else:
            continue
        row = run(K, y)
        del K
        coef = row.pop("coef")
        if reference is None:
            reference = coef
            r = int(kernels.ranks.max())
            extra["updates"] = round(row["kernel_passes"] * N**2 / r - row["examples"] - N * (EPOCHS + 1))
        else:
            extra["coef_difference"] = float(np.abs(coef - reference).max() / np.abs(reference).max())
        if storage == "stack":
            extra["stack_updates"] = round(row["kernel_passes"] * N)
        runs.append({"storage": storage, "N": N, **row, **extra})
        log(f"N = {N:6d} {storage:8s}: {row['epoch_time']:8.3f} s / epoch, set-up {row['setup_time']:.3f} s, "
            f"{row['kernel_passes'] / EPOCHS:.3g} passes / epoch, objective {row['objective']:.6f}"
            + (f", max coef difference {extra['coef_difference']:.1e}" if "coef_difference" in extra else ""))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N up to 2000 (under 30 s)")
    parser.add_argument("--seed", type=int, default=0, help="subsample seed")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args()
    cfg = CONFIG["quick" if args.quick else "full"]
    machine = common.machine_info()
    runs = [row for N in cfg["Ns"] for row in measure(N, cfg, args.seed)]
    slopes = {}
    for storage in STORAGES:
        measured = [r for r in runs if r["storage"] == storage]
        slopes[storage] = slope([r["N"] for r in measured], [r["epoch_time"] for r in measured])
    machine["loadavg_end"] = list(os.getloadavg())
    payload = {"machine": machine,
               "config": {**cfg, "rank": RANK, "widths": WIDTHS, "epochs": EPOCHS, "p": P, "lam": LAM,
                          "online_epochs": 0, "seed": args.seed, "M": 12, "classes": 10},
               "runs": runs, "slopes": slopes}
    print(f"\n### OBSCURE per epoch on Pendigits (M = 12, r = {RANK}, 10 classes): factors, rows, stack\n")
    print(epoch_table(payload))
    out = args.out or common.RESULTS_DIR / f"obscure_factors{'_quick' if args.quick else ''}.json"
    common.save_results(out, payload, lambda path: plot(payload, path))


if __name__ == "__main__":
    main()
