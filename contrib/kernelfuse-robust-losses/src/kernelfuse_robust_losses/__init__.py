"""Robust regression losses for kernelfuse: ``huber`` and ``pinball`` (kind ``loss``).

Both are convex in ``f``, for real targets, with the capabilities the
``l1_mkl`` solvers use: ``derivative``, ``conjugate`` (with its domain) and
``cvxpy_sum`` for the exact reference solver.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

import kernelfuse
from kernelfuse import hookimpl


@attrs.frozen
class Huber(kernelfuse.Loss):
    """Huber loss of the residual r = y - f: r^2 / 2 for |r| <= delta, delta (|r| - delta / 2) beyond."""

    name = "huber"
    target = "real"
    delta: float = attrs.field(default=1.0, converter=float)

    def __attrs_post_init__(self) -> None:
        if not self.delta > 0:
            raise kernelfuse.ValidationError(f"huber: delta must be > 0, got {self.delta!r}")

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        r = np.abs(y - f)
        return np.where(r <= self.delta, 0.5 * r**2, self.delta * (r - 0.5 * self.delta))

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return -np.clip(y - f, -self.delta, self.delta)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """``sup_z rho z - huber(y - z) = rho y + rho^2 / 2`` on ``|rho| <= delta``."""
        return np.where(np.abs(rho) <= self.delta, rho * y + 0.5 * rho**2, np.inf)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(np.shape(y), -self.delta), np.full(np.shape(y), self.delta)

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        # arg-type: cvxpy annotates huber's M as int, and takes any positive number
        return 0.5 * cp.sum(cp.huber(y - f, self.delta)), []  # type: ignore[arg-type]  # cvxpy's huber is twice ours


@attrs.frozen
class Pinball(kernelfuse.Loss):
    """Pinball (quantile) loss of r = y - f: tau r for r >= 0, (tau - 1) r below; fits the tau-quantile."""

    name = "pinball"
    target = "real"
    tau: float = attrs.field(default=0.5, converter=float)

    def __attrs_post_init__(self) -> None:
        if not 0.0 < self.tau < 1.0:
            raise kernelfuse.ValidationError(f"pinball: tau must be in (0, 1), got {self.tau!r}")

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        r = y - f
        return np.maximum(self.tau * r, (self.tau - 1.0) * r)

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return np.where(y - f > 0, -self.tau, 1.0 - self.tau)

    def conjugate(self, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """``rho y`` on ``-tau <= rho <= 1 - tau``, where the derivative takes its values."""
        inside = (rho >= -self.tau - 1e-12) & (rho <= 1.0 - self.tau + 1e-12)
        return np.where(inside, rho * y, np.inf)

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(np.shape(y), -self.tau), np.full(np.shape(y), 1.0 - self.tau)

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        r = y - f
        return cp.sum(cp.maximum(self.tau * r, (self.tau - 1.0) * r)), []


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("loss", Huber.name, Huber)
    registry.add("loss", Pinball.name, Pinball)
