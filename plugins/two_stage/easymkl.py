"""EasyMKL (Aiolli and Donini 2015): kernel weights from the margin of the regularised sum of kernels.

Aiolli and Donini, "EasyMKL: a scalable multiple kernel learning algorithm", Neurocomputing
169, 2015, section 3: with ``K_lam = (1 - lam) sum_m K_m + lam I`` (``0 <= lam <= 1``), the
distribution ``g`` over each class solving

    min_g  (g * y)' K_lam (g * y),   g >= 0,   sum_{y_i = 1} g_i = 1,   sum_{y_i = -1} g_i = 1

(the squared distance between the class hulls, :func:`kernelfuse.kernels.geometry.hull_distance`,
a QP solved by Clarabel, unique for ``lam > 0``) gives the weights

    d_m = (g * y)' K_m (g * y) / sum_k (g * y)' K_k (g * y).

MKLpy 0.6's ``EasyMKL(lam)`` computes the same weights (its QP by libsvm or cvxopt) on the
plain sum of the kernels as given, as here; ``lam`` is relative to the kernels' scale (unit
trace or unit diagonal kernels, as in the paper's experiments).  The paper's classifier is
KOMD; here, as for every two-stage solver, it is the SVM on ``K(d)``.  Deterministic.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.kernels.geometry import hull_distance
from kernelfuse.kernels.products import weighted_sum
from kernelfuse.plugins.two_stage.pwmk import unit_interval
from kernelfuse.plugins.two_stage.weights_then_svm import TwoStageMKL, simplex_weights
from kernelfuse.problem.instance import Problem


def easymkl_weights(K: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """``d_m`` proportional to ``v' K_m v`` at the hull distance's ``v = g * y`` on ``K_lam``."""
    K_lam = weighted_sum(K, np.full(K.shape[0], 1.0 - lam))
    K_lam[np.diag_indices_from(K_lam)] += lam
    g = hull_distance(K_lam, y).g
    return simplex_weights(np.maximum(quadratic_forms(K, g * y), 0.0))


@attrs.define
class EasyMKL(TwoStageMKL):
    """Weights from the class-hull distance on the regularised kernel sum (Aiolli and Donini 2015), then one SVM."""

    name: ClassVar[str] = "easymkl"
    #: The identity's share in ``K_lam = (1 - lam) sum_m K_m + lam I``.
    lam: float = unit_interval.field(0.1)

    def weights(self, problem: Problem) -> tuple[np.ndarray, dict[str, float]]:
        return easymkl_weights(problem.K, problem.y, self.lam), {"kernel_passes": 2.0}
