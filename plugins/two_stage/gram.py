"""GRAM (Lauriola, Polato and Aiolli 2017): kernel weights minimising the radius-margin ratio.

Lauriola, Polato and Aiolli, "Radius-margin ratio optimization for dot-product boolean kernel
learning", ICANN 2017 (LNCS 10614), section 3: the weights ``d`` on the simplex minimising

    Q(d) = R^2(d) / D^2(d),

``R`` the radius of the minimum enclosing ball of the examples in the feature space of
``K(d) = sum_m d_m K_m`` and ``D`` the distance between the class hulls there (``D / 2`` the
hard margin; MKLpy reports ``Q / n``), the two QPs of :mod:`kernelfuse.numerics.geometry`.  Both
are linear in ``d`` at their solutions ``g`` (ball) and ``h`` (hulls), so by Danskin's theorem

    dQ/dd_m = (r_m D^2 - s_m R^2) / D^4,   r_m = sum_i g_i K_m,ii - g'K_m g,   s_m = (h*y)'K_m (h*y),

and each step is an exponentiated-gradient step, ``log d_m <- log d_m - eta d_m dQ/dd_m``, then
``d`` scaled to the simplex, from uniform weights: ``max_iter`` steps (1000) of ``learning_rate``
``eta`` (0.01), MKLpy 0.6's ``GRAM`` defaults (it has no other stopping rule; its radius
derivative assumes unit-diagonal kernels, ``r_m = 1 - g'K_m g``, equal to this one there).
Deterministic.  The steps stop early where the hulls meet (``D = 0``: no separating margin) and
at the solve's ``time_limit`` (status ``time_limit``).  Each step solves both QPs on ``K(d)``
itself, warm-started at the last step's solutions (an ``|S|``-sized factor per active-set step);
all ``max_iter`` steps are taken, which is what a GRAM fit costs (docs/methods/two-stage.md).
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL
from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.kernels.products import weighted_sum
from kernelfuse.numerics.geometry import enclosing_ball, hull_distance
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import deadline, expired
from kernelfuse.validation import count, positive, seconds

logger = logging.getLogger(__name__)


def ratio_gradient(K: np.ndarray, y: np.ndarray, d: np.ndarray, g: np.ndarray | None = None,
                   h: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """``Q(d)``, its gradient, and the solutions ``g`` (ball) and ``h`` (hulls), from the previous
    step's where given; ``Q = inf`` and a zero gradient where the class hulls meet."""
    K_d = weighted_sum(K, d)
    g = enclosing_ball(K_d, g).g
    h = hull_distance(K_d, y, h).g
    r = np.einsum("mii,i->m", K, g) - quadratic_forms(K, g)
    s = quadratic_forms(K, h * y)
    R2, D2 = float(d @ r), float(d @ s)
    if not D2 > 1e-14 * max(R2, 1e-300):
        return math.inf, np.zeros_like(d), g, h
    return R2 / D2, (r * D2 - s * R2) / D2**2, g, h


@attrs.define
class GRAM(TwoStageMKL):
    """Weights minimising the radius-margin ratio by exponentiated gradient (Lauriola et al. 2017), then one SVM."""

    name: ClassVar[str] = "gram"
    #: The step size ``eta`` of the exponentiated-gradient steps on ``log d``.
    learning_rate: float = positive.field(0.01)
    #: The number of steps (MKLpy takes all of them).
    max_iter: int = count.field(1000)
    time_limit: float = seconds.field(math.inf)

    def weights(self, problem: Problem) -> KernelWeights:
        K, y = problem.K, problem.y
        logger.info("gram takes all of its %d steps, each two QPs on K(d) (it has no stopping rule): "
                    "many times the time of a solver that stops at its certified gap (docs/methods/two-stage.md)",
                    self.max_iter)
        d = np.full(K.shape[0], 1.0 / K.shape[0])
        ratios: list[float] = []
        steps, cut = 0, False
        g = h = None
        with deadline(self.time_limit):
            while steps < self.max_iter:
                if expired():
                    cut = True
                    break
                ratio, gradient, g, h = ratio_gradient(K, y, d, g, h)
                ratios.append(ratio)
                if not math.isfinite(ratio):
                    break
                with np.errstate(divide="ignore"):
                    log_d = np.log(d) - self.learning_rate * d * gradient
                d = np.exp(log_d - log_d.max())
                d /= d.sum()
                steps += 1
        note = "no step" if not ratios else (
            f"the class hulls meet (D = 0) after {steps} steps" if not math.isfinite(ratios[-1])
            else f"radius-margin ratio R^2/D^2 {ratios[0]:.6g} at uniform weights, {ratios[-1]:.6g} "
                 f"before the last of {steps} steps")
        return KernelWeights(d, {"qp_solves": 2.0 * len(ratios), "kernel_passes": 3.0 * len(ratios)},
                       n_iter=steps, cut=cut, note=note)
