"""MEMO (Lauriola, Polato and Aiolli 2018): kernel weights by gradient steps on the squared margin.

Lauriola, Polato and Aiolli, "The minimum effort maximum output principle applied to Multiple
Kernel Learning", ESANN 2018, as MKLpy 0.6's ``MEMO`` computes it: from uniform weights, steps
of gradient ascent on

    F(d) = D^2(d) + (theta / 2) d'Q d,   Q_kl = <K_k, K_l>_F / (tr(Q) / M),

``D`` the distance between the class hulls in the feature space of ``K(d) = sum_m d_m K_m``
(:func:`kernelfuse.numerics.geometry.hull_distance`, each step warm-started from the last; ``D/2``
the hard margin).  At the hulls' solution ``h``, ``D^2`` is linear in ``d`` (Danskin), so
``dF/dd_m = (h*y)'K_m (h*y) + theta (Q d)_m`` and a step is

    d <- max(d + eta grad F, 0) / sum(max(d + eta grad F, 0)),

``max_iter`` (1000) steps of ``learning_rate`` ``eta`` (0.01), ``theta = 0`` by default: MKLpy's
defaults, which has no other stopping rule.  A step to weights whose ``D`` is at most
``min_margin`` (1e-4, MKLpy's guard against meeting hulls) is not taken, and the steps end
there; the solve's ``time_limit`` ends them too (status ``time_limit``).  Deterministic.
"""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL
from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.kernels.products import weighted_sum
from kernelfuse.numerics.geometry import hull_distance
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import deadline, expired
from kernelfuse.validation import count, nonnegative, positive, seconds


def frobenius_gram(K: np.ndarray) -> np.ndarray:
    """``Q_kl = <K_k, K_l>_F`` scaled to a mean diagonal of 1."""
    flat = K.reshape(K.shape[0], -1)
    Q = flat @ flat.T
    return Q / (np.trace(Q) / K.shape[0])


@attrs.define
class MEMO(TwoStageMKL):
    """Weights by gradient ascent on the squared class-hull distance (Lauriola et al. 2018), then one SVM."""

    name: ClassVar[str] = "memo"
    #: The weight of the complexity term ``(theta / 2) d'Q d``.
    theta: float = nonnegative.field(0.0)
    #: The hull distance below which a step is not taken (and the steps end).
    min_margin: float = positive.field(1e-4)
    #: The step size ``eta``.
    learning_rate: float = positive.field(0.01)
    #: The number of steps (MKLpy takes all of them).
    max_iter: int = count.field(1000)
    time_limit: float = seconds.field(math.inf)

    def weights(self, problem: Problem) -> KernelWeights:
        K, y = problem.K, problem.y
        Q = frobenius_gram(K) if self.theta > 0 else None
        d = np.full(K.shape[0], 1.0 / K.shape[0])
        previous, h = d, None
        steps, cut, solves, note = 0, False, 0, ""
        with deadline(self.time_limit):
            while True:
                hulls = hull_distance(weighted_sum(K, d), y, h)
                solves += 1
                if math.sqrt(hulls.value) <= self.min_margin:
                    if steps:
                        d, steps = previous, steps - 1
                    note = f"the hull distance fell to {math.sqrt(hulls.value):.3g} <= min_margin after {steps} steps"
                    break
                if steps >= self.max_iter:
                    break
                if expired():
                    cut = True
                    break
                h = hulls.g
                gradient = quadratic_forms(K, h * y) + (self.theta * (Q @ d) if Q is not None else 0.0)
                step = np.maximum(d + self.learning_rate * gradient, 0.0)
                if not step.sum() > 0:
                    break
                previous, d = d, step / step.sum()
                steps += 1
        return KernelWeights(d, {"qp_solves": float(solves), "kernel_passes": 2.0 * solves},
                       n_iter=steps, cut=cut, note=note)
