"""Logistic loss ``log(1 + exp(-y f))`` (OBJECTIVES.md, y in {-1, +1})."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from scipy.special import expit, xlogy

from kernelfuse.parts.loss import Loss


@attrs.frozen
class Logistic(Loss):
    """Logistic loss log(1 + exp(-y f)); conjugate a log a + (1-a) log(1-a), a = -y*rho."""

    name = "logistic"
    target = "binary"

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -y * f)

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return -y * expit(-y * f)

    def second_derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """sigma(y f) sigma(-y f)."""
        z = y * f
        return expit(z) * expit(-z)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """With a = -y rho in [0, 1]: a log a + (1 - a) log(1 - a); inf elsewhere."""
        a = -y * rho
        inside = (a >= 0.0) & (a <= 1.0)
        a = np.clip(a, 0.0, 1.0)
        return np.where(inside, xlogy(a, a) + xlogy(1.0 - a, 1.0 - a), np.inf)

    def conjugate_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d loss*/d rho = -y log(a / (1 - a)), a = -y rho in (0, 1) (nan outside)."""
        a = -y * rho
        inside = (a > 0.0) & (a < 1.0)
        a = np.clip(a, 1e-300, 1.0 - 1e-16)
        return np.where(inside, -y * (np.log(a) - np.log1p(-a)), np.nan)

    def conjugate_second_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d^2 loss*/d rho^2 = 1 / (a (1 - a)), a = -y rho in (0, 1) (nan outside)."""
        a = -y * rho
        inside = (a > 0.0) & (a < 1.0)
        a = np.clip(a, 1e-300, 1.0 - 1e-16)
        return np.where(inside, 1.0 / (a * (1.0 - a)), np.nan)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """-y rho in [0, 1]: rho in [-1, 0] for y = +1 and [0, 1] for y = -1."""
        return np.minimum(-y, 0.0), np.maximum(-y, 0.0)

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        return cp.sum(cp.logistic(-cp.multiply(y, f))), []
