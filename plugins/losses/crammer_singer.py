"""Crammer-Singer multiclass hinge (OBJECTIVES.md, family ``pnorm_mkl``).

``loss_i = max_{c != y_i} max(0, 1 - (f_{y_i}(x_i) - f_c(x_i)))`` with ``f`` of
shape (N, n_classes) and ``y`` the class index of each example.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.parts.loss import Loss


def _margin_violations(y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """1 - (f_y - f_c) for c != y, and 0 at c = y; shape (N, n_classes)."""
    rows = np.arange(f.shape[0])
    violations = 1.0 - (f[rows, y][:, None] - f)
    violations[rows, y] = 0.0
    return violations


@attrs.frozen
class CrammerSinger(Loss):
    """Crammer-Singer multiclass hinge max_{c != y} max(0, 1 - (f_y - f_c))."""

    name = "crammer-singer"
    target = "multiclass"

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return np.maximum(0.0, _margin_violations(y, f).max(axis=1))

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """A sub-gradient in f: +1 at the most violating class, -1 at y_i, where loss_i > 0."""
        violations = _margin_violations(y, f)
        worst = violations.argmax(axis=1)
        active = violations[np.arange(f.shape[0]), worst] > 0.0
        rows = np.flatnonzero(active)
        grad = np.zeros_like(f, dtype=float)
        grad[rows, worst[rows]] = 1.0
        grad[rows, y[rows]] = -1.0
        return grad

    def cvxpy_sum(self, y: np.ndarray, f: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        n, n_classes = f.shape
        others = np.ones((n, n_classes))
        others[np.arange(n), y] = 0.0
        f_true = cp.sum(cp.multiply(np.eye(n_classes)[y], f), axis=1, keepdims=True)
        violations = cp.multiply(others, 1 + f - f_true @ np.ones((1, n_classes)))
        # The c = y_i entry is 0, so the row maximum is already >= 0.
        return cp.sum(cp.max(violations, axis=1)), []
