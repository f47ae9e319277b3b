"""Logistic loss ``log(1 + exp(-y f))`` (OBJECTIVES.md, y in {-1, +1})."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from scipy.special import expit

from kernelfuse.kernels.array_backend import array_namespace, clip
from kernelfuse.parts.loss import Loss


@attrs.frozen
class Logistic(Loss):
    """Logistic loss log(1 + exp(-y f)); conjugate a log a + (1-a) log(1-a), a = -y*rho."""

    name = "logistic"
    target = "binary"
    array_api = True

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        z = -y * f
        return array_namespace(f).logaddexp(z * 0.0, z)

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return -y * _sigmoid(array_namespace(f), -y * f)

    def second_derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """sigma(y f) sigma(-y f)."""
        xp, z = array_namespace(f), y * f
        return _sigmoid(xp, z) * _sigmoid(xp, -z)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """With a = -y rho in [0, 1]: a log a + (1 - a) log(1 - a); inf elsewhere."""
        xp = array_namespace(rho)
        a = -y * rho
        inside = (a >= 0.0) & (a <= 1.0)
        a = clip(a, 0.0, 1.0)
        return xp.where(inside, _x_log_x(xp, a) + _x_log_x(xp, 1.0 - a), xp.inf)

    def conjugate_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d loss*/d rho = -y log(a / (1 - a)), a = -y rho in (0, 1) (nan outside)."""
        xp = array_namespace(rho)
        a = -y * rho
        inside = (a > 0.0) & (a < 1.0)
        a = clip(a, 1e-300, 1.0 - 1e-16)
        return xp.where(inside, -y * (xp.log(a) - xp.log1p(-a)), xp.nan)

    def conjugate_second_derivative(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """d^2 loss*/d rho^2 = 1 / (a (1 - a)), a = -y rho in (0, 1) (nan outside)."""
        xp = array_namespace(rho)
        a = -y * rho
        inside = (a > 0.0) & (a < 1.0)
        a = clip(a, 1e-300, 1.0 - 1e-16)
        return xp.where(inside, 1.0 / (a * (1.0 - a)), xp.nan)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """-y rho in [0, 1]: rho in [-1, 0] for y = +1 and [0, 1] for y = -1."""
        return np.minimum(-y, 0.0), np.maximum(-y, 0.0)

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        return cp.sum(cp.logistic(-cp.multiply(y, f))), []


def _x_log_x(xp: Any, a: Any) -> Any:
    """``a log a`` for ``a >= 0``, 0 at 0 (``scipy.special.xlogy(a, a)`` in any namespace)."""
    positive = a > 0.0
    return xp.where(positive, a * xp.log(xp.where(positive, a, 1.0)), 0.0)


def _sigmoid(xp: Any, z: Any) -> Any:
    """``1 / (1 + exp(-z))`` without overflow, to full relative precision: SciPy's ``expit`` on
    NumPy arrays, ``exp(-log(1 + e^-z))`` in any other namespace."""
    return expit(z) if xp is np else xp.exp(-xp.logaddexp(z * 0.0, -z))
