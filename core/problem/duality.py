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

``pnorm_mkl`` (OBJECTIVES.md family 4, no intercept): each loss is a maximum
of linear functions of ``f``.  Binary hinge:
``loss_i = max_{a_i in [0, 1]} a_i (1 - y_i f_i)``; Crammer-Singer:
``loss_i = max_{beta_i} sum_{c != y_i} beta_ic (1 - f_{y_i}(x_i) + f_c(x_i))``
over ``beta_ic >= 0``, ``s_i = sum_{c != y_i} beta_ic <= 1``.  In the layout
of one kernel's coefficients, ``tau`` (N,) ``= a y`` or (C, N) with
``tau[y_i, i] = s_i``, ``tau[c, i] = -beta_ic`` (``s_i = a_i`` binary: the
example's *mass*), the losses' part is ``(1/N) sum_i s_i - <w, v>`` with
``v_{m,c} = (1/N) sum_i tau[c, i] phi_m(x_i)``, and
``min_w (lam/2) ||w||_{2,p}^2 - <w, v> = -||v||_{2,q}^2 / (2 lam)``
(``q = p / (p - 1)``: the conjugate of half a squared norm is half the
squared dual norm).  So for every feasible ``tau``

    ``P >= D(tau) = (1/N) sum_i s_i - ||v||_{2,q}^2 / (2 lam)``,
    ``||v_m||^2 = (1/N^2) sum_c tau_c' K_m tau_c``,

with equality at a saddle point (the program is finite and its constraints
are polyhedral, so there is no duality gap): ``w* = grad (||.||_{2,q}^2 / (2 lam))(v*)``,
which is OBSCURE's ``w = grad h*(theta)`` at ``theta = (q / lam) v``
(:mod:`kernelfuse.plugins.obscure.group_norm_map`).  Any ``tau`` is made
feasible by clipping each example to its set (:func:`pnorm_mkl_feasible`:
``a = clip(y tau, 0, 1)``; ``beta = max(0, -tau)`` off ``y_i``, scaled down
to ``s_i <= 1``), and ``t tau`` stays feasible for ``0 <= t <= 1 / max_i s_i``,
where ``D(t tau) = t S - t^2 ||v||^2 / (2 lam)`` is best at
``t = min(1 / max_i s_i, lam S / ||v||^2)`` (:func:`pnorm_mkl_dual_value`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.optimize
from scipy.optimize import brentq

from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.products import kernel_times
from kernelfuse.problem import objectives
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


def pnorm_mkl_feasible(problem: Problem, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``pnorm_mkl`` dual point ``tau`` ((N,) binary, (C, N) multiclass) clipped to the
    domain, and each example's mass ``s_i`` (module docstring)."""
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
    t = pnorm_mkl_scaling(problem, mass, dual_norm)
    return t * float(mass.mean()) - t * t * dual_norm * dual_norm / (2.0 * problem.params["lam"])


def pnorm_mkl_scaling(problem: Problem, mass: np.ndarray, dual_norm: float) -> float:
    """The ``t = min(1 / max_i s_i, lam S / ||v||^2)`` that maximises ``D(t tau)`` (0 where ``tau = 0``)."""
    top = float(mass.max(initial=0.0))
    if top == 0.0:
        return 0.0
    square = dual_norm * dual_norm
    return 1.0 / top if square == 0.0 else min(1.0 / top, problem.params["lam"] * float(mass.mean()) / square)


def pnorm_mkl_lower_bound(problem: Problem, tau: np.ndarray) -> tuple[float, int]:
    """Lower bound on the ``pnorm_mkl`` optimum from any ``tau``, and the kernel passes it cost (1)."""
    point, mass = pnorm_mkl_feasible(problem, tau)
    coef = np.broadcast_to(point, (problem.n_kernels, *point.shape))
    norms = objectives.rkhs_norms(problem.K, coef) / problem.n_samples  # ||v_m||
    q = problem.params["p"] / (problem.params["p"] - 1.0)
    return pnorm_mkl_dual_value(problem, mass, objectives.group_norm(norms, q)), 1


def exponents(q: float) -> tuple[float, float]:
    """``(t, r)`` for exponent q: ``t = (q-1)/q``, ``r = q/(2q-1)``; (1, 1/2) for q = inf."""
    if math.isinf(q):
        return 1.0, 0.5
    return (q - 1.0) / q, q / (2.0 * q - 1.0)


def r_norm(v: np.ndarray, r: float) -> float:
    """``(sum_j v_j^r)^(1/r)`` for ``v >= 0`` and ``0 < r <= 1``, without overflow."""
    top = float(v.max()) if v.size else 0.0
    if top <= 0.0:
        return 0.0
    return top * float(np.sum((v / top) ** r)) ** (1.0 / r)


def vskl_lower_bound(alpha: np.ndarray, a: np.ndarray, groups: np.ndarray, q: float) -> float:
    """``H(alpha) = 1'alpha - 0.5 ||(max_{k in j} a_k)_j||_r``: a lower bound on the vskl optimum."""
    n_groups = int(groups.max()) + 1
    top = np.zeros(n_groups)
    np.maximum.at(top, groups, a)
    return float(alpha.sum() - 0.5 * r_norm(top, exponents(q)[1]))


def weighted_lower_bound(sums: np.ndarray, A: np.ndarray, gamma: np.ndarray) -> float:
    """``sum_k gamma_k 1'a_k - 0.5 max_m sum_k gamma_k A[m, k]``: a lower bound on
    ``min_p sum_k gamma_k SVM_k(p)`` for feasible ``a_k`` with ``sums[k] = 1'a_k``."""
    return float(gamma @ sums - 0.5 * np.max(A @ gamma))


def max_family_lower_bound(sums: np.ndarray, A: np.ndarray) -> float:
    """The best :func:`weighted_lower_bound` over the simplex: a lower bound on ``mlmkl_max``.

    ``max_{gamma, t} sums' gamma - 0.5 t`` s.t. ``A gamma <= t``, ``gamma`` in
    the simplex: a linear programme (HiGHS).  The bound is re-evaluated
    exactly at the programme's gamma (clipped and renormalised), so its
    certificate never rests on the programme's tolerance; the best single
    label is the fallback.
    """
    L = sums.size
    single = max(weighted_lower_bound(sums, A, np.eye(L)[k]) for k in range(L))
    if L == 1:
        return single
    cost = np.r_[-sums, 0.5]
    rows = np.c_[A, -np.ones(A.shape[0])]
    result = scipy.optimize.linprog(
        cost, A_ub=rows, b_ub=np.zeros(A.shape[0]), A_eq=np.r_[np.ones(L), 0.0][None, :],
        b_eq=[1.0], bounds=[(0, None)] * L + [(None, None)], method="highs",
    )
    if result.status != 0:
        return single
    gamma = np.maximum(result.x[:L], 0.0)
    return max(single, weighted_lower_bound(sums, A, gamma / gamma.sum()))


def mikl_lower_bound(problem: Problem, penalty: Any, u: np.ndarray, gradient: np.ndarray) -> float:
    """Fenchel's dual ``D(c u) = -sum_i L*_i(c u_i) - g*(-c A' u)`` of ``mikl`` (squared hinge ``L``,
    the mixed-norm ``penalty`` ``g``: its ``lam``, ``q``, ``dual_group_norms`` and ``conjugate``) at
    ``u`` with ``y u <= 0`` and ``gradient = A' u`` (M, N), scaled by the best ``c >= 0`` (a quadratic
    in ``c``; for ``q = 1`` capped so that ``-c A' u`` is in the dual ball).  Exact at the optimum."""
    s = problem.y * u  # <= 0 on the conjugate's domain
    linear, quadratic = float(s.sum()), float(s @ s) / 4.0
    v = -gradient.T  # -A'u in the layout of alpha
    cap = math.inf
    if penalty.q == 1.0:
        top = float(penalty.dual_group_norms(v).max(initial=0.0))
        cap = penalty.lam / top if top > 0 else math.inf
    else:
        quadratic += penalty.conjugate(v)
    c = min(cap, -linear / (2.0 * quadratic)) if quadratic > 0 else (cap if linear < 0 else 0.0)
    if not math.isfinite(c):
        c = 0.0
    return float(-problem.loss.conjugate(problem.y, c * u).sum() - penalty.conjugate(c * v))
