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
import operator
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from kernelfuse.assembly.result import History, Iteration, relative_gap
from kernelfuse.distributed import blocks
from kernelfuse.distributed.features import PartitionedFeatures
from kernelfuse.errors import ValidationError
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.registry import Registry, resolve_registry
from kernelfuse.parts.regularizer import SeparablePenalty
from kernelfuse.problem.duality import best_scaled_dual_value
from kernelfuse.problem.families import Family, get_family
from kernelfuse.validation import count, positive, positive_count, seconds

if TYPE_CHECKING:
    from distributed import Client, Future

#: Trial steps of the line search, all from one pass.
STEPS = 0.5 ** np.arange(12)
#: Armijo's fraction of the predicted decrease.
ARMIJO = 1e-4


@attrs.frozen(eq=False)
class FeatureModel:
    """A model on low-rank kernel features: ``f(x) = [s_m phi_m(x)]_m . v + b``, and how it was found.

    ``weights``: ``v`` (``D``), kernel ``m``'s in ``offsets[m]:offsets[m + 1]``; ``specs``,
    ``scales``, ``normalization``: the map of new rows to features.  ``objective`` is ``P`` at the
    model (OBJECTIVES.md units, with ``||f_m||`` bounded by ``||v_m||``), ``dual_objective`` a
    certified lower bound on the optimum, ``gap`` their relative difference; ``passes`` the reads
    of every feature block.
    """

    weights: np.ndarray
    intercept: float
    offsets: np.ndarray
    specs: tuple[Any, ...]
    scales: np.ndarray
    normalization: str
    objective: float
    dual_objective: float
    gap: float
    status: str
    message: str
    n_iter: int
    passes: int
    time: float
    family: str
    loss: str
    history: tuple[Iteration, ...] = ()

    @property
    def kernel_norms(self) -> np.ndarray:
        """``||v_m||`` for every kernel."""
        return block_norms(self.weights, self.offsets)

    @property
    def kernel_weights(self) -> np.ndarray:
        """Each kernel's share ``||v_m|| / sum_k ||v_k||`` (zeros for the zero model)."""
        norms = self.kernel_norms
        return norms / norms.sum() if norms.sum() > 0 else norms

    def decision_function(self, X: Any) -> Any:
        """``f(x)`` for the rows of ``X``: a NumPy array, or for a ``dask.array`` a lazy one of the
        same row blocks (``map_blocks``)."""
        if hasattr(X, "map_blocks"):
            from kernelfuse.distributed.features import as_row_blocks

            X = as_row_blocks(X, "X")
            return X.map_blocks(_decision_block, self, drop_axis=1, dtype=np.float64)
        return _decision_block(np.asarray(X, dtype=np.float64), self)


def _decision_block(X: np.ndarray, model: FeatureModel) -> np.ndarray:
    phi = blocks.block_features(X, model.specs, model.normalization, model.offsets)
    return phi @ (model.scales * model.weights) + model.intercept


def block_norms(v: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``||v_m||`` for the blocks ``offsets[m]:offsets[m + 1]``."""
    return np.sqrt(np.add.reduceat(v * v, offsets[:-1])) if v.size else np.zeros(0)


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


def _tree_sum(client: Client, parts: list[Future]) -> Future:
    """The sum of the futures' arrays, added pairwise on the workers."""
    while len(parts) > 1:
        parts = [client.submit(np.add, parts[k], parts[k + 1]) if k + 1 < len(parts) else parts[k]
                 for k in range(0, len(parts), 2)]
    return parts[0]


@attrs.define
class _Pass:
    """Waits on a pass's futures within the solve's time limit; workers that died running a task
    (Dask's ``KilledWorker``) are an error naming the block size."""

    deadline: float
    data: PartitionedFeatures

    def result(self, future: Future) -> Any:
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            raise _TimeUp
        try:
            return future.result(timeout=None if math.isinf(remaining) else remaining)
        except TimeoutError:
            raise _TimeUp from None
        except Exception as exc:
            if type(exc).__name__ == "KilledWorker":
                raise self.data.lost_worker_error(exc) from None
            raise


class _TimeUp(Exception):
    """The time limit passed while waiting on the cluster."""


def _resolve_loss(family: Family, loss: str | Loss | None, registry: Registry) -> Loss:
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


def _check_targets(data: PartitionedFeatures, loss: Loss, wait: _Pass) -> None:
    """Targets finite, and in {-1, +1} for a binary loss: each block's distinct values, united here."""
    client = data.client
    values = np.unique(np.concatenate([wait.result(f) for f in client.map(np.unique, list(data.targets))]))
    if not np.isfinite(values).all():
        raise ValidationError("y contains NaN or inf")
    if loss.target == "binary" and not np.isin(values, (-1.0, 1.0)).all():
        raise ValidationError(f"y: loss {loss.name!r} needs labels in {{-1, +1}}, got values {values[:5]}")


@attrs.define
class DistributedNewton:
    """Proximal Newton on partitioned features to a certified relative gap ``tol``.

    ``hessian_rows``: rows of the curvature estimate (every ``ceil(N / hessian_rows)``-th row);
    ``inner_iter``: accelerated proximal gradient steps of a Newton step, on the driver.
    """

    tol: float = positive.field(1e-3)
    max_iter: int = count.field(100)
    time_limit: float = seconds.field(math.inf)
    hessian_rows: int = positive_count.field(20_000)
    inner_iter: int = positive_count.field(500)

    def solve(self, data: PartitionedFeatures, family: str | Family = "l1_mkl", *, loss: str | Loss | None = None,
              registry: Registry | None = None, callback: Callable[[Iteration], object] | None = None,
              **params: Any) -> FeatureModel:
        """Minimise ``family`` (an intercept, a separable penalty, a ``loss_conjugate`` dual) on the
        partitioned features with the smooth ``loss``; ``params``: the family's (``C``, ``C2``)."""
        registry = resolve_registry(registry)
        fam = get_family(family, registry)
        if fam.dual != "loss_conjugate" or not fam.has_intercept or fam.regularizer is None:
            raise ValidationError(f"family {fam.name}: the distributed solver minimises families of "
                                  "penalty sum_m h(||f_m||) with an intercept (l1_mkl, or a plugin's such family)")
        penalty = fam.regularizer(fam.resolve_params(params), None)
        if not isinstance(penalty, SeparablePenalty):
            raise ValidationError(f"family {fam.name}: its penalty {penalty.name} is not separable in the kernel norms")
        run = _Solve(self, data, fam, _resolve_loss(fam, loss, registry), penalty, History(callback),
                     _Pass(time.perf_counter() + self.time_limit, data))
        return run.run()


@attrs.define(eq=False)
class _Solve:
    """One run of :class:`DistributedNewton`: the model, the best one, the passes counted."""

    solver: DistributedNewton
    data: PartitionedFeatures
    family: Family
    loss: Loss
    penalty: SeparablePenalty
    history: History
    wait: _Pass
    passes: int = 0
    best: tuple[float, np.ndarray, float] | None = None
    lower: float = -math.inf

    def submit_each(self, function: Callable[..., Any], *args: Any,
                    margins: list[Future] | None = None) -> list[Future]:
        """``function(F, y, *args)`` on every block (``function(f, F, y, *args)`` with its margins)."""
        client, data = self.data.client, self.data
        if margins is None:
            return [client.submit(function, F, y, *args, pure=False) for F, y in zip(data.blocks, data.targets)]
        return [client.submit(function, f, F, y, *args, pure=False)
                for f, F, y in zip(margins, data.blocks, data.targets)]

    def run(self) -> FeatureModel:
        data, solver = self.data, self.solver
        offsets, scales, D = data.offsets, data.scales, data.n_features
        v, b = np.zeros(D), 0.0
        stride = max(1, math.ceil(data.n_samples / solver.hessian_rows))
        status, message, steps = "max_iter", "", 0
        try:
            _check_targets(data, self.loss, self.wait)
            workers = self.workers()
            while True:
                workers = self.spread_over_new_workers(workers)
                margins, sums = self.gradient_pass(v, b, stride)
                total, up_sum, down_sum = sums[0], sums[1], sums[2]
                up, down, curvature = sums[3:3 + D], sums[3 + D:3 + 2 * D], sums[3 + 2 * D:]
                objective = total + self.penalty.value(block_norms(v, offsets))
                if self.best is None or objective < self.best[0]:
                    self.best = (objective, v.copy(), b)
                self.lower = max(self.lower, self.certificate(margins, up, down, up_sum, down_sum))
                self.record(steps)
                if relative_gap(self.best[0], self.lower) <= solver.tol:
                    status = "converged"
                    break
                if steps >= solver.max_iter:
                    break
                gradient = scales * (up + down)
                intercept_gradient = up_sum + down_sum
                d, db, predicted = self.direction(v, gradient, intercept_gradient, curvature, scales, D)
                if not predicted < 0:
                    status, message = "stalled", ("the Newton model predicts no further decrease "
                                                   f"before the gap reached tol={solver.tol:g}")
                    break
                values = self.wait.result(_tree_sum(data.client, self.submit_each(
                    blocks.line_values, self.loss, scales * d, db, STEPS, margins=margins)))
                self.passes += 1
                trial = values + np.array([self.penalty.value(block_norms(v + t * d, offsets)) for t in STEPS])
                accepted = np.flatnonzero(trial <= objective + ARMIJO * STEPS * predicted)
                if accepted.size == 0:
                    status, message = "stalled", (f"the line search found no decrease after {steps} "
                                                  f"iterations, before the gap reached tol={solver.tol:g}")
                    break
                t = STEPS[accepted[0]]
                v, b = v + t * d, b + t * db
                steps += 1
        except _TimeUp:
            status = "time_limit"
        except KeyboardInterrupt:
            status = "interrupted"
        if self.best is None:
            raise ValidationError("the distributed solve ended before its first pass (time_limit too short?)")
        objective, weights, intercept = self.best
        gap = relative_gap(objective, self.lower)
        if status != "converged" and not message:
            message = f"stopped by {status} before tol={solver.tol:g}" if status != "interrupted" else \
                f"interrupted after {steps} iterations; returning the best model so far"
        return FeatureModel(weights, intercept, offsets, data.specs, scales, data.normalization, objective,
                            self.lower, gap, status, message, steps, self.passes, self.history.elapsed(),
                            self.family.name, self.loss.name, tuple(self.history.rows))

    def workers(self) -> set[str]:
        return set(self.data.client.scheduler_info()["workers"])

    def spread_over_new_workers(self, known: set[str]) -> set[str]:
        """Where a worker joined since ``known`` (one restarted after a loss, say), the blocks are
        spread over all of them (Dask's ``rebalance``): the lost blocks were recomputed on the
        others, which would otherwise run every later pass alone."""
        now = self.workers()
        if now - known:
            self.data.client.rebalance(list(self.data.blocks) + list(self.data.targets))
        return now

    def gradient_pass(self, v: np.ndarray, b: float, stride: int) -> tuple[list[Future], np.ndarray]:
        client = self.data.client
        outputs = self.submit_each(blocks.margins_and_gradient, self.loss, self.data.scales * v, b, stride)
        margins = [client.submit(operator.getitem, out, 0) for out in outputs]
        sums = self.wait.result(_tree_sum(client, [client.submit(operator.getitem, out, 1) for out in outputs]))
        self.passes += 1
        return margins, sums

    def certificate(self, margins: list[Future], up: np.ndarray, down: np.ndarray, up_sum: float,
                    down_sum: float) -> float:
        """The lower bound at ``rho' = a rho+ + c rho-`` with ``sum rho' = 0``."""
        a = c = 1.0
        if up_sum > -down_sum:
            a = -down_sum / up_sum
        elif -down_sum > up_sum:
            c = up_sum / -down_sum
        norms = block_norms(self.data.scales * (a * up + c * down), self.data.offsets)
        client = self.data.client

        def conjugate_sums(ts: np.ndarray) -> np.ndarray:
            parts = [client.submit(blocks.conjugate_sums, f, y, self.loss, a, c, ts, pure=False)
                     for f, y in zip(margins, self.data.targets)]
            return np.asarray(self.wait.result(_tree_sum(client, parts)))

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
        z = newton_step(self.penalty, self.data.offsets, v, q, Q, self.solver.inner_iter)
        d = z - v
        db = -(intercept_gradient + float(Hvb @ d)) / Hbb if Hbb > 0 else -intercept_gradient
        offsets = self.data.offsets
        predicted = (float(gradient @ d) + intercept_gradient * db
                     + self.penalty.value(block_norms(z, offsets)) - self.penalty.value(block_norms(v, offsets)))
        return d, db, predicted

    def record(self, steps: int) -> None:
        assert self.best is not None
        self.history.record(self.best[0], self.lower, passes=float(self.passes),
                            active_kernels=float(np.count_nonzero(block_norms(self.best[1], self.data.offsets))))
