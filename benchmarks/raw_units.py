"""The estimators at their defaults on features and targets in their own units, against RidgeCV.

``python benchmarks/raw_units.py [--splits K] [--seed S] [--out PATH]``

scikit-learn's diabetes set as a user loads it: the features as shipped (``scaled=True``: centred,
each of norm 1, values near 0.05) and as measured (``scaled=False``: age in years, BMI, blood
pressure, ...), the target in its units (a disease progression score, 25 to 346).  Per split ``k``
(a random 70/30 split seeded ``seed + k``; by default the accuracy protocol's REPORT_SEED, on
which nothing was chosen), the test R^2 of ``MKLRegressor()`` and of ``RidgeCV()`` (its default
alphas) on each form, mean +- std over the splits, and the paired t-test of their difference.
Issue 41's target: ``MKLRegressor()`` within 0.05 of ``RidgeCV``'s R^2 on the raw features.
Writes ``benchmarks/results/raw_units.json``.
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

FORMS = ("scaled", "raw")
METHODS = ("MKLRegressor()", "RidgeCV()")


def one_split(k: int, seed: int) -> dict[str, Any]:
    """Both methods on both forms of the features, split ``k``."""
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import train_test_split

    from kernelfuse import MKLRegressor

    out: dict[str, Any] = {"split": k}
    for form in FORMS:
        X, y = load_diabetes(return_X_y=True, scaled=form == "scaled")
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=seed + k)
        for name, model in (("MKLRegressor()", MKLRegressor()), ("RidgeCV()", RidgeCV())):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X_train, y_train)
            out[f"{name} {form}"] = {"r2": float(model.score(X_test, y_test)),
                                     "seconds": time.perf_counter() - start}
    return out


def table(payload: dict[str, Any]) -> str:
    from scipy import stats

    splits = payload["splits"]
    rows = []
    for form in FORMS:
        ridge = np.array([s[f"RidgeCV() {form}"]["r2"] for s in splits])
        for name in METHODS:
            r2 = np.array([s[f"{name} {form}"]["r2"] for s in splits])
            diff = r2 - ridge
            p = float(stats.ttest_rel(r2, ridge).pvalue) if np.any(diff) else 1.0
            versus = "-" if name == "RidgeCV()" else f"{diff.mean():+.4f} (p = {p:.2g})"
            seconds = np.mean([s[f"{name} {form}"]["seconds"] for s in splits])
            rows.append([form, name, f"{r2.mean():.4f} ± {r2.std(ddof=1):.4f}", versus, common.fmt(seconds)])
    return common.markdown_table(["features", "method", "test R²", "minus RidgeCV's (paired t)", "s per fit"], rows)


TABLES = {"accuracy": table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--seed", type=int, default=common.REPORT_SEED)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "raw_units.json")
    args = parser.parse_args(argv)
    splits = [one_split(k, args.seed) for k in range(args.splits)]
    payload = {"benchmark": "raw_units", "set": "diabetes (scikit-learn)", "n_splits": args.splits,
               "seed": args.seed, "splits": splits, "machine": common.machine_info()}
    common.write_json(args.out, payload)
    print(table(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
