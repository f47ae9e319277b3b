"""Proximal Newton over row blocks on a Dask cluster: one ``l1_mkl`` solve, certified by map-reduce.

The problem (OBJECTIVES.md family 1, or any family of penalty ``sum_m h(||f_m||)`` with an
intercept and a ``loss_conjugate`` dual) on low-rank kernels ``K_m = Phi_m S_m^2 Phi_m'`` is, in
the features' weights ``v_m`` (``f_m = Phi_m S_m v_m``, ``||f_m|| <= ||v_m||``, equal on the
features' row space),

    ``P(v, b) = sum_i loss(y_i, f_i) + sum_m h(||v_m||)``,  ``f = sum_m Phi_m S_m v_m + b``,

a group lasso (elastic net) in ``D = sum_m r_m`` weights.  Each iteration (Lee, Sun & Saunders
2014, proximal Newton):

1. one pass at ``(v, b)``: the margins, kept on the workers; ``sum loss``; the gradient
   ``Phi' rho`` with ``rho = loss'(f)``, split by the sign of ``rho``; and the curvature
   ``[Phi 1]' diag(loss''(f)) [Phi 1]`` on every ``k``-th row (``hessian_rows`` rows in all);
2. the certificate from the same numbers: the dual point ``rho' = a rho+ + c rho-``, one side
   scaled down so that ``sum rho' = 0`` (inside the conjugate's domain, an interval holding 0),
   ``||rho'||_{K_m} = ||S_m (a Phi_m' rho+ + c Phi_m' rho-)||``, and
   :func:`~kernelfuse.problem.duality.best_scaled_dual_value` with ``sum_i loss*(t rho'_i)`` summed
   on the workers (no feature read);
3. the step: the quadratic model with the intercept eliminated, minimised with the penalty by
   accelerated proximal gradient on the driver (``D x D``, the regulariser's radial prox);
4. one pass along the step: ``sum loss(f + t Phi d)`` at ``t = 1, 1/2, ..., 2^-11``, and the
   largest ``t`` with Armijo's decrease of ``P``.

Two passes over the blocks an iteration.  The margins are recomputed from the blocks at each
iteration, never updated in place, so a block lost with its worker costs its own recomputation
only.  ``converged`` means the certified relative gap is at most ``tol``, as everywhere.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import attrs
import numpy as np

from kernelfuse.distributed import blocks
from kernelfuse.distributed.model import block_norms
from kernelfuse.distributed.passes import Run
from kernelfuse.errors import ValidationError
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.registry import Registry
from kernelfuse.parts.regularizer import SeparablePenalty
from kernelfuse.problem.duality import best_scaled_dual_value
from kernelfuse.problem.families import Family

if TYPE_CHECKING:
    from distributed import Future

#: Trial steps of the line search, all from one pass.
STEPS = 0.5 ** np.arange(12)
#: Armijo's fraction of the predicted decrease.
ARMIJO = 1e-4


def block_prox(penalty: SeparablePenalty, v: np.ndarray, offsets: np.ndarray, step: float) -> np.ndarray:
    """``argmin_z step sum_m h(||z_m||) + ||z - v||^2 / 2``: each block scaled by its radial prox."""
    norms = block_norms(v, offsets)
    shrunk, _ = penalty.radial_prox(norms, step)
    factor = np.divide(shrunk, norms, out=np.zeros_like(norms), where=norms > 0)
    return v * np.repeat(factor, np.diff(offsets))


def _largest_eigenvalue(Q: np.ndarray, iterations: int = 100) -> float:
    """``lambda_max(Q)`` of a PSD matrix by power iteration, from above (times 1.01)."""
    x = np.ones(Q.shape[0]) / math.sqrt(Q.shape[0])
    value = 0.0
    for _ in range(iterations):
        y = Q @ x
        new = float(np.linalg.norm(y))
        if new == 0.0:
            return 0.0
        x = y / new
        if abs(new - value) <= 1e-6 * new:
            break
        value = new
    return 1.01 * new


def newton_step(penalty: SeparablePenalty, offsets: np.ndarray, v: np.ndarray, gradient: np.ndarray,
                Q: np.ndarray, iterations: int) -> np.ndarray:
    """``argmin_z gradient'(z - v) + (z - v)' Q (z - v) / 2 + sum_m h(||z_m||)`` by accelerated
    proximal gradient with gradient restarts (at most ``iterations`` steps): the proximal Newton
    point of the model ``Q``."""
    L = _largest_eigenvalue(Q)
    if L == 0.0:
        return block_prox(penalty, v - gradient, offsets, 1.0)
    step = 1.0 / L
    z = previous = v.copy()
    momentum = 1.0
    for _ in range(iterations):
        next_momentum = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * momentum**2))
        w = z + ((momentum - 1.0) / next_momentum) * (z - previous)
        new = block_prox(penalty, w - step * (gradient + Q @ (w - v)), offsets, step)
        if float(np.dot(w - new, new - z)) > 0.0:  # momentum against the step: restart
            next_momentum = 1.0
        previous, z, momentum = z, new, next_momentum
        if np.linalg.norm(z - previous) <= 1e-10 * max(1.0, float(np.linalg.norm(z))):
            break
    return z


@attrs.define(eq=False)
class ProximalNewton(Run):
    """Proximal Newton on partitioned features (the steps of this module's docstring):
    ``l1_mkl`` and any family of penalty ``sum_m h(||f_m||)`` with an intercept and a
    ``loss_conjugate`` dual, with a smooth loss; ``inner_iter``: accelerated proximal gradient
    steps of a Newton step, on the driver."""

    name: ClassVar[str] = "proximal-newton"
    inner_iter: int = 500

    penalty_type: ClassVar[type] = SeparablePenalty

    @classmethod
    def solves(cls, family: Family) -> bool:
        """Families of a ``loss_conjugate`` dual with an intercept (``l1_mkl``)."""
        return family.dual == "loss_conjugate" and family.has_intercept and family.regularizer is not None

    @classmethod
    def resolve_loss(cls, family: Family, loss: str | Loss | None, registry: Registry) -> Loss:
        """The smooth ``loss`` (a name or a loss), checked to have what the method reads."""
        name = loss if isinstance(loss, (str, type(None))) else loss.name
        if name is None:
            raise ValidationError("loss: name the loss of the distributed solve (logistic, squared-hinge or "
                                  f"squared: smooth losses); family {family.name}'s default {family.default_loss!r} "
                                  "is not smooth")
        obj = registry.create("loss", name) if isinstance(loss, str) else loss
        assert obj is not None
        missing = [m for m in ("derivative", "second_derivative", "conjugate") if not callable(getattr(obj, m, None))]
        if missing:
            raise ValidationError(f"loss {obj.name!r}: the distributed proximal Newton solver needs a smooth loss "
                                  f"with {', '.join(missing)} (logistic, squared-hinge, squared)")
        if family.losses is not None and obj.name not in family.losses:
            raise ValidationError(f"family {family.name} is defined with loss {' or '.join(family.losses)}, "
                                  f"not {obj.name!r}")
        return obj

    def iterate(self) -> tuple[str, str]:
        data = self.data
        offsets, scales, D = data.offsets, data.scales, data.n_features
        v, b = np.zeros(D), 0.0
        assert isinstance(self.penalty, SeparablePenalty)
        workers = self.oracle.workers()
        while True:
            workers = self.oracle.spread_over_new_workers(workers)
            margins, sums = self.oracle.gradient_pass(self.loss, v, b)
            total, up_sum, down_sum = sums[0], sums[1], sums[2]
            up, down, curvature = sums[3:3 + D], sums[3 + D:3 + 2 * D], sums[3 + 2 * D:]
            objective = total + self.penalty.value(block_norms(v, offsets))
            if self.observe(objective, v, b, self.certificate(margins, up, down, up_sum, down_sum)):
                return "converged", ""
            if self.steps >= self.max_iter:
                return "max_iter", ""
            gradient = scales * (up + down)
            intercept_gradient = up_sum + down_sum
            d, db, predicted = self.direction(v, gradient, intercept_gradient, curvature, scales, D)
            if not predicted < 0:
                return "stalled", ("the Newton model predicts no further decrease before the gap reached "
                                   f"tol={self.tol:g}")
            trial = self.line_objectives(self.loss, margins, v, d, db, STEPS)
            accepted = np.flatnonzero(trial <= objective + ARMIJO * STEPS * predicted)
            if accepted.size == 0:
                return "stalled", (f"the line search found no decrease after {self.steps} iterations, "
                                   f"before the gap reached tol={self.tol:g}")
            t = STEPS[accepted[0]]
            v, b = v + t * d, b + t * db
            self.steps += 1

    def certificate(self, margins: list[Future], up: np.ndarray, down: np.ndarray, up_sum: float,
                    down_sum: float) -> float:
        """The lower bound at ``rho' = a rho+ + c rho-`` with ``sum rho' = 0``."""
        a = c = 1.0
        if up_sum > -down_sum:
            a = -down_sum / up_sum
        elif -down_sum > up_sum:
            c = up_sum / -down_sum
        norms = block_norms(self.data.scales * (a * up + c * down), self.data.offsets)

        def conjugate_sums(ts: np.ndarray) -> np.ndarray:
            return np.asarray(self.oracle.margin_sums(blocks.conjugate_sums, margins, self.loss, a, c, ts))

        return best_scaled_dual_value(self.penalty, conjugate_sums, norms)

    def direction(self, v: np.ndarray, gradient: np.ndarray, intercept_gradient: float, curvature: np.ndarray,
                  scales: np.ndarray, D: int) -> tuple[np.ndarray, float, float]:
        """The proximal Newton step ``(d, db)`` and its predicted decrease
        ``gradient'd + g_b db + Omega(v + d) - Omega(v)`` (negative where it descends)."""
        H = curvature.reshape(D + 1, D + 1)
        s = np.append(scales, 1.0)
        H = H * s[:, None] * s[None, :]
        Hvv, Hvb, Hbb = H[:D, :D], H[:D, D], float(H[D, D])
        if Hbb > 0:  # the intercept eliminated: db = -(g_b + Hbv d) / Hbb
            Q = Hvv - np.outer(Hvb, Hvb) / Hbb
            q = gradient - Hvb * (intercept_gradient / Hbb)
        else:
            Q, q = Hvv, gradient
        Q = (Q + Q.T) / 2
        assert isinstance(self.penalty, SeparablePenalty)
        z = newton_step(self.penalty, self.data.offsets, v, q, Q, self.inner_iter)
        d = z - v
        db = -(intercept_gradient + float(Hvb @ d)) / Hbb if Hbb > 0 else -intercept_gradient
        offsets = self.data.offsets
        predicted = (float(gradient @ d) + intercept_gradient * db
                     + self.penalty.value(block_norms(z, offsets)) - self.penalty.value(block_norms(v, offsets)))
        return d, db, predicted
