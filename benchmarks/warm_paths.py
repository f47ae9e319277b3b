"""SpicyMKL's warm-started paths: the first penalty of a warm solve, the cold schedule's or one
``growth`` step up.

A regularisation path as ``MKLClassifierCV`` solves it: 10 values of ``C`` from ``C_max`` down to
``1e-3 C_max``, each solve warm-started at the one before.  The estimators' default kernels
(:func:`kernelfuse.frontends.kernel_grid.view_grid` on the standardised training features of
the benchmarks' seeded 70/30 split, seed 1, each kernel of unit trace) for breast cancer, sonar
and ionosphere; for each loss, ``C2`` and ``tol``, the path twice: the warm solves' first
penalty ``gamma0 growth / tr(K)`` and ``gamma0 / tr(K)`` (the cold schedule), set through
``optimizer.gamma0`` around the optimiser's rule (one step up for a loss without a slack
centre, the cold schedule for the slack-form losses).  Counts, not times: Newton steps, outer
iterations, kernel passes and the points certified.

    python benchmarks/warm_paths.py [--out PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

import common

SETS = ("breast-cancer", "sonar", "ionosphere")
LOSSES = ("logistic", "squared", "squared-hinge", "hinge")
C2S = (0.001, 0.3)
TOLS = (1e-3, 1e-6)
GAMMA0 = 1000.0
GROWTH = 10.0


def default_stack(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The estimators' default kernels of the set's training rows, each of unit trace."""
    from kernelfuse.frontends.kernel_grid import view_grid
    from kernelfuse.kernels.functions import compute_kernels

    split = common.uci_split(name, seed=1)
    X = split["X_train"]
    K = compute_kernels([spec.fitted(X) for spec in view_grid()], X)
    K /= np.einsum("mii->m", K)[:, None, None]
    return K, split["y_train"].astype(float)


def path(K: np.ndarray, y: np.ndarray, loss: str, C2: float, tol: float, warm_gamma0: float) -> dict[str, Any]:
    """The path's totals, its warm solves run with ``optimizer.gamma0 = warm_gamma0``."""
    import kernelfuse
    from kernelfuse.problem.duality import l1_mkl_c_max
    from kernelfuse.problem.instance import Problem

    c_max = l1_mkl_c_max(Problem.create(K, y, "l1_mkl", loss=loss, check_psd=False))
    totals = {"newton_steps": 0, "outer_iterations": 0, "kernel_passes": 0.0, "certified": 0}
    previous = None
    for C in c_max * np.logspace(0.0, -3.0, 10):
        start = {} if previous is None else {"warm_start": previous, "optimizer.gamma0": warm_gamma0}
        previous = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C, C2=C2, tol=tol,
                                    check_psd=False, **start)
        totals["newton_steps"] += int(previous.counters["newton_steps"])
        totals["kernel_passes"] += float(previous.counters["kernel_passes"])
        totals["outer_iterations"] += previous.n_iter
        totals["certified"] += previous.status == "converged"
    return totals


def measure() -> list[dict[str, Any]]:
    from kernelfuse.parts.registry import get_registry
    from kernelfuse.plugins.spicymkl.dual_loss_terms import uses_slack

    rows = []
    for name in SETS:
        K, y = default_stack(name)
        for loss in LOSSES:
            # the gamma0 giving each schedule: the rule already steps up where there is no slack
            up, cold = (GAMMA0 * GROWTH, GAMMA0) if uses_slack(get_registry().create("loss", loss)) \
                else (GAMMA0, GAMMA0 / GROWTH)
            for C2 in C2S:
                for tol in TOLS:
                    row = {"set": name, "loss": loss, "C2": C2, "tol": tol,
                           "one_step_up": path(K, y, loss, C2, tol, up),
                           "cold_schedule": path(K, y, loss, C2, tol, cold)}
                    rows.append(row)
                    print(row, flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Newton steps (and outer iterations) of each path, the rule's against the cold schedule's."""
    out = []
    for r in rows:
        up, cold = r["one_step_up"], r["cold_schedule"]
        out.append([r["set"], r["loss"], r["C2"], r["tol"],
                    f"{up['newton_steps']} ({up['outer_iterations']})",
                    f"{cold['newton_steps']} ({cold['outer_iterations']})",
                    f"{up['certified']}/10, {cold['certified']}/10"])
    return common.markdown_table(["set", "loss", "C2", "tol", "one step up: Newton (outer)",
                                  "cold schedule: Newton (outer)", "certified"], out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR / "warm_paths.json")
    args = parser.parse_args()
    rows = measure()
    print()
    print(table(rows))
    common.save_results(args.out, {"machine": common.machine_info(), "rows": rows}, lambda path: None)


if __name__ == "__main__":
    main()
