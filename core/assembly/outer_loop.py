"""``OuterLoop``: the solver assembled from an outer optimiser and an oracle.

The loop asks the oracle at the starting point, then lets the optimiser step (a step may
query the oracle several times, as a line search does) until the stopping rule named by
``stop`` holds (kind ``stopping``: ``gap``, ``objective_change``, ``estimate_change``).
Whatever the rule, ``converged`` is a certificate: the returned model's certified relative
gap ``(P_best - L_best) / max(1, |P_best|)`` is at most ``tol``; otherwise the status names
what ended the run (``stalled``, ``max_iter``, ``time_limit``, ``numerical_failure``,
``interrupted``: docs/reliability.md).  It returns the best primal model seen (with the
oracle's complete model at the optimiser's final estimate, ML-MKL-SA eq. 10, among them), the
best lower bound as ``dual_objective`` and the answers' counters summed, every iteration;
``record_points=True`` keeps every iteration's estimate (ML-MKL-SA's Figure 1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from contextlib import suppress
from typing import ClassVar, Literal, overload

import attrs
import numpy as np

from kernelfuse.assembly.recipe import part_with
from kernelfuse.assembly.result import History, relative_gap
from kernelfuse.assembly.solver import NUMERICAL_ERRORS, Model, Requirements, Solver
from kernelfuse.parts.optimizer import OuterOptimizer
from kernelfuse.parts.oracle import Oracle, OracleAnswer, Point, ValueAnswer, answers_value_only
from kernelfuse.parts.stopping import Progress, StoppingRule
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import DeadlineReached, check, cuttable, deadline, expired, remaining
from kernelfuse.validation import count, flag, positive, positive_count, seconds


def _with_own_work(totals: Mapping[str, float], own: Mapping[str, float]) -> dict[str, float]:
    """The oracle's counters plus the optimiser's own work (zero counts kept, unlike ``Counter +``)."""
    counts = dict(totals)
    for name, value in own.items():
        counts[name] = counts.get(name, 0.0) + value
    return counts


def _gauges(model: OracleAnswer | None, latest: OracleAnswer) -> dict[str, float]:
    """Per-iteration readings recorded beside the summed counters: the kernels
    the best model uses, and the latest answer's own readings."""
    readings = dict(latest.gauges)
    if model is not None and model.active_kernels >= 0:
        readings["active_kernels"] = model.active_kernels
    return readings


@attrs.define
class OuterLoop(Solver):
    """Outer optimiser + oracle until the certified gap (or objective change) is below ``tol``."""

    #: The stopping rule, a part (kind ``stopping``) of the recipe: ``gap`` unless it names another.
    default_parts: ClassVar[Mapping[str, tuple[str, str]]] = {"stop": ("stopping", "gap")}

    optimizer: OuterOptimizer
    oracle: Oracle
    stop: StoppingRule = attrs.field(validator=part_with("reached"))
    tol: float = positive.field(1e-6)
    max_iter: int = count.field(1000)
    time_limit: float = seconds.field(math.inf)
    name: str = "outer-loop"  # type: ignore[misc]  # per instance: the recipe names its loop
    #: Keep the optimiser's estimate of every iteration in the history.
    record_points: bool = flag.field(False)
    #: BLAS threads while running: 1 measured 2-5x faster than 2 on this
    #: loop of small dense solves and matrix-vector passes (benchmarks/README.md).
    blas_threads: int | None = positive_count.or_none("the process setting").field(1)

    @property
    def families(self) -> frozenset[str]:  # type: ignore[override]
        return self.oracle.families

    @property
    def requires(self) -> Requirements:  # type: ignore[override]
        """What the optimiser and the oracle need of the problem's loss."""
        needs: list[str | tuple[str, ...]] = []
        for part in (self.optimizer, self.oracle):
            needs += [n for n in getattr(part, "requires", {}).get("loss", ()) if n not in needs]
        return {"loss": tuple(needs)} if needs else {}

    @property
    def reads_kernel_rows(self) -> bool:  # type: ignore[override]
        """When both the optimiser and the oracle work from kernel rows on demand."""
        return all(getattr(part, "reads_kernel_rows", False) for part in (self.optimizer, self.oracle))

    @property
    def reads_kernel_factors(self) -> bool:  # type: ignore[override]
        """When both the optimiser and the oracle work from kernel factors (or from rows)."""
        return all(getattr(part, "reads_kernel_factors", False) or getattr(part, "reads_kernel_rows", False)
                   for part in (self.optimizer, self.oracle))

    @property
    def reads_device_arrays(self) -> bool:  # type: ignore[override]
        """When both the optimiser and the oracle read a stack on its device
        (:mod:`kernelfuse.kernels.array_backend`)."""
        return all(getattr(part, "reads_device_arrays", False) for part in (self.optimizer, self.oracle))

    @property
    def weighted_families(self) -> frozenset[str]:  # type: ignore[override]
        """The oracle's: it reads the problem's loss and certifies the bound; the optimiser
        moves a point on the oracle's answers."""
        return frozenset(getattr(self.oracle, "weighted_families", frozenset()))

    def parts(self) -> dict[str, object]:
        return {"optimizer": self.optimizer, "oracle": self.oracle, "stop": self.stop}

    def rescaled(self, scale: float) -> OuterLoop:
        """The loop with each part that holds a model of the problem (``rescaled``: SpicyMKL's
        oracle and its ``warm_start``) mapped to the problem on ``K / scale``."""
        mapped = {role: part.rescaled(scale) for role, part in (("optimizer", self.optimizer), ("oracle", self.oracle))
                  if hasattr(part, "rescaled")}
        return attrs.evolve(self, **mapped) if mapped else self

    def run(self, problem: Problem, history: History) -> Model:
        with deadline(self.time_limit - history.elapsed()):
            return self._run(problem, history)

    def _run(self, problem: Problem, history: History) -> Model:
        rule = self.stop
        point, oracle_state = self.oracle.init(problem)
        totals: Counter[str] = Counter()
        best: list[OracleAnswer] = []
        lower = -math.inf
        # line searches may ask for values alone, where the oracle can give them for less
        valued = self.oracle if answers_value_only(self.oracle) else None

        def account(answer: OracleAnswer) -> OracleAnswer:
            nonlocal lower
            totals.update(answer.counters)
            if answer.coef is not None and (not best or answer.objective < best[0].objective):
                best[:] = [answer]
            if not math.isnan(answer.lower_bound):
                lower = max(lower, answer.lower_bound)
            return answer

        @overload
        def evaluate(trial: Point) -> OracleAnswer: ...

        @overload
        def evaluate(trial: Point, value_only: Literal[False]) -> OracleAnswer: ...

        @overload
        def evaluate(trial: Point, value_only: Literal[True]) -> OracleAnswer | ValueAnswer: ...

        def evaluate(trial: Point, value_only: bool = False) -> OracleAnswer | ValueAnswer:
            nonlocal oracle_state
            check()  # inside a step (a model exists), the time limit ends it here
            if value_only and valued is not None:
                alone, oracle_state = valued.value(trial, oracle_state)
                if not np.isfinite(alone.value):
                    raise FloatingPointError(
                        f"the oracle returned a non-finite value at outer iteration {steps}")
                totals.update(alone.counters)
                return alone
            answer, oracle_state = self.oracle.query(trial, oracle_state)
            if not (np.isfinite(answer.value) and np.isfinite(answer.gradient).all()):
                raise FloatingPointError(
                    f"the oracle returned a non-finite value or gradient at outer iteration {steps}"
                )
            return account(answer)

        def record(estimate: np.ndarray, latest: OracleAnswer) -> None:
            history.record(best[0].objective if best else math.nan, lower,
                           point=np.array(estimate, copy=True) if self.record_points else None,
                           **_with_own_work(totals, self.optimizer.counters(state)),
                           **_gauges(best[0] if best else None, latest),
                           **self.optimizer.readings(state))

        units = history.objective_factor  # the rule reads the problem's units, not the solve's

        def best_gap() -> float:
            """The certified gap of the best model so far, in the problem's units."""
            return relative_gap(units * best[0].objective, units * lower)

        steps = 0
        answer = evaluate(point)
        state = self.optimizer.init(problem, point, answer)
        before: Progress | None = None
        status, failure = "max_iter", ""
        # An estimate the oracle never answered at (an average of iterates) costs one more
        # complete answer at the end: the steps stop that much earlier (the first answer's time).
        final_answer = self.optimizer.estimate(point, state) is not point
        with deadline(remaining() - (history.elapsed() if final_answer else 0.0)), cuttable():
            try:
                while True:
                    estimate = self.optimizer.estimate(point, state)
                    now = Progress(units * (best[0].objective if best else math.nan), units * lower,
                                   units * answer.objective, estimate)
                    record(estimate, answer)
                    if rule.reached(self.tol, now, before):
                        status = "converged"
                        break
                    if steps >= self.max_iter:
                        break
                    if expired():
                        status = "time_limit"
                        break
                    before = now
                    new_point, answer, state = self.optimizer.step(point, answer, state, evaluate)
                    steps += 1
                    if np.array_equal(new_point, point) and rule.needs_lower_bound:
                        record(estimate, answer)
                        status = "stalled"
                        break
                    point = new_point
            except DeadlineReached:  # mid-step: the history's last row shows the best model of its trials
                status = "time_limit"
                record(self.optimizer.estimate(point, state), answer)
            except NUMERICAL_ERRORS as exc:  # the best model so far is still a model
                status, failure = "numerical_failure", f"{type(exc).__name__}: {exc}"
            except KeyboardInterrupt:  # Ctrl-C: the best model so far, without another answer
                status = "interrupted"
                if best:  # the row is kept even where the callback (a progress line) is hit again
                    with suppress(KeyboardInterrupt):
                        record(self.optimizer.estimate(point, state), answer)
        estimate = self.optimizer.estimate(point, state)
        # a model certified within tol needs no other (an average of iterates, say)
        certified = status == "converged" and bool(best) and best_gap() <= self.tol
        if not best or (status != "interrupted" and not certified and not np.array_equal(estimate, point)):
            try:
                final, oracle_state = self.oracle.model(estimate, oracle_state)
            except NUMERICAL_ERRORS as exc:
                if not best:
                    raise
                status, failure = "numerical_failure", f"{type(exc).__name__}: {exc}"
            else:
                account(final)
                record(estimate, attrs.evolve(final, gauges={**answer.gauges, **final.gauges}))
        top = best[0]
        assert top.coef is not None  # best keeps answers with a model only (account)
        gap = best_gap()
        if status == "converged" and not gap <= self.tol:
            status, failure = "stalled", (
                f"the {rule.name} rule held at tol={self.tol:g}, but the certified gap of the model "
                + (f"is {gap:.3g}" if math.isfinite(gap) else "is unknown (no lower bound)")
            )
        messages = {
            "converged": "",
            "stalled": failure or "the optimizer found no further decrease (the oracle's accuracy "
                       f"limits the solve) before the gap reached tol={self.tol:g}",
            "numerical_failure": f"{failure} after {steps} iterations; returning the best model "
                                 "before it",
            "interrupted": f"interrupted after {steps} iterations; returning the best model so far",
        }
        message = messages.get(status, f"stopped by {status} before tol={self.tol:g}")
        if status != "converged" and totals["svm_truncated"]:  # the inner answers' accuracy, said
            message += (f"; {totals['svm_truncated']:g} inner SVM solves stopped at their iteration "
                        "bound or the deadline (the history's svm_truncated)")
        return Model(
            coef=top.coef, intercept=top.intercept, kernel_weights=top.kernel_weights,
            dual_objective=lower, n_iter=steps, status=status, message=message,
        )
