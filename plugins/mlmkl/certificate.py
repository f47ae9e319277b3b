"""A certified model and lower bound for ``mlmkl_max`` from the duals a run has solved (our addition to ML-MKL-SA).

Any feasible dual ``a`` of label k gives a plane below its ``SVM_k(p)`` everywhere,
``1'a - 0.5 p' A(a)``, ``A(a)_m = (a Y_k)' K_m (a Y_k)``, whatever weights it was solved at.  The
table keeps every plane a run solves; the lowest point of their max over the simplex is a
certified lower bound on ``min_p max_k SVM_k(p)`` (a linear programme,
:func:`~kernelfuse.problem.duality.max_family_cutting_plane`), and its minimiser ``p_K`` the
point Kelley's cutting-plane method (1960) evaluates next.  :func:`certify` solves there the
labels whose planes the bound rests on, then the labels whose upper bound at ``p_K`` (the model
``p_m beta_k`` of each label's last duals, read from the kept products ``K_m beta_k`` without a
pass) exceeds the best value found, for a few rounds: new planes that lift the bound where it
is lowest, and a model at ``p_K`` whose objective is an upper bound.  Measurements:
docs/methods/ml-mkl-sa.md.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.assembly.result import relative_gap
from kernelfuse.plugins.mlmkl.label_svms import LabelSolutions, LabelSVMs, expansion_model
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import max_family_cutting_plane
from kernelfuse.problem.instance import Problem

#: Rounds of labels solved at one cutting-plane point: the bound's labels, then the others'
#: checks (needed: without them no model certified); 10 rounds ran as 3 on the benchmark.
ROUNDS = 3
#: The other labels are checked at the cutting-plane point only where the gap of the labels
#: solved there is a thirtieth of the certified gap so far (a check solves most labels: measured
#: in docs/methods/ml-mkl-sa.md, against a tenth and a hundredth), and a label only where its
#: upper bound exceeds the best value there by a thirtieth of that gap: a completed check cuts
#: the gap at least fifteenfold.
GAIN = 30.0
#: Planes kept; past it the oldest planes without weight in the last programme are dropped (a
#: programme over 2,000 planes takes about 20 ms at M = 12).
MAX_PLANES = 2000


@attrs.define
class DualTable:
    """Every label's last duals (``1'a_k``, ``beta_k``, ``K_m beta_k``, forms) and every plane
    solved (``1'a``, forms, label).  Updated in place: any duals are valid planes and models, so
    an abandoned query leaves nothing wrong behind."""

    sums: np.ndarray      # (L,)
    betas: np.ndarray     # (N, L)
    products: np.ndarray  # (M, N, L)
    forms: np.ndarray     # (M, L)
    plane_sums: np.ndarray    # (P,)
    plane_forms: np.ndarray   # (M, P)
    plane_labels: np.ndarray  # (P,)
    gap: float = np.inf       # the best certified gap so far

    @classmethod
    def empty(cls, problem: Problem) -> DualTable:
        M, N, L = problem.n_kernels, problem.n_samples, problem.n_outputs
        return cls(np.zeros(L), np.zeros((N, L)), np.zeros((M, N, L)), np.zeros((M, L)),
                   np.zeros(0), np.zeros((M, 0)), np.zeros(0, dtype=int))

    def record(self, s: LabelSolutions) -> None:
        """The solutions' duals become their labels' last, and their planes are added."""
        sums = s.alpha.sum(axis=0)
        self.sums[s.labels], self.betas[:, s.labels] = sums, s.beta
        self.products[:, :, s.labels], self.forms[:, s.labels] = s.products, s.A
        self.plane_sums = np.r_[self.plane_sums, sums]
        self.plane_forms = np.c_[self.plane_forms, s.A]
        self.plane_labels = np.r_[self.plane_labels, s.labels]

    def prune(self, weights: np.ndarray) -> None:
        """Past :data:`MAX_PLANES`, keep the planes with ``weights`` (the last programme's) and the newest."""
        n = self.plane_sums.size
        if n <= MAX_PLANES:
            return
        keep = (weights > 0) | (np.arange(n) >= n - MAX_PLANES // 2)
        self.plane_sums, self.plane_forms = self.plane_sums[keep], self.plane_forms[:, keep]
        self.plane_labels = self.plane_labels[keep]

    def upper(self, problem: Problem, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The model of every label's last duals at ``p`` and each label's objective there
        (an upper bound on its ``SVM_k(p)``; ``C N``, the zero model's, for a label not yet solved)."""
        coef, f, sq = expansion_model(problem, p, self.betas, self.products, self.forms)
        return coef, objectives.label_objectives(problem, coef, f, sq, p)


@attrs.frozen(eq=False)
class Certificate:
    """A model (``coef`` at ``kernel_weights``), its ``objective``, the certified ``lower``
    bound, and the SVM calls and kernel passes it cost."""

    coef: np.ndarray
    objective: float
    kernel_weights: np.ndarray
    lower: float
    svm_calls: int
    kernel_passes: float


def certify(label_svms: LabelSVMs, problem: Problem, p: np.ndarray, table: DualTable,
            svms: Any) -> tuple[Certificate, Any]:
    """The better of the table's model at ``p`` and at the cutting-plane point, and the planes'
    bound, after solving the labels at the cutting-plane point (module docstring)."""
    coef, terms = table.upper(problem, p)
    best = (coef, float(terms.max()), p)
    cut = max_family_cutting_plane(table.plane_sums, table.plane_forms)
    table.gap = min(table.gap, relative_gap(best[1], cut.bound))
    calls, passes = 0, 0.0
    if cut.p is not None and cut.weights is not None:
        labels = np.unique(table.plane_labels[cut.weights > 0])
        table.prune(cut.weights)
        solved = np.zeros(0, int)
        for _ in range(ROUNDS):
            s, svms = label_svms.solve(cut.p, labels.tolist(), svms)
            table.record(s)
            calls, passes, solved = calls + labels.size, passes + s.passes, np.union1d(solved, labels)
            coef, terms = table.upper(problem, cut.p)
            top = terms[solved].max()
            if relative_gap(top, cut.bound) > table.gap / GAIN:
                break  # too early for the other labels: the check would not cut the gap fifteenfold
            above = terms > top + table.gap / GAIN * max(1.0, abs(top))
            labels = np.setdiff1d(np.flatnonzero(above), solved)
            if labels.size == 0:
                break
        if terms.max() < best[1]:
            best = (coef, float(terms.max()), cut.p)
    coef, objective, at = best
    table.gap = min(table.gap, relative_gap(objective, cut.bound))
    return Certificate(coef, objective, at.copy(), cut.bound, calls, passes), svms
