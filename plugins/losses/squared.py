"""Squared loss ``(y - f)^2`` for regression (OBJECTIVES.md, y real)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import array_namespace
from kernelfuse.parts.loss import Loss
from kernelfuse.problem.conic import sum_squares_cone


@attrs.frozen
class Squared(Loss):
    """Squared loss (y - f)^2 for regression; conjugate rho y + rho^2 / 4."""

    name = "squared"
    target = "real"
    array_api = True

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return (y - f) ** 2

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return 2.0 * (f - y)

    def second_derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        xp = array_namespace(f)
        return xp.full_like(f, 2.0, dtype=xp.float64)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """sup_z rho z - (y - z)^2 = rho y + rho^2 / 4."""
        return rho * y + 0.25 * rho * rho

    def conjugate_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d loss*/d rho = y + rho / 2."""
        return y + 0.5 * rho

    def conjugate_second_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d^2 loss*/d rho^2 = 1/2."""
        xp = array_namespace(rho)
        return xp.full_like(rho, 0.5, dtype=xp.float64)

    def in_units(self, t: float) -> tuple[Squared, int]:
        """(y - f)^2 = t^2 (y / t - f / t)^2: degree 2."""
        return self, 2

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        return sum_squares_cone(y - f)
