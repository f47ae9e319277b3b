"""Certified lower bounds from dual points, one function per family that has one.

``l1_mkl`` and any family of penalty ``sum_m h(||f_m||)`` (OBJECTIVES.md family 1; SpicyMKL,
section 5.1): for ``rho`` in the loss conjugate's domain with ``sum_i rho_i = 0`` (with an
intercept), ``P >= D(rho) = -sum_i loss*(y_i, rho_i) - sum_m h*(||rho||_{K_m})``, tight at the
optimum's ``loss'(f)``; :func:`feasible_dual_point` projects any ``rho`` there (a shift, then a
clip), then it is scaled into ``dom h*`` (``||rho||_{K_m} <= C``; that order keeps it feasible).  ``pnorm_mkl``
(family 4; OBSCURE's dual): for ``tau`` feasible for the hinge or Crammer-Singer loss,
``P >= D(tau) = (1/N) sum_i s_i - ||v||_{2,q}^2 / (2 lam)``, ``v_m = (1/N) sum_i tau_i phi_m(x_i)``,
equal at a saddle point; :func:`pnorm_mkl_feasible` clips ``tau`` and
:func:`pnorm_mkl_dual_value` takes its best multiple.  The norms take one pass over a stack or
its factors (:func:`kernel_norms`).  Derivations: docs/methods/spicymkl.md, docs/methods/obscure.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import numpy as np

from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.products import kernel_times
from kernelfuse.parts.regularizer import Regularizer, SeparablePenalty
from kernelfuse.problem import objectives
from kernelfuse.problem.regularizers import MixedLpq, NormPower, VSKLNorm

if TYPE_CHECKING:  # the families name l1_mkl_c_max; instance imports the families
    from kernelfuse.problem.instance import Problem


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
    from scipy.optimize import brentq  # imported on use: scipy.optimize costs 0.1 s at import

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


def separable_dual_value(problem: Problem, rho: np.ndarray, norms: np.ndarray) -> float:
    """``D(t rho) = -sum_i loss*(y_i, t rho_i) - sum_m h*(t ||rho||_{K_m})`` at a feasible ``rho``
    (:func:`feasible_dual_point`) with ``norms[m] = ||rho||_{K_m}``, at the best of the multiples
    ``t`` :func:`best_scaled_dual_value` tries."""
    y, loss = problem.y, problem.loss

    def conjugate_sums(ts: np.ndarray) -> np.ndarray:
        return np.array([float(np.sum(loss.conjugate(y, rho * t))) for t in ts])

    return best_scaled_dual_value(problem.regularizer, conjugate_sums, norms)


def best_scaled_dual_value(omega: Regularizer, conjugate_sums: Callable[[np.ndarray], np.ndarray],
                           norms: np.ndarray) -> float:
    """``max_t D(t rho) = -sum_i loss*(y_i, t rho_i) - sum_m h*(t norms_m)`` over a few multiples
    ``t`` in ``[0, t_max]`` of a feasible dual point ``rho`` (:func:`feasible_dual_point`), for the
    penalty ``sum_m h(||f_m||)`` of ``omega`` (a :class:`SeparablePenalty`);
    ``conjugate_sums(ts)`` is ``sum_i loss*(y_i, t rho_i)`` for each ``t`` of ``ts`` (where ``rho``
    lives: in memory, or in row blocks on a cluster).  ``t_max = min(1, R / max_m norms)`` with
    ``R`` the radius of ``dom h*`` (``t <= 1`` keeps ``t rho`` in the loss conjugate's domain, which
    holds 0, and its sum 0).  The multiples: ``t_max``; the ``t`` putting the largest norm on
    ``h'(0+)``, where ``h*`` is 0 (``l1_mkl``: ``C``); and where ``h'(0+) = 0`` the maximiser of the
    concave ``D`` on the interval."""
    assert isinstance(omega, SeparablePenalty), "a loss_conjugate family's penalty is separable"
    top = float(np.max(norms, initial=0.0))
    radius, threshold = omega.dual_radius, omega.threshold
    t_max = min(1.0, radius / top) if top > 0 else 1.0
    candidates = np.array(sorted({t_max, min(t_max, threshold / top) if top > 0 else t_max}))
    best = float(np.max(-conjugate_sums(candidates) - [omega.conjugate(norms * t) for t in candidates]))
    if threshold == 0.0 and top > 0:
        from scipy.optimize import minimize_scalar  # imported on use: scipy.optimize costs 0.1 s

        def value(t: float) -> float:
            return -float(conjugate_sums(np.array([t]))[0]) - omega.conjugate(norms * t)

        found = minimize_scalar(lambda t: -value(t), bounds=(0.0, t_max), method="bounded",
                                options={"xatol": 1e-12 * t_max, "maxiter": 100})
        best = max(best, -float(found.fun))
    return best


def separable_lower_bound(problem: Problem, rho: np.ndarray) -> tuple[float, int]:
    """Lower bound on the optimum of a ``loss_conjugate`` family (``l1_mkl``) from any ``rho``, and
    the kernel passes it cost (1)."""
    feasible = feasible_dual_point(problem, rho)
    if feasible is None:
        return -np.inf, 0
    point = feasible[0]
    return separable_dual_value(problem, point, kernel_norms(problem.K, point)), 1


def l1_mkl_c_max(problem: Problem) -> float:
    """The smallest ``C`` at which the zero model is an ``l1_mkl`` optimum: every ``f_m = 0``,
    with the best intercept ``b0 = argmin_b sum_i loss(y_i, b)``.

    At ``f = b0 1`` the dual point ``rho = loss'(y, b0)`` has ``sum_i rho_i = 0`` (the intercept's
    optimality) and matches the model, so the zero model is optimal exactly when ``rho`` is dual
    feasible: ``||rho||_{K_m} <= C`` for every kernel (the ball of the bound above, section 5.1;
    ``h'(0) = C`` whatever ``C2``).  Hence ``C_max = max_m sqrt(rho' K_m rho)``, the group lasso's
    ``lambda_max`` (Friedman, Hastie and Tibshirani 2010, section 2.5) with the kernels as groups:
    the top of a regularisation path.  A loss without a derivative at ``b0`` (the hinge at a
    kink) gives a subgradient, projected onto ``sum = 0`` and the conjugate's domain
    (:func:`feasible_dual_point`): ``C_max`` is then that subgradient's, an estimate.  One pass.
    """
    from scipy.optimize import minimize_scalar  # imported on use: scipy.optimize costs 0.1 s at import

    y, loss, ones = problem.y, problem.loss, np.ones(problem.n_samples)
    b0 = float(minimize_scalar(lambda b: loss.total(y, b * ones)).x) if problem.family.has_intercept else 0.0
    feasible = feasible_dual_point(problem, loss.derivative(y, b0 * ones))
    if feasible is None:
        raise ValueError(f"loss {loss.name!r} has no dual point with sum 0 on these targets")
    return float(kernel_norms(problem.K, feasible[0]).max())


def pnorm_mkl_feasible(problem: Problem, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``pnorm_mkl`` dual point ``tau`` ((N,) binary, (C, N) multiclass) clipped to the
    domain, and each example's mass ``s_i`` (``a_i`` binary, ``sum_c beta_ic`` multiclass;
    docs/methods/obscure.md, the certificate)."""
    y = problem.y
    if tau.ndim == 1:
        mass = np.clip(y * tau, 0.0, 1.0)
        return mass * y, mass
    rows = np.arange(tau.shape[1])
    beta = np.maximum(-tau, 0.0)
    beta[y, rows] = 0.0
    total = beta.sum(axis=0)
    beta /= np.maximum(total, 1.0)
    mass = np.minimum(total, 1.0)
    point = -beta
    point[y, rows] = mass
    return point, mass


def pnorm_mkl_dual_value(problem: Problem, mass: np.ndarray, dual_norm: float) -> float:
    """``max_t D(t tau)`` for a feasible ``tau`` of masses ``mass`` with ``||v||_{2,q} <= dual_norm``.

    A larger ``dual_norm`` than the point's own gives a smaller value: still a lower bound."""
    return mean_loss_dual_value(problem.params["lam"], float(mass.mean()), float(mass.max(initial=0.0)), dual_norm)


def pnorm_mkl_scaling(problem: Problem, mass: np.ndarray, dual_norm: float) -> float:
    """The ``t`` that maximises ``D(t tau)`` (:func:`mean_loss_scaling`)."""
    return mean_loss_scaling(problem.params["lam"], float(mass.mean()), float(mass.max(initial=0.0)), dual_norm)


def mean_loss_dual_value(lam: float, mean_mass: float, top_mass: float, dual_norm: float) -> float:
    """``max_t D(t tau) = t S - t^2 ||v||^2 / (2 lam)`` (the ``mean_loss`` dual) from the masses'
    mean ``S`` and largest value (or a bound above it), and ``||v||_{2,q} <= dual_norm``."""
    t = mean_loss_scaling(lam, mean_mass, top_mass, dual_norm)
    return t * mean_mass - t * t * dual_norm * dual_norm / (2.0 * lam)


def mean_loss_scaling(lam: float, mean_mass: float, top_mass: float, dual_norm: float) -> float:
    """The ``t = min(1 / max_i s_i, lam S / ||v||^2)`` that maximises ``D(t tau)`` (0 where ``tau = 0``)."""
    if top_mass == 0.0:
        return 0.0
    square = dual_norm * dual_norm
    return 1.0 / top_mass if square == 0.0 else min(1.0 / top_mass, lam * mean_mass / square)


def pnorm_mkl_lower_bound(problem: Problem, tau: np.ndarray) -> tuple[float, int]:
    """Lower bound on the ``pnorm_mkl`` optimum from any ``tau``, and the kernel passes it cost (1)."""
    point, mass = pnorm_mkl_feasible(problem, tau)
    coef = np.broadcast_to(point, (problem.n_kernels, *point.shape))
    norms = objectives.rkhs_norms(problem.K, coef) / problem.n_samples  # ||v_m||
    return pnorm_mkl_dual_value(problem, mass, problem.regularizer.dual_norm(norms)), 1


def exponents(q: float) -> tuple[float, float]:
    """``(t, r)`` for exponent q: ``t = (q-1)/q``, ``r = q/(2q-1)``; (1, 1/2) for q = inf."""
    if math.isinf(q):
        return 1.0, 0.5
    return (q - 1.0) / q, q / (2.0 * q - 1.0)


def vskl_lower_bound(alpha: np.ndarray, a: np.ndarray, groups: np.ndarray, q: float) -> float:
    """``H(alpha) = 1'alpha - 0.5 ||(max_{k in j} a_k)_j||_r = 1'alpha - Omega*(sqrt(a))``, ``Omega`` the
    :class:`~kernelfuse.problem.regularizers.VSKLNorm` penalty: a lower bound on the vskl optimum
    (mirrorVSKL, section 3) at a feasible SVM dual ``alpha`` with ``a_k = (alpha y)' K_k (alpha y)``."""
    return float(alpha.sum() - VSKLNorm(groups, q=q).conjugate(np.sqrt(np.maximum(a, 0.0))))


def weighted_lower_bound(sums: np.ndarray, A: np.ndarray, gamma: np.ndarray) -> float:
    """``sum_k gamma_k 1'a_k - 0.5 max_m sum_k gamma_k A[m, k]``: a lower bound on
    ``min_p sum_k gamma_k SVM_k(p)`` for feasible ``a_k`` with ``sums[k] = 1'a_k``."""
    return float(gamma @ sums - 0.5 * np.max(A @ gamma))


@attrs.frozen(eq=False)
class CuttingPlaneBound:
    """The linear programme of :func:`max_family_cutting_plane`: its certified ``bound``, the
    ``weights`` it puts on the planes and the kernel weights ``p`` minimising the planes' max
    (its multipliers); ``weights`` and ``p`` are None when the programme failed."""

    bound: float
    weights: np.ndarray | None
    p: np.ndarray | None


def max_family_cutting_plane(sums: np.ndarray, A: np.ndarray) -> CuttingPlaneBound:
    """``min_p max_j (sums_j - 0.5 p' A[:, j])`` over the simplex, a lower bound on ``mlmkl_max``.

    Each column ``j`` is a plane below some label's ``SVM_k(p)`` (any feasible dual gives one),
    so the planes' max is below ``max_k SVM_k``, whatever points the duals were solved at.  By
    linear programming duality the bound is the best :func:`weighted_lower_bound` over weights
    ``gamma`` on the planes: ``max_{gamma, t} sums' gamma - 0.5 t`` s.t. ``A gamma <= t``
    (HiGHS); twice the multipliers of ``A gamma <= t`` are the minimising p (Kelley's
    cutting-plane point, 1960).  The bound is re-evaluated exactly at the programme's gamma
    (clipped and renormalised), so its certificate never rests on the programme's tolerance;
    the best single plane is the fallback.
    """
    single = float(np.max(sums - 0.5 * A.max(axis=0)))
    n = sums.size
    if n == 1:
        return CuttingPlaneBound(single, np.ones(1), None)
    import scipy.optimize

    result = scipy.optimize.linprog(
        np.r_[-sums, 0.5], A_ub=np.c_[A, -np.ones(A.shape[0])], b_ub=np.zeros(A.shape[0]),
        A_eq=np.r_[np.ones(n), 0.0][None, :], b_eq=[1.0], bounds=[(0, None)] * n + [(None, None)],
        method="highs",
    )
    if result.status != 0:
        return CuttingPlaneBound(single, None, None)
    gamma = np.maximum(result.x[:n], 0.0)
    gamma /= gamma.sum()
    p = np.maximum(-np.asarray(result.ineqlin.marginals), 0.0)
    bound = max(single, weighted_lower_bound(sums, A, gamma))
    return CuttingPlaneBound(bound, gamma, p / p.sum() if p.sum() > 0 else None)


def max_family_lower_bound(sums: np.ndarray, A: np.ndarray) -> float:
    """:func:`max_family_cutting_plane`'s bound for one plane per label (``sums[k] = 1'a_k``,
    ``A[:, k]`` its forms): a certified lower bound on ``mlmkl_max``."""
    return max_family_cutting_plane(sums, A).bound


def mikl_penalty(problem: Problem) -> MixedLpq:
    """The ``(lam/q) ||.||_{pq;r}^q`` penalty of a ``mikl`` problem: its regulariser."""
    penalty = problem.regularizer
    assert isinstance(penalty, MixedLpq), "mikl's regulariser is a MixedLpq"
    return penalty


def mikl_lower_bound(problem: Problem, penalty: NormPower, u: np.ndarray, gradient: np.ndarray) -> float:
    """Fenchel's dual ``D(c u) = -sum_i L*_i(c u_i) - g*(-c A' u)`` of ``mikl`` (squared hinge ``L``, the
    mixed-norm ``penalty`` ``g = (lam/q) ||.||_{pq;r}^q``) at ``u`` with ``y u <= 0`` and
    ``gradient = A' u`` (M, N), scaled by the best ``c >= 0`` (a quadratic in ``c``; for ``q = 1``
    capped so that ``-c A' u`` is in the dual ball).  Exact at the optimum."""
    s = problem.y * u  # <= 0 on the conjugate's domain
    linear, quadratic = float(s.sum()), float(s @ s) / 4.0
    v = -gradient.T  # -A'u in the layout of alpha
    cap = math.inf
    if penalty.power == 1:  # q = 1: the conjugate is the indicator of the dual ball of radius lam
        top = penalty.dual_norm(v)
        cap = penalty.weight / top if top > 0 else math.inf
    else:
        quadratic += penalty.conjugate(v)
    c = min(cap, -linear / (2.0 * quadratic)) if quadratic > 0 else (cap if linear < 0 else 0.0)
    if not math.isfinite(c):
        c = 0.0
    return float(-problem.loss.conjugate(problem.y, c * u).sum() - penalty.conjugate(c * v))
