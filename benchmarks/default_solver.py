"""How the estimators' and the demo's default solver was chosen: the main job's grid, measured.

Breast cancer (the demo's stratified 80/20 split, N = 455 training points),
the papers' per-feature kernel grid (M = 837, unit trace).  For SpicyMKL on
``l1_mkl`` with the logistic and hinge losses at several C, and for the
earlier default (mirror-vskl on ``l1_mkl_sq``, C = 100): time to a relative
gap of 1e-3, passes over the stack, test accuracy and kernels selected,
with the time ratio to the average-kernel SVM and to mirror-vskl measured in
the same run.  One run each.

    python benchmarks/default_solver.py [--out PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

import common

CS = (0.03, 0.1, 0.3, 1.0)
LOSSES = ("logistic", "hinge")


def main_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from kernelfuse.frontends.demo import breast_cancer_split
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.functions import compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer

    X_train, X_test, y_train, y_test, names = breast_cancer_split()
    specs = kernel_grid(X_train.shape[1], feature_names=names)
    normalizer = KernelNormalizer("unit-trace").fit(specs, X_train)
    K = normalizer.transform(compute_kernels(specs, X_train))
    K_test = normalizer.transform(compute_kernels(specs, X_train, X_test), specs, X_test)
    return K, y_train, K_test, y_test


def measure(K: np.ndarray, y: np.ndarray, K_test: np.ndarray, y_test: np.ndarray, solver: str,
            **params: Any) -> dict[str, Any]:
    run = common.run_solver(K, y, solver, check_psd=False, **params)
    result = run.pop("_result", None)
    if result is not None:
        run["accuracy"] = float(np.mean(np.sign(result.decision_function(K_test)) == y_test))
        run["selected"] = int(np.sum(result.kernel_weights > 1e-3))
    return {**run, "params": params}


def choice_table(payload: dict[str, Any]) -> str:
    """Every candidate's time to gap 1e-3, passes, speed-ups, accuracy and kernels."""
    average, vskl = payload["average"], payload["mirror_vskl"]
    rows = [[f"{r['solver']} {r['params'].get('loss', 'hinge')}", r["params"]["C"], r["status"],
             common.fmt(r["time"]), common.fmt(r["kernel_passes"]),
             common.fmt(common.ratio(r["time"], average["time"])),
             common.fmt(common.ratio(vskl["time"], r["time"])),
             common.fmt(r.get("accuracy")), r.get("selected")]
            for r in [vskl, *payload["spicymkl"]]]
    return common.markdown_table(
        ["solver", "C", "status", "time to gap 1e-3 (s)", "passes", "x average SVM time",
         "speed-up over mirror-vskl", "test accuracy", "kernels > 1e-3"], rows)


TABLES = {"choice": choice_table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "default_solver.json")
    args = parser.parse_args()
    K, y, K_test, y_test = main_grid()
    print(f"breast cancer: N = {K.shape[1]}, M = {K.shape[0]} ({K.nbytes / 1e9:.2f} GB)")
    average = measure(K, y, K_test, y_test, "average", family="l1_mkl_sq", C=100.0)
    vskl = measure(K, y, K_test, y_test, "mirror-vskl", family="l1_mkl_sq", C=100.0, tol=1e-3)
    runs = [measure(K, y, K_test, y_test, "spicymkl", family="l1_mkl", loss=loss, C=C, tol=1e-3)
            for loss in LOSSES for C in CS]
    payload = {"machine": common.machine_info(), "average": average, "mirror_vskl": vskl,
               "spicymkl": runs}
    print(f"\naverage-kernel SVM: {common.fmt(average['time'])} s, test accuracy "
          f"{common.fmt(average.get('accuracy'))}\n")
    print(choice_table(payload))
    common.save_results(args.out, payload, lambda path: None)


if __name__ == "__main__":
    main()
