"""SpicyMKL's inner problem: Newton's method on the smoothed dual (Suzuki and Tomioka, eqs. 7-9, 12).

One proximal step at ``(alpha^t, b^t)`` with penalties ``gamma`` (kernels) and
``gamma_b`` (intercept) is, in OBJECTIVES.md units (``coef = alpha``),

    ``min_rho phi(rho) = sum_i loss*(rho_i) + sum_m ||ST(v_m)||^2_{K_m} / (2 gamma)
                         - b^t sum(rho) + (gamma_b / 2) sum(rho)^2``,
    ``v_m = alpha_m^t - gamma rho``,

with ``ST`` block soft-thresholding at ``gamma C`` in the ``K_m`` norm.  Its
gradient is ``loss*'(rho) - sum_m K_m ST(v_m) - b^t + gamma_b sum(rho)`` (at
the solution: the decision values of the next iterate), its Hessian
``diag(loss*'') + gamma_b 11' + sum_{active m} gamma [s_m K_m + (gamma C / ||v_m||^3) (K_m v_m)(K_m v_m)']``
with ``s_m = 1 - gamma C / ||v_m||``: only kernels with ``||v_m|| > gamma C``
(Remark 1: the active kernels) enter it.  Newton steps with Armijo
backtracking; a step that leaves the conjugate's domain has ``phi = inf``
and is backtracked.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.objectives import sparse_kernel_products
from kernelfuse.problem import Problem


@attrs.define
class InnerState:
    """What one inner solve leaves: the new model, rho, and its work."""

    coef: np.ndarray
    intercept: float
    rho: np.ndarray
    passes: float
    newton_steps: int


def solve_inner(problem: Problem, coef: np.ndarray, intercept: float, rho: np.ndarray,
                gamma: float, gamma_b: float, shrink, tol: float, max_steps: int) -> InnerState:
    """Newton on ``phi`` from ``rho``; ``shrink(norms, threshold)`` is the block soft-threshold scale."""
    K, y, C, loss = problem.K, problem.y, problem.params["C"], problem.loss
    M, N, _ = K.shape
    flat = K.reshape(M * N, N)
    K_alpha, passes = sparse_kernel_products(K, coef)  # symmetric K: K_m alpha_m
    a_K_a = np.einsum("mi,mi->m", coef, K_alpha)

    def parts(r: np.ndarray) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        nonlocal passes
        conj = float(np.sum(loss.conjugate(y, r)))
        if not np.isfinite(conj):
            return np.inf, None
        K_rho = (flat @ r).reshape(M, N)
        passes += 1.0
        v2 = a_K_a - 2.0 * gamma * np.einsum("mi,mi->m", coef, K_rho) + gamma**2 * (K_rho @ r)
        norms = np.sqrt(np.maximum(v2, 0.0))
        s = shrink(norms, gamma * C)
        value = conj + np.sum((s * norms) ** 2) / (2.0 * gamma) - intercept * r.sum() \
            + 0.5 * gamma_b * r.sum() ** 2
        return value, (K_rho, norms, s)

    value, cache = parts(rho)
    steps = 0
    for steps in range(1, max_steps + 1):
        K_rho, norms, s = cache  # type: ignore[misc]
        K_v = K_alpha - gamma * K_rho
        grad = loss.conjugate_derivative(y, rho) - (s[:, None] * K_v).sum(axis=0) - intercept \
            + gamma_b * rho.sum()
        H = np.diag(loss.conjugate_second_derivative(y, rho)) + gamma_b
        for m in np.flatnonzero(s > 0):
            H += gamma * (s[m] * K[m] + (gamma * C / norms[m] ** 3) * np.outer(K_v[m], K_v[m]))
        direction = -np.linalg.solve(H, grad)
        slope = float(grad @ direction)
        if -slope <= tol * max(1.0, abs(value)):
            break
        step = 1.0
        while step > 1e-12:
            trial_value, trial_cache = parts(rho + step * direction)
            if trial_value <= value + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break
        rho, value, cache = rho + step * direction, trial_value, trial_cache
    K_rho, norms, s = cache  # type: ignore[misc]
    new_coef = s[:, None] * (coef - gamma * rho[None, :])
    new_intercept = intercept - gamma_b * float(rho.sum()) if problem.family.has_intercept else 0.0
    return InnerState(new_coef, new_intercept, rho, passes, steps)
