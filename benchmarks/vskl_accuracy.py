"""VSKL_q accuracy on Pendigits' four feature descriptors (paper section 4.1 / Table 1, small scale).

Run: ``.venv/bin/python benchmarks/vskl_accuracy.py [--quick] [--[no-]validate]``

Data: the four aligned Pendigits views (``dyn`` 16, ``sta4`` 16, ``sta8`` 64,
``sta16`` 256 features) from ``../shared/data/pendigits``.  A seeded stratified
subset of the official training file (``--n-train``; 1000 full, 400 quick)
and of the official test file (``--n-test``; 1500 full, 800 quick); each view
standardised with statistics of the training subset.

Kernels: 5 Gaussian widths per descriptor, ``sigma = w * sqrt(#features of
the view)``, ``w`` in (0.25, 0.5, 1, 2, 4), each of unit trace on the training
subset (same factor on the test kernel): M = 20 kernels, groups = descriptor
(4 groups of 5).

Task: the 10 digits one-vs-rest (10 binary problems, labels +1 = the digit).
Reported per method: multi-class accuracy (argmax over the 10 one-vs-rest
decision values), mean binary accuracy over the 10 problems, total time,
total SVM calls, mean number of selected kernels (``kernel_weights > 1e-6``)
and of selected descriptors, and how many of the 10 solves did not converge.

Methods: VSKL_q for q in {1, 2, 3, inf} (``mirror-vskl``, family ``vskl``,
groups = descriptor), l1-MKL (``mirror-vskl``, family ``l1_mkl_sq``, one
group), the average-kernel SVM (``average``).  All MKL solvers stop on the
relative objective change 1e-4 (as in section 4.2).  C = 1000 for every
method by default: with unit-trace kernels that is C/N ~ 1 in the units of
the raw Gaussian kernel at N = 1000.  With ``--validate`` (off by default:
about 5x the work, over 20 minutes in full mode) C is picked per
method from {10, 100, 1000, 10000} by the multi-class accuracy on a held-out
30% of the training subset (ties: the C closest to 1000), then the method is
refitted on the whole training subset with it.  Full mode takes about 2-3
minutes on 2 cores, ``--quick`` well under a minute.

Raw measurements: ``benchmarks/results/vskl_accuracy[_quick].json`` (+ PNG).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import markdown_table  # noqa: E402

WIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0)
C_DEFAULT = 1000.0
C_GRID = (10.0, 100.0, 1000.0, 10000.0)
TOL = 1e-4
METHODS: dict[str, dict[str, Any]] = {
    "VSKL q=1": {"solver": "mirror-vskl", "family": "vskl", "q": 1.0},
    "VSKL q=2": {"solver": "mirror-vskl", "family": "vskl", "q": 2.0},
    "VSKL q=3": {"solver": "mirror-vskl", "family": "vskl", "q": 3.0},
    "VSKL q=inf": {"solver": "mirror-vskl", "family": "vskl", "q": math.inf},
    "l1-MKL": {"solver": "mirror-vskl", "family": "l1_mkl_sq"},
    "average": {"solver": "average", "family": "l1_mkl_sq"},
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def stratified_subset(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    from sklearn.model_selection import train_test_split

    if n >= y.shape[0]:
        return np.arange(y.shape[0])
    keep, _ = train_test_split(np.arange(y.shape[0]), train_size=n, stratify=y,
                               random_state=seed)
    return np.sort(keep)


def build_kernels(views_tr: dict[str, np.ndarray], views_te: dict[str, np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    Ks, Kts, groups, names = [], [], [], []
    for g, view in enumerate(common.PENDIGITS_VIEWS):
        Xtr, Xte = common.standardise(views_tr[view], views_te[view])
        K, Kt = common.gaussian_kernels(Xtr, Xte, [(None, w) for w in WIDTHS])
        Ks.append(K)
        Kts.append(Kt)
        groups += [g] * len(WIDTHS)
        names += [f"{view} w={w:g}" for w in WIDTHS]
    return np.concatenate(Ks), np.concatenate(Kts), np.array(groups), names


def fit(method: str, K: np.ndarray, y: np.ndarray, groups: np.ndarray, C: float
        ) -> dict[str, Any]:
    spec = METHODS[method]
    kwargs: dict[str, Any] = {"family": spec["family"], "C": C, "check_psd": False}
    if spec["family"] == "vskl":
        kwargs.update(groups=groups, q=spec["q"])
    if spec["solver"] != "average":
        kwargs.update(stop="objective_change", tol=TOL)
    return common.run_solver(K, y, spec["solver"], **kwargs)


def one_vs_rest(method: str, K: np.ndarray, labels: np.ndarray, K_eval: np.ndarray,
                groups: np.ndarray, C: float) -> dict[str, Any]:
    """10 binary problems; decision values on K_eval (M, T, N)."""
    F = np.empty((K_eval.shape[1], 10))
    runs = []
    for digit in range(10):
        y = np.where(labels == digit, 1.0, -1.0)
        run = fit(method, K, y, groups, C)
        if run.get("status") == "error":
            log(f"  {method} digit {digit}: {run['error']}")
            F[:, digit] = -np.inf
        else:
            r = run["_result"]
            F[:, digit] = common.decision(K_eval, np.asarray(r.coef), float(r.intercept))
        run.pop("_result", None)
        run["digit"] = digit
        runs.append(run)
    return {"F": F, "runs": runs}


def summarise(method: str, ovr: dict[str, Any], y_eval: np.ndarray, groups: np.ndarray,
              C: float) -> dict[str, Any]:
    F, runs = ovr["F"], ovr["runs"]
    ok = [r for r in runs if r.get("status") != "error"]
    binary = [float(np.mean(np.where(F[:, d] >= 0, 1, -1) == np.where(y_eval == d, 1, -1)))
              for d in range(10)]
    n_groups = int(groups.max()) + 1
    sel_groups = []
    for r in ok:
        w = np.asarray(r["kernel_weights"])
        sel_groups.append(len({int(groups[m]) for m in np.flatnonzero(w > 1e-6)}))
    return {
        "method": method, "C": C,
        "multiclass_accuracy": float(np.mean(np.argmax(F, axis=1) == y_eval)),
        "mean_binary_accuracy": float(np.mean(binary)), "binary_accuracy": binary,
        "time": float(sum(r.get("time", math.nan) for r in runs)),
        "svm_calls": float(sum(r.get("svm_calls", math.nan) for r in runs)),
        "kernel_passes": float(sum(r.get("kernel_passes", math.nan) for r in runs)),
        "mean_selected_kernels": float(np.mean([r["n_selected"] for r in ok])) if ok else math.nan,
        "mean_selected_groups": float(np.mean(sel_groups)) if ok else math.nan,
        "n_groups": n_groups,
        "statuses": [r.get("status") for r in runs],
        "not_converged": sum(r.get("status") != "converged" for r in runs),
        "active_set_fallbacks": sum(r.get("active_set_fallbacks", 0) for r in ok),
        "max_gap": max((r.get("gap", math.nan) for r in ok), default=math.nan),
        "runs": runs,
    }


def group_weights(summary: dict[str, Any], groups: np.ndarray) -> list[float]:
    """Mean over the 10 problems of each descriptor's total kernel weight."""
    n = int(groups.max()) + 1
    totals = np.zeros(n)
    ok = [r for r in summary["runs"] if r.get("kernel_weights") is not None]
    for r in ok:
        totals += np.bincount(groups, weights=np.asarray(r["kernel_weights"]), minlength=n)
    return (totals / max(len(ok), 1)).tolist()


def validate_C(method: str, K: np.ndarray, labels: np.ndarray, groups: np.ndarray, seed: int
               ) -> tuple[float, dict[str, float]]:
    from sklearn.model_selection import train_test_split

    idx = np.arange(labels.shape[0])
    fit_idx, val_idx = train_test_split(idx, test_size=0.3, stratify=labels, random_state=seed)
    fit_idx, val_idx = np.sort(fit_idx), np.sort(val_idx)
    K_fit = K[:, fit_idx][:, :, fit_idx]
    K_val = K[:, val_idx][:, :, fit_idx]
    scores = {}
    for C in C_GRID:
        ovr = one_vs_rest(method, K_fit, labels[fit_idx], K_val, groups, C)
        scores[C] = float(np.mean(np.argmax(ovr["F"], axis=1) == labels[val_idx]))
        log(f"  validate {method} C={C:g}: {scores[C]:.4f}")
    best = max(C_GRID, key=lambda c: (scores[c], -abs(math.log10(c / C_DEFAULT))))
    return best, scores


def plot(summaries: list[dict[str, Any]], path: Path) -> Path | None:
    if not common.have_matplotlib():
        return None
    import matplotlib.pyplot as plt

    names = [s["method"] for s in summaries]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    axes[0].bar(names, [s["multiclass_accuracy"] for s in summaries], color="C0")
    lo = min(s["multiclass_accuracy"] for s in summaries)
    axes[0].set_ylim(max(0.0, lo - 0.05), 1.0)
    axes[0].set_title("multi-class test accuracy (one-vs-rest)")
    axes[1].bar(names, [s["time"] for s in summaries], color="C1")
    axes[1].set_title("time for the 10 problems (s)")
    axes[2].bar(names, [s["mean_selected_kernels"] for s in summaries], color="C2")
    axes[2].set_title("mean selected kernels (of 20)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=45)
    return common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller subsets (about 2 minutes)")
    parser.add_argument("--validate", action=argparse.BooleanOptionalAction, default=None,
                        help=f"choose C per method from {C_GRID} on a validation split "
                             "(off by default: about 5x the work)")
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--n-test", type=int, default=None)
    parser.add_argument("--C", type=float, default=C_DEFAULT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    n_train = args.n_train or (400 if args.quick else 1000)
    n_test = args.n_test or (800 if args.quick else 1500)
    mode = "quick" if args.quick else "full"
    if args.validate is None:
        args.validate = False
    out = args.out or common.RESULTS_DIR / f"vskl_accuracy{'_quick' if args.quick else ''}.json"
    common.data_dir()
    machine_start = common.machine_info()
    t_start = time.perf_counter()

    views_tr, y_tr_all = common.load_pendigits("train")
    views_te, y_te_all = common.load_pendigits("test")
    tr = stratified_subset(y_tr_all, n_train, args.seed)
    te = stratified_subset(y_te_all, n_test, args.seed)
    K, Kt, groups, names = build_kernels({v: x[tr] for v, x in views_tr.items()},
                                         {v: x[te] for v, x in views_te.items()})
    y_tr, y_te = y_tr_all[tr], y_te_all[te]
    log(f"pendigits: N_train={tr.size}, N_test={te.size}, M={K.shape[0]} kernels, "
        f"{int(groups.max()) + 1} groups")

    summaries, validation = [], {}
    for method in METHODS:
        C = args.C
        if args.validate:
            C, scores = validate_C(method, K, y_tr, groups, args.seed)
            validation[method] = {"chosen_C": C, "scores": scores}
        ovr = one_vs_rest(method, K, y_tr, Kt, groups, C)
        s = summarise(method, ovr, y_te, groups, C)
        s["mean_group_weights"] = group_weights(s, groups)
        summaries.append(s)
        log(f"{method}: acc={s['multiclass_accuracy']:.4f} time={s['time']:.1f}s "
            f"svm={s['svm_calls']:.0f} selected={s['mean_selected_kernels']:.1f} "
            f"not converged={s['not_converged']} fallbacks={s['active_set_fallbacks']}")
    total = time.perf_counter() - t_start

    print(f"## vskl_accuracy ({mode}): Pendigits, 4 descriptors x {len(WIDTHS)} Gaussian widths "
          f"(M = {K.shape[0]}), N_train = {tr.size}, N_test = {te.size}, 10 digits one-vs-rest, "
          f"stop = objective_change {TOL:g}, seed {args.seed}\n")
    head = ["method", "C", "multi-class acc", "mean binary acc", "time (s, 10 problems)",
            "SVM calls", "kernel passes", "selected kernels (mean, of 20)",
            "selected descriptors (mean, of 4)", "not converged", "largest gap"]
    rows = [[s["method"], s["C"], s["multiclass_accuracy"], s["mean_binary_accuracy"], s["time"],
             s["svm_calls"], s["kernel_passes"], s["mean_selected_kernels"],
             s["mean_selected_groups"], s["not_converged"], s["max_gap"]] for s in summaries]
    print(markdown_table(head, rows))
    print("\nmean total kernel weight per descriptor (averaged over the 10 problems)\n")
    print(markdown_table(["method", *common.PENDIGITS_VIEWS],
                         [[s["method"], *s["mean_group_weights"]] for s in summaries]))
    print("\nper-digit binary test accuracy\n")
    print(markdown_table(["method", *map(str, range(10))],
                         [[s["method"], *s["binary_accuracy"]] for s in summaries]))
    if validation:
        print("\nvalidation (multi-class accuracy on 30% of the training subset)\n")
        print(markdown_table(["method", *[f"C={c:g}" for c in C_GRID], "chosen"],
                             [[m, *[v["scores"][c] for c in C_GRID], v["chosen_C"]]
                              for m, v in validation.items()]))
    print(f"\ntotal wall time: {total:.1f} s")

    payload = {
        "benchmark": "vskl_accuracy", "mode": mode, "seed": args.seed,
        "settings": {"widths": WIDTHS, "views": common.PENDIGITS_VIEWS, "kernel_names": names,
                     "groups": groups, "N_train": int(tr.size), "N_test": int(te.size),
                     "task": "10 digits one-vs-rest; multi-class by argmax of decision values",
                     "stop": "objective_change", "tol": TOL, "C": args.C,
                     "validate": args.validate, "C_grid": C_GRID},
        "machine": machine_start, "machine_at_end": common.machine_info(),
        "total_seconds": total,
        "validation": validation, "methods": summaries,
    }
    common.save_results(out, payload, lambda path: plot(summaries, path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
