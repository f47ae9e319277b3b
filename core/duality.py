"""Certified lower bounds from dual points, one function per family that has one.

``l1_mkl`` (OBJECTIVES.md family 1): with the penalty ``h(r) = C r + (C2/2) r^2``
on each ``||f_m||``, Fenchel duality gives, for every ``rho`` in the
conjugate's domain with ``sum_i rho_i = 0`` (the sum only with an intercept),

    ``P >= D(rho) = -sum_i loss*(y_i, rho_i) - sum_m h*(||rho||_{K_m})``,
    ``h*(s) = (s - C)_+^2 / (2 C2)``, and for ``C2 = 0`` the constraint ``||rho||_{K_m} <= C``,

tight at ``rho = loss'(f)`` of the optimum (SpicyMKL, section 5.1).  Any
``rho`` is made feasible by projecting it onto the conjugate's domain
intersected with ``{sum = 0}`` (:func:`feasible_dual_point`: a shift, then
a clip to the domain; only a shift for losses finite on the whole line),
then, for ``C2 = 0``, scaling it by ``min(1, C / max_m ||rho||_{K_m})`` (in
that order: scaling keeps the sum at zero and, the domain holding 0, the
domain; the other order can break the norm constraint).  For ``C2 > 0`` the
better of the unscaled and the scaled point is taken.

The norms ``||rho||_{K_m} = sqrt(rho' K_m rho)`` take one pass over the
kernels (:func:`kernel_norms`), from a float64 or float32 stack or from
factors ``K_m = Phi_m Phi_m'`` (``||Phi_m' rho||``, ``O(N r_m)``).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from kernelfuse.kernel_factors import FactorKernels
from kernelfuse.problem import Problem
from kernelfuse.stack_products import kernel_times


def _domain(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    if hasattr(problem.loss, "conjugate_domain"):
        return problem.loss.conjugate_domain(problem.y)
    return np.full(problem.n_samples, -np.inf), np.full(problem.n_samples, np.inf)


def feasible_dual_point(problem: Problem, rho: np.ndarray) -> tuple[np.ndarray, float] | None:
    """``(clip(rho - c, domain), c)`` with ``c`` setting the sum to zero; ``None`` if impossible.

    That is the Euclidean projection onto the domain and, with an intercept,
    the hyperplane ``sum = 0``; ``c = 0`` without an intercept.
    """
    lower, upper = _domain(problem)
    if not problem.family.has_intercept:
        return np.clip(rho, lower, upper), 0.0
    if np.all(np.isinf(lower)) and np.all(np.isinf(upper)):
        shift = float(rho.mean())
        return rho - shift, shift
    if not lower.sum() <= 0.0 <= upper.sum():
        return None

    def excess(c: float) -> float:
        return float(np.clip(rho - c, lower, upper).sum())

    low, high = float(rho.mean()) - 1.0, float(rho.mean()) + 1.0
    while excess(low) < 0.0:
        low -= 2.0 * (high - low)
    while excess(high) > 0.0:
        high += 2.0 * (high - low)
    shift = brentq(excess, low, high, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    # The sum is piecewise linear in c: solve exactly on the piece brentq found.
    point = rho - shift
    free = (point > lower) & (point < upper)
    if free.any():
        shift = float((rho[free].sum() + lower[point <= lower].sum() + upper[point >= upper].sum())
                      / free.sum())
    return np.clip(rho - shift, lower, upper), shift


def kernel_norms(K: np.ndarray | FactorKernels, rho: np.ndarray) -> np.ndarray:
    """``||rho||_{K_m} = sqrt(rho' K_m rho)`` for every kernel (rounding below 0 clipped)."""
    return np.sqrt(np.maximum(kernel_times(K, rho) @ rho, 0.0))


def l1_mkl_dual_value(problem: Problem, rho: np.ndarray, norms: np.ndarray) -> float:
    """``D`` at a feasible ``rho`` (:func:`feasible_dual_point`) with ``norms[m] = ||rho||_{K_m}``."""
    C, C2 = problem.params["C"], problem.params.get("C2", 0.0)
    y, loss = problem.y, problem.loss
    top = float(norms.max())
    scaled = -float(np.sum(loss.conjugate(y, rho * min(1.0, C / top) if top > 0 else rho)))
    if C2 == 0.0:
        return scaled
    unscaled = -float(np.sum(loss.conjugate(y, rho))) \
        - float(np.sum(np.maximum(norms - C, 0.0) ** 2)) / (2.0 * C2)
    return max(scaled, unscaled)


def l1_mkl_lower_bound(problem: Problem, rho: np.ndarray) -> tuple[float, int]:
    """Lower bound on the ``l1_mkl`` optimum from any ``rho``, and the kernel passes it cost (1)."""
    feasible = feasible_dual_point(problem, rho)
    if feasible is None:
        return -np.inf, 0
    point = feasible[0]
    return l1_mkl_dual_value(problem, point, kernel_norms(problem.K, point)), 1
