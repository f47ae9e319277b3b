"""Squared hinge loss ``max(0, 1 - y f)^2`` (OBJECTIVES.md, y in {-1, +1})."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import array_namespace, clip
from kernelfuse.parts.loss import Loss
from kernelfuse.problem.conic import sum_squares_cone


@attrs.frozen
class SquaredHinge(Loss):
    """Squared hinge max(0, 1 - y f)^2: smooth; conjugate s + s^2/4 for s = y*rho <= 0."""

    name = "squared-hinge"
    target = "binary"
    array_api = True

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return clip(1.0 - y * f, 0.0) ** 2

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return -2.0 * y * clip(1.0 - y * f, 0.0)

    def second_derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """2 where y f < 1, else 0 (the generalised second derivative)."""
        xp = array_namespace(f)
        return 2.0 * xp.astype(y * f < 1.0, xp.float64)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """sup_z rho z - max(0, 1 - y z)^2 = s + s^2/4 with s = y rho <= 0, else inf."""
        s = y * rho
        return array_namespace(rho).where(s <= 0.0, s + 0.25 * s * s, np.inf)

    def conjugate_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d loss*/d rho = y (1 + y rho / 2) on y rho <= 0 (nan outside the domain)."""
        s = y * rho
        return array_namespace(rho).where(s <= 0.0, y * (1.0 + 0.5 * s), np.nan)

    def conjugate_second_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d^2 loss*/d rho^2 = 1/2 on y rho <= 0 (nan outside the domain)."""
        xp = array_namespace(rho)
        return xp.where(y * rho <= 0.0, xp.full_like(rho, 0.5, dtype=xp.float64), np.nan)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """y rho <= 0: rho in (-inf, 0] for y = +1 and [0, inf) for y = -1."""
        return np.where(y > 0, -np.inf, 0.0), np.where(y > 0, 0.0, np.inf)

    def conjugate_prox(self, y: np.ndarray, v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
        """argmin_w s + s^2/4 + (w - v)^2 / (2 step), s = y w <= 0: y min(0, (y v - step) / (1 + step/2))."""
        return y * clip((y * v - step) / (1.0 + 0.5 * step), None, 0.0)

    def conjugate_prox_derivative(self, y: np.ndarray, v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
        """1 / (1 + step/2) where y v > step (the bound inactive), else 0."""
        xp = array_namespace(v)
        return xp.where(y * v - step < 0.0, xp.full_like(v, 1.0, dtype=xp.float64) / (1.0 + 0.5 * step), 0.0)

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        # A cone constraint takes affine arguments only (DCP): the slack
        # s >= max(0, 1 - y f) carries the hinge into sum_squares_cone.
        slack = cp.Variable(np.shape(y), nonneg=True)
        total, constraints = sum_squares_cone(slack)
        return total, [slack >= 1 - cp.multiply(y, f), *constraints]
