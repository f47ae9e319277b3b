"""Newton on the smoothed hinge over row blocks: one binary ``pnorm_mkl`` solve, certified by map-reduce.

The problem (OBJECTIVES.md family 4, binary hinge, no intercept) on low-rank kernels
``K_m = Phi_m S_m^2 Phi_m'`` is, in the features' weights ``v_m`` (``f = sum_m Phi_m S_m v_m``,
``||f_m|| <= ||v_m||`` as in :mod:`kernelfuse.distributed.newton`),

    ``P(v) = (lam / 2) ||(||v_m||)_m||_p^2 + (1/N) sum_i max(0, 1 - y_i f_i)``.

The hinge is replaced by its Moreau envelope of width ``mu`` (Nesterov 2005),
``h_mu(z) = 0`` for ``z >= 1``, ``(1 - z)^2 / (2 mu)`` on ``(1 - mu, 1)``, ``1 - z - mu/2`` below,
with ``h_mu <= hinge <= h_mu + mu/2``: ``P_mu`` is smooth, and each iteration is a Newton step on it
from the same two passes as the ``l1_mkl`` method (:mod:`.proximal_newton`, over
:class:`~kernelfuse.distributed.passes.Run`):

1. the gradient pass at ``v``: ``sum h_mu``, ``Phi' rho`` (``rho_i = y_i h_mu'(y_i f_i)``) and the
   curvature of the rows in the band (all of them, up to ``hessian_rows``); the hinge's own sum
   over the margins (no feature read) gives ``P(v)``;
2. the certificate, free: ``a_i = -y_i rho_i = clip((1 - y_i f_i) / mu, 0, 1)`` is a dual point of
   the exact hinge, and so is any ``sum_j c_j a_j`` (``c >= 0``, ``sum_j c_j <= 1``) of the last
   :data:`KEPT_POINTS` such points: ``D = c'mean(a_j) - ||sum_j c_j S Phi'(a_j y) / N||_{2,q}^2 /
   (2 lam)`` (the family's ``mean_loss`` dual), maximised over ``c`` on the driver
   (:func:`combined_dual_value`; the iterates' noise averages out of the combination);
3. the step: ``(H_loss / N + H_Omega + rho I) d = -grad P_mu``, the regulariser's gradient and
   Hessian in closed form from :meth:`~kernelfuse.problem.regularizers.BlockLp.norm_derivatives`
   through the block norms, solved by Cholesky on the driver (``D x D``).  With a small ``lam``
   the band's few rows leave ``H`` nearly singular and the full step leaves the band; the
   Levenberg-Marquardt damping ``rho`` (from ``1e-3 max H_ii``) is quartered after a step of
   length at least 1 and quadrupled after one below 1/2;
4. the line pass: ``P_mu`` at :data:`STEPS` (four a factor of 2, from 2 down), the least value
   among those with Armijo's decrease taken (every trial costs only the loss on the margins).

The first step, from the zero model (where ``Omega`` has no Hessian for ``p < 2``), goes to the
minimiser of the loss's linear model plus ``Omega`` (the dual map of the gradient), the best
trial of the line pass.  Continuation: ``mu`` starts at 1; once the smoothed problem's own gap
``P_mu(v) - D_mu(t a)`` (``D_mu = D - (mu / 2) mean(t^2 a^2)``, its dual) is below half of the
target or of the exact gap, ``mu`` becomes ``min(mu / 4, (P - D) / 4)``; so too where the line
search finds no decrease while ``mu`` is above a hundredth of the target.  ``D(t a) >= D_mu(t a)``
and ``P <= P_mu + mu / 2``, so with ``mu`` at the target the exact gap closes.  (Newton's decrement
is no such test: it is measured in the loss's curvature ``1 / mu``, while the certificate's error
grows like ``1 / lam``.)  Measurements: docs/scaling.md.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np
import scipy.linalg

from kernelfuse.distributed.model import block_norms
from kernelfuse.distributed.passes import Run
from kernelfuse.errors import ValidationError
from kernelfuse.kernels.array_backend import array_namespace, clip, to_host
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.registry import Registry
from kernelfuse.problem.duality import mean_loss_dual_value, mean_loss_scaling
from kernelfuse.problem.families import Family
from kernelfuse.problem.regularizers import BlockLp, dual_exponent

#: Trial steps of the line search, all from one pass: 2 down to 2^-29, four a factor of 2.
STEPS = 2.0 ** (-np.arange(-4, 120) / 4)
#: The last dual points the certificate combines.
KEPT_POINTS = 20
#: Armijo's fraction of the predicted decrease.
ARMIJO = 1e-4
#: ``mu`` narrows when ``P_mu``'s own gap is below this fraction of the target or of ``P``'s gap.
SOLVED_FRACTION = 0.5
#: The narrowest smoothing, as a fraction of the target gap ``tol max(1, P)``: a run whose line
#: search fails there is ``stalled``.
MIN_WIDTH = 0.01


@attrs.frozen
class SmoothedHinge(Loss):
    """The hinge's Moreau envelope of width ``mu`` in ``z = y f`` (this module's docstring)."""

    name: ClassVar[str] = "smoothed-hinge"
    target: ClassVar[str] = "binary"
    array_api: ClassVar[bool] = True
    mu: float = attrs.field(default=1.0, converter=float)  # a Python number: any namespace takes it

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        xp, short = array_namespace(f), 1.0 - y * f
        return xp.where(short >= self.mu, short - 0.5 * self.mu, clip(short, 0.0) ** 2 / (2.0 * self.mu))

    def mass(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """``a = -h_mu'(y f) = clip((1 - y f) / mu, 0, 1)``: a dual point of the hinge."""
        return clip((1.0 - y * f) / self.mu, 0.0, 1.0)

    def derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return -y * self.mass(y, f)

    def second_derivative(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        xp, short = array_namespace(f), 1.0 - y * f
        return xp.astype((short > 0.0) & (short < self.mu), xp.float64) / self.mu


def hinge_sums(f: np.ndarray, y: np.ndarray, hinge: Loss, smoothed: SmoothedHinge) -> np.ndarray:
    """``[sum_i hinge(y_i, f_i), sum_i a_i^2]`` over a block's margins (``a`` the smoothed hinge's
    dual point): the objective and the smoothed dual's term, no feature read."""
    xp = array_namespace(f)
    return to_host(xp.stack([xp.sum(hinge.value(y, f)), xp.sum(smoothed.mass(y, f) ** 2)]))


def penalty_derivatives(penalty: BlockLp, v: np.ndarray, offsets: np.ndarray,
                        live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient and Hessian of ``Omega(||v_m||)`` in ``v`` over the columns of the blocks with
    ``||v_m|| > 0`` (``live``, per column): ``g_m v_m / n_m`` and
    ``blockdiag((g_m / n_m)(I - u_m u_m')) + J' H J``, ``u_m = v_m / n_m``, ``J`` the blocks' ``u_m'``,
    ``(g, H)`` the derivatives in the norms."""
    norms = block_norms(v, offsets)
    kernels = np.flatnonzero(norms > 0)
    g, H = penalty.norm_derivatives(norms[kernels])
    widths = np.diff(offsets)[kernels]
    unit = v[live] / np.repeat(norms[kernels], widths)
    ratio = np.repeat(g / norms[kernels], widths)
    J = np.zeros((kernels.size, unit.size))
    J[np.repeat(np.arange(kernels.size), widths), np.arange(unit.size)] = unit
    hessian = J.T @ H @ J
    hessian[np.diag_indices_from(hessian)] += ratio
    start = 0
    for k, width in enumerate(widths):  # minus (g_m / n_m) u_m u_m' on each block
        block = slice(start, start + width)
        hessian[block, block] -= (g[k] / norms[kernels[k]]) * np.outer(unit[block], unit[block])
        start += width
    return ratio * v[live], hessian


def dual_map(penalty: BlockLp, u: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``argmax_v u'v - Omega(v)`` for ``Omega = (lam / 2) ||v||_{2,p}^2``:
    ``v_m = ||n||_q^(2-q) n_m^(q-2) u_m / lam`` (``n`` the block norms of ``u``, ``q = p / (p - 1)``)."""
    q = dual_exponent(penalty.p)
    norms = block_norms(u, offsets)
    total = float(np.sum(norms**q)) ** (1.0 / q)
    if total == 0.0:
        return np.zeros_like(u)
    factor = np.divide(total ** (2.0 - q) * norms ** (q - 2.0), penalty.weight, out=np.zeros_like(norms),
                       where=norms > 0)
    return u * np.repeat(factor, np.diff(offsets))


def combined_dual_value(penalty: BlockLp, offsets: np.ndarray, masses: np.ndarray, gradients: np.ndarray) -> float:
    """``max D(sum_j c_j a_j)`` over ``c >= 0``, ``sum_j c_j <= 1``, for dual points ``a_j`` of the
    hinge given by their means ``masses`` and ``S Phi'(a_j y) / N`` (``gradients``, one row each):
    ``D = c'masses - Omega*(c'gradients)``, concave in ``c``; every such combination lies in
    ``[0, 1]^N``, so any ``c`` certifies, and SLSQP's last point is taken as it is."""
    from scipy.optimize import minimize  # imported on use: scipy.optimize costs 0.1 s

    def negative(c: np.ndarray) -> tuple[float, np.ndarray]:
        u = c @ gradients
        value = float(c @ masses) - penalty.conjugate(block_norms(u, offsets))
        return -value, -(masses - gradients @ dual_map(penalty, u, offsets))

    start = np.zeros(masses.size)
    start[-1] = mean_loss_scaling(penalty.weight, float(masses[-1]), 1.0,
                                  penalty.dual_norm(block_norms(gradients[-1], offsets)))
    found = minimize(negative, start, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * masses.size,
                     constraints=[{"type": "ineq", "fun": lambda c: 1.0 - c.sum(), "jac": lambda c: -np.ones_like(c)}],
                     options={"maxiter": 50})
    c = np.clip(found.x, 0.0, None)
    c /= max(1.0, float(c.sum()))
    return max(-negative(c)[0], -negative(start)[0])


@attrs.define(eq=False)
class SmoothedHingeNewton(Run):
    """Newton on the smoothed hinge for binary ``pnorm_mkl`` (this module's docstring); ``mu``: the
    smoothing's width."""

    name: ClassVar[str] = "smoothed-hinge-newton"
    penalty_type: ClassVar[type] = BlockLp
    mu: float = 1.0
    #: The Levenberg-Marquardt damping ``rho`` (None: set at the first Newton step).
    damping: float | None = None

    @classmethod
    def solves(cls, family: Family) -> bool:
        """Families of the ``mean_loss`` dual (``pnorm_mkl``), binary: the hinge."""
        return family.dual == "mean_loss" and family.regularizer is not None

    @classmethod
    def resolve_loss(cls, family: Family, loss: str | Loss | None, registry: Registry) -> Loss:
        """The hinge: None or ``"hinge"`` (the family's binary loss)."""
        name = loss if isinstance(loss, (str, type(None))) else loss.name
        if name not in (None, "hinge"):
            raise ValidationError(f"loss {name!r}: the distributed {family.name} solve takes the binary hinge "
                                  "loss (the family's), not another")
        hinge = registry.create("loss", "hinge")
        assert hinge is not None
        return hinge

    def narrow(self, objective: float) -> None:
        """A narrower smoothing: ``mu`` quartered, or a quarter of the certified gap where smaller."""
        self.mu = min(self.mu / 4.0, 0.25 * (objective - self.lower))

    def iterate(self) -> tuple[str, str]:
        data, penalty = self.data, self.penalty
        assert isinstance(penalty, BlockLp)
        offsets, scales, N = data.offsets, data.scales, data.n_samples
        v = np.zeros(data.n_features)
        masses, gradients = np.zeros(0), np.zeros((0, data.n_features))
        workers = self.oracle.workers()
        while True:
            workers = self.oracle.spread_over_new_workers(workers)
            smoothed = SmoothedHinge(self.mu)
            margins, sums = self.oracle.gradient_pass(smoothed, v, 0.0)
            D = data.n_features
            up_sum, down_sum = sums[1], sums[2]
            loss_gradient = scales * (sums[3:3 + D] + sums[3 + D:3 + 2 * D]) / N  # S Phi' rho / N
            regulariser = penalty.value(block_norms(v, offsets))
            hinge_sum, mass_squares = self.oracle.margin_sums(hinge_sums, margins, self.loss, smoothed)
            objective = hinge_sum / N + regulariser
            mass = (up_sum - down_sum) / N  # mean(a)
            dual_norm = penalty.dual_norm(block_norms(loss_gradient, offsets))  # ||S Phi'(a y) / N||_{2,q}
            t = mean_loss_scaling(penalty.weight, mass, 1.0, dual_norm)
            smoothed_lower = (mean_loss_dual_value(penalty.weight, mass, 1.0, dual_norm)
                              - 0.5 * self.mu * t * t * mass_squares / N)  # D_mu(t a) <= min P_mu
            masses = np.append(masses, mass)[-KEPT_POINTS:]
            gradients = np.vstack([gradients, loss_gradient])[-KEPT_POINTS:]
            lower = combined_dual_value(penalty, offsets, masses, gradients)
            target = self.tol * max(1.0, abs(objective))
            if self.observe(objective, v, 0.0, lower):
                return "converged", ""
            if self.steps >= self.max_iter:
                return "max_iter", ""
            smoothed_value = sums[0] / N + regulariser
            live = np.repeat(block_norms(v, offsets) > 0, np.diff(offsets))
            if not live.any():  # the zero model: to the minimiser of the linear model plus Omega
                d = dual_map(penalty, -loss_gradient, offsets)
                trials = self.line_objectives(smoothed, margins, v, d, 0.0, STEPS, 1.0 / N)
                best = int(np.argmin(trials))
                if not trials[best] < smoothed_value:
                    return "stalled", "no step from the zero model decreases the smoothed objective"
                v = STEPS[best] * d
                self.steps += 1
                continue
            gradient, hessian = penalty_derivatives(penalty, v, offsets, live)
            gradient = gradient + loss_gradient[live]
            curvature = sums[3 + 2 * D:].reshape(D + 1, D + 1)[:D, :D][np.ix_(live, live)]
            hessian += curvature * np.outer(scales[live], scales[live]) / N
            if self.damping is None:
                self.damping = 1e-3 * float(np.max(np.diag(hessian)))
            hessian[np.diag_indices_from(hessian)] += self.damping + 1e-12 * float(np.max(np.diag(hessian)))
            try:
                step = -scipy.linalg.cho_solve(scipy.linalg.cho_factor(hessian), gradient)
            except np.linalg.LinAlgError:
                step = -gradient
            slope = float(gradient @ step)
            if not slope < 0:
                step, slope = -gradient, -float(gradient @ gradient)
            d = np.zeros_like(v)
            d[live] = step
            self.steps += 1
            # P_mu solved, or its own gap a small part of P's: a narrower smoothing
            if smoothed_value - smoothed_lower <= SOLVED_FRACTION * max(target, objective - self.lower):
                self.narrow(objective)
                continue
            trials = self.line_objectives(smoothed, margins, v, d, 0.0, STEPS, 1.0 / N)
            accepted = np.flatnonzero(trials <= smoothed_value + ARMIJO * STEPS * slope)
            if accepted.size:
                best = STEPS[accepted[np.argmin(trials[accepted])]]
                v = v + best * d
                self.damping *= 0.25 if best >= 1.0 else 4.0 if best < 0.5 else 1.0
            elif self.mu > MIN_WIDTH * target:  # P_mu solved as far as rounding lets Newton: narrower
                self.narrow(objective)
            else:
                return "stalled", (f"the line search found no decrease of the smoothed objective (width "
                                   f"{self.mu:.3g}) after {self.steps} iterations, before the gap reached "
                                   f"tol={self.tol:g}")
