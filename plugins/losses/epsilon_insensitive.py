"""Epsilon-insensitive loss ``max(0, |y - f| - eps)`` (OBJECTIVES.md, y real)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import array_namespace, clip
from kernelfuse.parts.loss import Loss
from kernelfuse.validation import nonnegative


@attrs.frozen
class EpsilonInsensitive(Loss):
    """Epsilon-insensitive loss max(0, |y - f| - eps) (SVR); conjugate rho y + eps |rho| on |rho| <= 1."""

    name = "eps-insensitive"
    target = "real"
    array_api = True
    eps: float = nonnegative.field(0.1)

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return clip(array_namespace(f).abs(y - f) - self.eps, 0.0)

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        xp = array_namespace(f)
        return xp.where(xp.abs(y - f) > self.eps, xp.sign(f - y), 0.0)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """sup_z rho z - max(0, |y - z| - eps) = rho y + eps |rho| if |rho| <= 1, else inf."""
        xp = array_namespace(rho)
        return xp.where(xp.abs(rho) <= 1.0, rho * y + self.eps * xp.abs(rho), np.inf)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """|rho| <= 1."""
        return np.full(np.shape(y), -1.0), np.full(np.shape(y), 1.0)

    def conjugate_prox(self, y: np.ndarray, v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
        """argmin_w y w + eps |w| + (w - v)^2 / (2 step) on |w| <= 1: clip(soft(v - step y, step eps), -1, 1)."""
        xp = array_namespace(v)
        u = v - step * y
        return clip(xp.sign(u) * clip(xp.abs(u) - step * self.eps, 0.0), -1.0, 1.0)

    def conjugate_prox_derivative(self, y: np.ndarray, v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
        """1 where neither the soft threshold nor the clip holds, else 0."""
        xp = array_namespace(v)
        u = xp.abs(v - step * y)
        return xp.astype((u > step * self.eps) & (u - step * self.eps < 1.0), xp.float64)

    def in_units(self, t: float) -> tuple[EpsilonInsensitive, int]:
        """max(0, |y - f| - eps) = t max(0, |y / t - f / t| - eps / t): degree 1, ``eps' = eps / t``."""
        return attrs.evolve(self, eps=self.eps / t), 1

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        return cp.sum(cp.pos(cp.abs(y - f) - self.eps)), []
