"""EasyMKL (Aiolli and Donini 2015): kernel weights from the margin of the regularised sum of kernels.

Aiolli and Donini, "EasyMKL: a scalable multiple kernel learning algorithm", Neurocomputing
169, 2015, section 3: with ``K_lam = (1 - lam) sum_m K_m + lam I`` (``0 <= lam <= 1``), the
distribution ``g`` over each class solving

    min_g  (g * y)' K_lam (g * y),   g >= 0,   sum_{y_i = 1} g_i = 1,   sum_{y_i = -1} g_i = 1

(the squared distance between the class hulls, unique for ``lam > 0``) gives the weights

    d_m = (g * y)' K_m (g * y) / sum_k (g * y)' K_k (g * y).

For ``lam > 0`` the QP is solved as the hard-margin SVM on ``K_lam`` (the registered SVM solver
part; Bennett and Bredensteiner, ICML 2000): its dual ``alpha`` scaled to sum 1 on each class
is ``g``, and since ``K_lam >= lam I`` the hull distance ``D`` has ``D^2 >= lam (1/n_+ + 1/n_-)``,
so ``alpha_i <= sum_i alpha_i = 4 / D^2 <= 4 / (lam (1/n_+ + 1/n_-))``: an SVM with twice that
``C`` never meets its bound and is the hard-margin SVM exactly.  For ``lam = 0`` (or an SVM that
stopped short) the QP goes to the active-set simplex QP (:func:`kernelfuse.numerics.geometry.hull_distance`).
MKLpy 0.6's ``EasyMKL(lam)`` computes the same weights (its QP by libsvm or cvxopt) on the
plain sum of the kernels as given, as here; ``lam`` is relative to the kernels' scale (unit
trace or unit diagonal kernels, as in the paper's experiments).  The paper's classifier is
KOMD; here, as for every two-stage solver, it is the SVM on ``K(d)``.  Deterministic.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL, simplex_weights
from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.kernels.products import weighted_sum
from kernelfuse.numerics.geometry import hull_distance
from kernelfuse.parts.svm_solver import SVMSolver
from kernelfuse.plugins.two_stage.pwmk import unit_interval
from kernelfuse.problem.instance import Problem


def hull_point(K_lam: np.ndarray, y: np.ndarray, lam: float, svm_solver: SVMSolver) -> tuple[np.ndarray, int]:
    """``g`` of the class-hull distance on ``K_lam``, and the SVM calls it took."""
    if lam > 0:
        bound = 4.0 / (lam * (1.0 / np.sum(y > 0) + 1.0 / np.sum(y < 0)))   # of every alpha_i
        solution = svm_solver.solve(K_lam, y, 2.0 * bound)
        alpha = solution.alpha
        if solution.converged and alpha.max() < 2.0 * bound and alpha[y > 0].sum() > 0:
            return np.where(y > 0, alpha / alpha[y > 0].sum(), alpha / alpha[y < 0].sum()), 1
    return hull_distance(K_lam, y).g, 0


def easymkl_weights(K: np.ndarray, y: np.ndarray, lam: float, svm_solver: SVMSolver) -> tuple[np.ndarray, int]:
    """``d_m`` proportional to ``v' K_m v`` at the hull distance's ``v = g * y`` on ``K_lam``, and
    the SVM calls taken."""
    K_lam = weighted_sum(K, np.full(K.shape[0], 1.0 - lam))
    K_lam[np.diag_indices_from(K_lam)] += lam
    g, calls = hull_point(K_lam, y, lam, svm_solver)
    return simplex_weights(np.maximum(quadratic_forms(K, g * y), 0.0)), calls


@attrs.define
class EasyMKL(TwoStageMKL):
    """Weights from the class-hull distance on the regularised kernel sum (Aiolli and Donini 2015), then one SVM."""

    name: ClassVar[str] = "easymkl"
    #: The identity's share in ``K_lam = (1 - lam) sum_m K_m + lam I``.
    lam: float = unit_interval.field(0.1)

    def weights(self, problem: Problem) -> KernelWeights:
        d, calls = easymkl_weights(problem.K, problem.y, self.lam, self.svm_solver)
        return KernelWeights(d, {"kernel_passes": 2.0, "svm_calls": float(calls)})
