"""Hinge loss ``max(0, 1 - y f)`` (OBJECTIVES.md, y in {-1, +1})."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import array_namespace, clip
from kernelfuse.parts.loss import Loss


@attrs.frozen
class Hinge(Loss):
    """Hinge loss max(0, 1 - y f), the SVM loss; conjugate y*rho on y*rho in [-1, 0]."""

    name = "hinge"
    target = "binary"
    array_api = True

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return clip(1.0 - y * f, 0.0)

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return array_namespace(f).where(y * f < 1.0, -y, 0.0)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """sup_z rho z - max(0, 1 - y z) = y rho if -1 <= y rho <= 0, else inf."""
        s = y * rho
        return array_namespace(rho).where((s >= -1.0) & (s <= 0.0), s, np.inf)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """y rho in [-1, 0]: rho in [-1, 0] for y = +1 and [0, 1] for y = -1."""
        return np.minimum(-y, 0.0), np.maximum(-y, 0.0)

    def conjugate_prox(self, y: np.ndarray, v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
        """argmin_w y w + (w - v)^2 / (2 step) on y w in [-1, 0]: y clip(y v - step, -1, 0)."""
        return y * clip(y * v - step, -1.0, 0.0)

    def conjugate_prox_derivative(self, y: np.ndarray, v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
        """1 where the clip is inactive, 0 where it holds."""
        xp = array_namespace(v)
        u = y * v - step
        return xp.astype((u > -1.0) & (u < 0.0), xp.float64)

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        return cp.sum(cp.pos(1 - cp.multiply(y, f))), []
