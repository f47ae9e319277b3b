"""Separable l_q-norm MKL for kernelfuse: the family ``lq_mkl`` (kind ``family``).

``P(f, b) = sum_i loss(y_i, f(x_i) + b) + (C / q) sum_m ||f_m||^q``, ``1 < q <= 2``, any convex
loss with a conjugate.  The penalty is separable in the kernel norms, ``h(v) = (C / q) v^q``, so
SpicyMKL's dual augmented Lagrangian solves it (Suzuki & Tomioka 2011, section 2, block l_q
regularisation), and the exact reference writes it as a cone program from the regulariser's
``expression``.  Over ``C``, its solutions are those of l_q-norm MKL,
``(C' / 2) (sum_m ||f_m||^q)^(2/q)`` (Kloft et al. 2011): both penalties are increasing
functions of ``sum_m ||f_m||^q``.  Unlike l1-MKL, no kernel weight is exactly zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

import kernelfuse
from kernelfuse import hookimpl

#: ``1 < q <= 2``: above 1 the penalty is smooth and strictly convex, at most 2 a norm power the
#: cone programs write exactly for the rational ``q`` of a few digits.
exponent_above_one = kernelfuse.Domain("in (1, 2]", lambda v: 1 < v <= 2)
positive = kernelfuse.Domain("> 0 and finite", lambda v: 0 < v < math.inf)
#: Bisection steps of the radial prox: ``2^-64`` of the bracket, below double precision.
BISECTION_STEPS = 64


@attrs.frozen
class BlockLq(kernelfuse.SeparablePenalty):
    """``(C / q) sum_m v_m^q`` of the kernel norms ``v``: ``h(v) = (C / q) v^q``,
    ``h*(s) = s^(q*) / (q* C^(q* - 1))`` with ``q* = q / (q - 1)``."""

    name: ClassVar[str] = "block-lq"
    weight: float = positive.field(1.0)
    q: float = exponent_above_one.field(1.5)

    def value(self, x: np.ndarray) -> float:
        return self.weight / self.q * float(np.sum(np.abs(x) ** self.q))

    def kernel_values(self, norms: np.ndarray) -> np.ndarray:
        """``h(v) = (C / q) v^q`` at each norm."""
        return self.weight / self.q * np.abs(norms) ** self.q

    @property
    def dual_q(self) -> float:
        """``q* = q / (q - 1)``."""
        return self.q / (self.q - 1.0)

    def norm(self, x: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(x), self.q))

    def dual_norm(self, u: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(u), self.dual_q))

    def conjugate(self, u: np.ndarray) -> float:
        star = self.dual_q
        return float(np.sum(np.abs(u) ** star)) / (star * self.weight ** (star - 1.0))

    def expression(self, x: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        return self.weight / self.q * cp.sum(cp.power(x, self.q)), []

    def slope(self, norms: np.ndarray) -> np.ndarray:
        """``h'(v) = C v^(q - 1)``: 0 at 0, so no kernel is thresholded to zero."""
        return self.weight * np.asarray(norms, dtype=float) ** (self.q - 1.0)

    @property
    def dual_radius(self) -> float:
        return math.inf

    def radial_prox(self, norms: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        """The root ``z`` of ``z + a z^(q-1) = r`` (``a = step C``) in ``[0, r]``, by bisection
        (the left side is increasing), and ``dz/dr = 1 / (1 + a (q - 1) z^(q - 2))``."""
        r = np.asarray(norms, dtype=float)
        a, low, high = step * self.weight, np.zeros_like(r), r.copy()
        for _ in range(BISECTION_STEPS):
            middle = 0.5 * (low + high)
            above = middle + a * middle ** (self.q - 1.0) > r
            high = np.where(above, middle, high)
            low = np.where(above, low, middle)
        z = 0.5 * (low + high)
        with np.errstate(divide="ignore"):
            slope = np.where(z > 0, 1.0 / (1.0 + a * (self.q - 1.0) * z ** (self.q - 2.0)), 0.0)
        return z, slope

    def combination_weights(self, norms: np.ndarray) -> np.ndarray:
        """``d_m`` proportional to ``||f_m|| / h'(||f_m||) = ||f_m||^(2 - q) / C``, on the simplex."""
        d = norms ** (2.0 - self.q)
        return d / d.sum()


def _regularizer(params: Mapping[str, float], groups: np.ndarray | None) -> BlockLq:
    return BlockLq(weight=params["C"], q=params["q"])


def _scaling(params: Mapping[str, float], s: float) -> tuple[dict[str, float], float]:
    """Kernels ``K / s``: ``||f||`` grows by ``sqrt(s)``, so ``C' = C s^(-q/2)`` and ``P = P'``."""
    return {**params, "C": params["C"] * s ** (-params["q"] / 2.0)}, 1.0


LQ_MKL = kernelfuse.Family(
    "lq_mkl", "separable l_q-MKL: sum_i loss + (C/q) sum_m ||f_m||^q, 1 < q <= 2",
    target="loss",
    params=(kernelfuse.Param("C", 1.0, "regularisation constant of (C/q) sum_m ||f_m||^q", positive),
            kernelfuse.Param("q", 1.5, "exponent of the kernel norms, in (1, 2]", exponent_above_one)),
    losses=None, default_loss="logistic",
    objective=kernelfuse.norm_penalised, scaling=_scaling, dual="loss_conjugate",
    regularizer=_regularizer,
)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("family", LQ_MKL.name, LQ_MKL, description=LQ_MKL.title)
