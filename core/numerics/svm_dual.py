"""The SVM dual's numerics shared by the SVM solvers and the methods built on them.

For ``max_a 1'a - 0.5 (a * y)' K (a * y)`` s.t. ``0 <= a <= C`` (and ``y'a = 0`` with an
intercept; the contract :class:`~kernelfuse.parts.svm_solver.SVMSolver`): the dual and primal
values, the KKT margins, the intercept from ``a``, and the centring that keeps a constant part
of ``K`` from swamping the rest in rounding.
"""

from __future__ import annotations

import numpy as np


def svm_dual_value(K: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> float:
    """``1'a - 0.5 (a * y)' K (a * y)``."""
    ay = alpha * y
    return float(alpha.sum() - 0.5 * ay @ (K @ ay))


def svm_primal_value(K: np.ndarray, y: np.ndarray, C: float, alpha: np.ndarray, b: float) -> float:
    """``0.5 ||f||^2 + C sum_i hinge`` at ``f = K (a * y)``, intercept ``b``."""
    ay = alpha * y
    Kay = K @ ay
    return float(0.5 * ay @ Kay + C * np.maximum(0.0, 1.0 - y * (Kay + b)).sum())


#: The constant part of ``K`` (its mean) is removed before an SVM with an intercept when it
#: exceeds this many times the spread ``trace(H K H) / N``: libsvm's single-precision cache
#: keeps about 7 digits, and below it the pass and the copy would cost more than they save.
CONSTANT_DOMINANCE = 100.0


def centred_kernel(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(H K H, K 1 / N)`` with ``H = I - 11'/N`` where a constant part dominates ``K``; else ``(K, 0)``.

    With ``beta = a * y`` and ``1'beta = 0``, ``beta' H K H beta = beta' K beta``
    and ``K beta = H K H beta + (r'beta) 1`` for the row means ``r = K 1 / N``:
    the SVM dual with an intercept has the same solutions on ``H K H``, and its
    intercept there is ``b + r'beta``.  A constant part ``c 11'``, which adds
    nothing under ``y'a = 0``, is so removed before it swamps the rest in
    rounding (:data:`CONSTANT_DOMINANCE`): kernels weighted by up to
    ``1 / gamma_floor`` (VSKL with q = inf, :mod:`kernelfuse.plugins.mirror_vskl.vskl_bca`)
    are nearly constant where their group carries no signal, and libsvm's
    single-precision cache then kept nothing of the other kernels.
    """
    n = K.shape[0]
    rows = K @ np.full(n, 1.0 / n)  # one matrix-vector product
    mean = float(rows.mean())
    if not abs(mean) > CONSTANT_DOMINANCE * max(float(np.trace(K)) / n - mean, 0.0):
        return K, np.zeros(n)
    centred = K - rows[:, None]
    centred -= rows[None, :] - mean
    return centred, rows


def margins(K: np.ndarray, y: np.ndarray, alpha: np.ndarray, b: float) -> np.ndarray:
    """``y_i f(x_i) - 1`` with ``f = K (a * y) + b``: the KKT residuals of the dual."""
    return y * (K @ (alpha * y) + b) - 1.0


def intercept_from_alpha(K: np.ndarray, y: np.ndarray, C: float, alpha: np.ndarray) -> float:
    """The optimal intercept for dual variables ``alpha``.

    On margin support vectors (``0 < a_i < C``) ``y_i f_i = 1`` fixes ``b``
    (averaged over them); without any, ``b`` is the midpoint of the interval
    the bound constraints allow (as libsvm does).
    """
    g = K @ (alpha * y)
    scale = max(C, 1.0) * 1e-8
    free = (alpha > scale) & (alpha < C - scale)
    if free.any():
        return float(np.mean(y[free] - g[free]))
    # a_i = 0 needs y_i (g_i + b) >= 1; a_i = C needs y_i (g_i + b) <= 1.
    bound = y - g  # b >= bound for y = +1 at 0 / y = -1 at C, b <= bound otherwise
    at_zero = alpha <= scale
    low = np.r_[bound[at_zero & (y > 0)], bound[~at_zero & (y < 0)]]
    high = np.r_[bound[at_zero & (y < 0)], bound[~at_zero & (y > 0)]]
    lo = low.max() if low.size else -np.inf
    hi = high.min() if high.size else np.inf
    if np.isinf(lo) and np.isinf(hi):
        return 0.0
    if np.isinf(lo) or np.isinf(hi):
        return float(hi if np.isinf(lo) else lo)
    return float(0.5 * (lo + hi))
