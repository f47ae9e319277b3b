"""The oracle over partitioned features, and the method that steps over it to a certified model.

A solve over :class:`~kernelfuse.distributed.features.PartitionedFeatures` reads the feature
blocks only through a :class:`PartitionedOracle`: the gradient pass (margins, kept on the workers,
the loss's sum and gradient, a row sample's curvature:
:func:`~kernelfuse.distributed.blocks.margins_and_gradient`) and the line search's pass
(:func:`~kernelfuse.distributed.blocks.line_values`); sums over the margins alone (a certificate's)
read no feature.  Partial sums are added pairwise on the workers (:func:`tree_sum`).  A method,
registered as kind ``distributed``, subclasses :class:`Run`: its :meth:`Run.iterate` steps with
the oracle's passes, and :meth:`Run.run` turns the iterations into a
:class:`~kernelfuse.distributed.model.FeatureModel` whose status says what stopped it:
``converged`` (the certified relative gap at most ``tol``), ``max_iter``, ``stalled``,
``time_limit`` (also reached while waiting on the cluster) or ``interrupted``.
"""

from __future__ import annotations

import math
import operator
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.result import History, relative_gap
from kernelfuse.distributed import blocks
from kernelfuse.distributed.features import PartitionedFeatures
from kernelfuse.distributed.model import FeatureModel, block_norms
from kernelfuse.errors import ValidationError
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.registry import Registry
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.problem.families import Family

if TYPE_CHECKING:
    from distributed import Client, Future


def tree_sum(client: Client, parts: list[Future]) -> Future:
    """The sum of the futures' arrays, added pairwise on the workers."""
    while len(parts) > 1:
        parts = [client.submit(np.add, parts[k], parts[k + 1]) if k + 1 < len(parts) else parts[k]
                 for k in range(0, len(parts), 2)]
    return parts[0]


class TimeUp(Exception):
    """The time limit passed while waiting on the cluster."""


@attrs.define
class Waiter:
    """Waits on a pass's futures within the solve's time limit; workers that died running a task
    (Dask's ``KilledWorker``) are an error naming the block size."""

    deadline: float
    data: PartitionedFeatures

    def result(self, future: Future) -> Any:
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeUp
        try:
            return future.result(timeout=None if math.isinf(remaining) else remaining)
        except TimeoutError:
            raise TimeUp from None
        except Exception as exc:
            if type(exc).__name__ == "KilledWorker":
                raise self.data.lost_worker_error(exc) from None
            raise


@attrs.define(eq=False)
class PartitionedOracle:
    """The passes over the feature blocks of ``data``, each waited on within the solve's time
    limit (``wait``), counted in ``passes``; ``hessian_rows``: rows of the curvature sample
    (:meth:`gradient_pass`)."""

    data: PartitionedFeatures
    wait: Waiter
    hessian_rows: int = 20_000
    passes: int = 0
    #: Rows of positive ``loss''`` at the last gradient pass (None before the first).
    curved: int | None = None

    def check_targets(self, loss: Loss) -> None:
        """Targets finite, and in {-1, +1} for a binary loss: each block's distinct values, united
        here; a loss that computes on NumPy arrays only is refused for blocks on a device."""
        if self.data.to_device is not None and not loss.array_api:
            raise ValidationError(f"loss {loss.name!r} computes on NumPy arrays only (its array_api is False); "
                                  "blocks on a device need a loss that computes in their namespace: a built-in "
                                  "loss, or partition the features without to_device")
        client = self.data.client
        values = np.unique(np.concatenate([self.wait.result(f)
                                           for f in client.map(blocks.distinct_values, list(self.data.targets))]))
        if not np.isfinite(values).all():
            raise ValidationError("y contains NaN or inf")
        if loss.target == "binary" and not np.isin(values, (-1.0, 1.0)).all():
            raise ValidationError(f"y: loss {loss.name!r} needs labels in {{-1, +1}}, got values {values[:5]}")

    def submit_each(self, function: Callable[..., Any], *args: Any,
                    margins: list[Future] | None = None) -> list[Future]:
        """``function(F, y, *args)`` on every block (``function(f, F, y, *args)`` with its margins)."""
        client, data = self.data.client, self.data
        if margins is None:
            return [client.submit(function, F, y, *args, pure=False) for F, y in zip(data.blocks, data.targets)]
        return [client.submit(function, f, F, y, *args, pure=False)
                for f, F, y in zip(margins, data.blocks, data.targets)]

    def margin_sums(self, function: Callable[..., Any], margins: list[Future], *args: Any) -> Any:
        """``sum_k function(f_k, y_k, *args)`` over the blocks' margins: no feature read."""
        client = self.data.client
        parts = [client.submit(function, f, y, *args, pure=False) for f, y in zip(margins, self.data.targets)]
        return self.wait.result(tree_sum(client, parts))

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

    def gradient_pass(self, loss: Loss, v: np.ndarray, b: float) -> tuple[list[Future], np.ndarray]:
        """One pass at ``(v, b)`` (``v`` in the features' units, before the scales): the margins'
        futures, and the summed :func:`~kernelfuse.distributed.blocks.margins_and_gradient` without
        its count of curved rows.  The curvature is sampled on every ``k``-th row, ``k`` such that
        about ``hessian_rows`` of the rows of positive ``loss''`` at the last pass are read (all
        rows at the first): the smoothed hinge's narrow band is read whole, not a sample of it."""
        client = self.data.client
        stride = max(1, math.ceil((self.data.n_samples if self.curved is None else self.curved) / self.hessian_rows))
        outputs = self.submit_each(blocks.margins_and_gradient, loss, self.data.scales * v, b, stride)
        margins = [client.submit(operator.getitem, out, 0) for out in outputs]
        sums = self.wait.result(tree_sum(client, [client.submit(operator.getitem, out, 1) for out in outputs]))
        self.passes += 1
        self.curved = int(sums[-1])
        return margins, sums[:-1]

    def line_pass(self, loss: Loss, margins: list[Future], d: np.ndarray, db: float,
                  steps: np.ndarray) -> np.ndarray:
        """One pass along ``(d, db)``: ``sum_i loss(f_i + t (Phi d + db)_i)`` for each step ``t``."""
        values = self.wait.result(tree_sum(self.data.client, self.submit_each(
            blocks.line_values, loss, self.data.scales * d, db, steps, margins=margins)))
        self.passes += 1
        return np.asarray(values)


@attrs.define(eq=False)
class Run:
    """A method over partitioned features (registered as kind ``distributed``) and one run of it:
    the best model so far (by the objective reported), the best lower bound, the iterations
    taken.  A subclass's :meth:`iterate` steps with the ``oracle``'s passes until it returns its
    status and message; :meth:`solves` says which families it takes, :attr:`penalty_type` the
    regulariser it reads, :meth:`resolve_loss` the loss (a name, a loss, or None for the family's)."""

    #: The registered name.
    name: ClassVar[str]
    #: The regulariser class the method reads (its prox, or its derivatives).
    penalty_type: ClassVar[type]

    oracle: PartitionedOracle
    family: Family
    loss: Loss
    penalty: Regularizer
    history: History
    tol: float
    max_iter: int
    steps: int = 0
    best: tuple[float, np.ndarray, float] | None = None
    lower: float = -math.inf

    @property
    def data(self) -> PartitionedFeatures:
        return self.oracle.data

    @classmethod
    @abstractmethod
    def solves(cls, family: Family) -> bool:
        """Whether the method solves ``family`` (by its dual, intercept, ...)."""

    @classmethod
    @abstractmethod
    def resolve_loss(cls, family: Family, loss: str | Loss | None, registry: Registry) -> Loss:
        """The loss of the solve, from a name, a loss or None; a :class:`ValidationError` naming
        ``loss`` where the method cannot take it."""

    @abstractmethod
    def iterate(self) -> tuple[str, str]:
        """Iterate from the zero model until a status; ``(status, message)``."""

    def run(self) -> FeatureModel:
        status, message = "max_iter", ""
        try:
            self.oracle.check_targets(self.loss)
            status, message = self.iterate()
        except TimeUp:
            status = "time_limit"
        except KeyboardInterrupt:
            status = "interrupted"
        if self.best is None:
            raise ValidationError("the distributed solve ended before its first pass (time_limit too short?)")
        objective, weights, intercept = self.best
        gap = relative_gap(objective, self.lower)
        if status != "converged" and not message:
            message = f"stopped by {status} before tol={self.tol:g}" if status != "interrupted" else \
                f"interrupted after {self.steps} iterations; returning the best model so far"
        data = self.data
        return FeatureModel(weights, intercept, data.offsets, data.specs, data.scales, data.normalization, objective,
                            self.lower, gap, status, message, self.steps, self.oracle.passes,
                            self.history.elapsed(), self.family.name, self.loss.name, tuple(self.history.rows))

    def line_objectives(self, loss: Loss, margins: list[Future], v: np.ndarray, d: np.ndarray, db: float,
                        steps: np.ndarray, loss_weight: float = 1.0) -> np.ndarray:
        """The objective ``loss_weight sum_i loss(f_i + t (Phi d + db)_i) + Omega(v + t d)`` at each
        step ``t``: one line pass, the penalty on the driver."""
        values = loss_weight * self.oracle.line_pass(loss, margins, d, db, steps)
        offsets = self.data.offsets
        return values + np.array([self.penalty.value(block_norms(v + t * d, offsets)) for t in steps])

    def observe(self, objective: float, v: np.ndarray, b: float, lower: float) -> bool:
        """Record an iteration at the model ``(v, b)`` of objective ``objective`` and a lower bound;
        whether the certified gap of the best model is at most ``tol``."""
        if self.best is None or objective < self.best[0]:
            self.best = (objective, v.copy(), b)
        self.lower = max(self.lower, lower)
        self.history.record(self.best[0], self.lower, passes=float(self.oracle.passes),
                            active_kernels=float(np.count_nonzero(block_norms(self.best[1], self.data.offsets))))
        return relative_gap(self.best[0], self.lower) <= self.tol
