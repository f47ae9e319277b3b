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

A run has three pieces: :class:`BestModel` keeps what the oracle's answers bring (the best
model, the best lower bound, the summed counters); the loop proper steps, records a history
row each iteration and stops (the rule, ``max_iter``, the time limit, a failed step, an
interrupt); the finish asks for the complete model at an averaged estimate, turns a
``converged`` whose model is not certified within ``tol`` into ``stalled`` and says why the run
ended.  A run short of ``tol`` names the inner solves its answers counted as truncated
(:data:`TRUNCATED`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from contextlib import suppress
from typing import Any, ClassVar, Literal, overload

import attrs
import numpy as np

from kernelfuse.assembly.requirements import part_with
from kernelfuse.assembly.result import History, relative_gap
from kernelfuse.assembly.solver import NUMERICAL_ERRORS, Model, Requirements, Solver
from kernelfuse.parts.optimizer import OuterOptimizer
from kernelfuse.parts.oracle import Oracle, OracleAnswer, Point, ValueAnswer, ValueOracle, answers_value_only
from kernelfuse.parts.stopping import Progress, StoppingRule
from kernelfuse.problem.families import Family
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


#: The counter, in the oracle's answers, of inner solves that stopped short of their own
#: optimality test (their iteration bound or the deadline): a run that ends short of ``tol`` names
#: their number in its message.  Named after the SVM oracles that count them; histories and docs
#: read it by this name.
TRUNCATED = "svm_truncated"


@attrs.define(eq=False)
class BestModel:
    """What a run keeps of the oracle's answers: the best primal answer with a model (``answer``,
    the least ``objective``; None before one), the best certified lower bound (``lower``, -inf
    before one) and every answer's counters, summed (``totals``)."""

    answer: OracleAnswer | None = None
    lower: float = -math.inf
    totals: Counter[str] = attrs.field(factory=Counter)

    @property
    def objective(self) -> float:
        """The best model's objective (nan before any model)."""
        return math.nan if self.answer is None else self.answer.objective

    @property
    def truncated(self) -> float:
        """How many inner solves the answers counted as truncated (:data:`TRUNCATED`)."""
        return self.totals[TRUNCATED]

    def account(self, answer: OracleAnswer) -> OracleAnswer:
        """Sum ``answer``'s counters, keep its model if it is the best so far and its lower
        bound if the best; ``answer`` itself."""
        self.totals.update(answer.counters)
        if answer.coef is not None and (self.answer is None or answer.objective < self.answer.objective):
            self.answer = answer
        if not math.isnan(answer.lower_bound):
            self.lower = max(self.lower, answer.lower_bound)
        return answer

    def count(self, counters: Mapping[str, float]) -> None:
        """Sum the counters of work that brought no model and no bound (a value alone)."""
        self.totals.update(counters)

    def best_gap(self, units: float) -> float:
        """The certified relative gap of the best model, its objective and bound multiplied by
        ``units`` (the problem's units: ``History.objective_factor``); nan before any model."""
        return relative_gap(units * self.objective, units * self.lower)


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

    #: The families its recipe declares (the parts may solve more, at other settings: the recipe
    #: says which it is tuned and tested for); None: its oracle's.
    recipe_families: frozenset[str] | None = attrs.field(default=None, converter=attrs.converters.optional(frozenset))

    @property
    def families(self) -> frozenset[str]:  # type: ignore[override]
        return self.oracle.families if self.recipe_families is None else self.recipe_families

    def solves(self, family: Family) -> bool:
        """One of :attr:`families`, or a family its oracle accepts by structure rather than by
        name (:meth:`~kernelfuse.parts.oracle.Oracle.solves`: a family a plugin registers)."""
        return family.name in self.families or (family.name not in self.oracle.families
                                                and self.oracle.solves(family))

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
        run = _Run.start(self, problem, history)
        run.iterate()
        return run.finish()


def _status_message(status: str, failure: str, steps: int, tol: float, truncated: float) -> str:
    """Why a run ended with ``status`` (empty where it converged): ``failure`` where one is
    said, with the number of ``truncated`` inner solves where it ended short of ``tol``."""
    messages = {
        "converged": "",
        "stalled": failure or "the optimizer found no further decrease (the oracle's accuracy "
                   f"limits the solve) before the gap reached tol={tol:g}",
        "numerical_failure": f"{failure} after {steps} iterations; returning the best model before it",
        "interrupted": f"interrupted after {steps} iterations; returning the best model so far",
    }
    message = messages.get(status, f"stopped by {status} before tol={tol:g}")
    if status != "converged" and truncated:  # the inner answers' accuracy, said
        message += (f"; {truncated:g} inner solves stopped at their iteration bound or the deadline "
                    f"(the history's {TRUNCATED})")
    return message


@attrs.define(eq=False)
class _Run:
    """One run of an :class:`OuterLoop`: the optimiser's point and state, the latest answer, the
    oracle's state, the best model so far, the steps taken and how the run ended (``status``,
    ``failure``).  :meth:`evaluate` is the oracle as a step asks it."""

    loop: OuterLoop
    history: History
    point: Point
    oracle_state: Any
    #: The oracle where it answers values alone (line searches ask for them), else None.
    valued: ValueOracle | None
    best: BestModel = attrs.field(factory=BestModel)
    answer: OracleAnswer = attrs.field(init=False)
    state: Any = None
    steps: int = 0
    status: str = "max_iter"
    failure: str = ""

    @classmethod
    def start(cls, loop: OuterLoop, problem: Problem, history: History) -> _Run:
        """The run at the oracle's starting point, answered there, the optimiser's state built."""
        point, oracle_state = loop.oracle.init(problem)
        # line searches may ask for values alone, where the oracle can give them for less
        run = cls(loop, history, point, oracle_state, loop.oracle if answers_value_only(loop.oracle) else None)
        run.answer = run.evaluate(point)
        run.state = loop.optimizer.init(problem, point, run.answer)
        return run

    @property
    def units(self) -> float:
        """What turns the solve's objectives into the problem's: the rule reads the problem's."""
        return self.history.objective_factor

    def estimate(self) -> Point:
        """The optimiser's estimate at its point and state."""
        return self.loop.optimizer.estimate(self.point, self.state)

    @overload
    def evaluate(self, trial: Point) -> OracleAnswer: ...

    @overload
    def evaluate(self, trial: Point, value_only: Literal[False]) -> OracleAnswer: ...

    @overload
    def evaluate(self, trial: Point, value_only: Literal[True]) -> OracleAnswer | ValueAnswer: ...

    def evaluate(self, trial: Point, value_only: bool = False) -> OracleAnswer | ValueAnswer:
        """The oracle's answer at ``trial`` (its value alone, where ``value_only`` and it gives one),
        accounted; a non-finite one raises ``FloatingPointError``."""
        check()  # inside a step (a model exists), the time limit ends it here
        if value_only and self.valued is not None:
            alone, self.oracle_state = self.valued.value(trial, self.oracle_state)
            if not np.isfinite(alone.value):
                raise FloatingPointError(
                    f"the oracle returned a non-finite value at outer iteration {self.steps}")
            self.best.count(alone.counters)
            return alone
        answer, self.oracle_state = self.loop.oracle.query(trial, self.oracle_state)
        if not (np.isfinite(answer.value) and np.isfinite(answer.gradient).all()):
            raise FloatingPointError(
                f"the oracle returned a non-finite value or gradient at outer iteration {self.steps}"
            )
        return self.best.account(answer)

    def record(self, estimate: Point, latest: OracleAnswer) -> None:
        """A history row: the best model's objective and the best bound, the counters summed with
        the optimiser's own work, the gauges and the optimiser's readings (``estimate`` where
        ``record_points``)."""
        optimizer, best = self.loop.optimizer, self.best
        self.history.record(best.objective, best.lower,
                            point=np.array(estimate, copy=True) if self.loop.record_points else None,
                            **_with_own_work(best.totals, optimizer.counters(self.state)),
                            **_gauges(best.answer, latest),
                            **optimizer.readings(self.state))

    def iterate(self) -> None:
        """Step until the run ends (:meth:`_step_until_stopped`), the time limit or a failed step
        included; Ctrl-C ends it with the best model so far, without another answer."""
        # An estimate the oracle never answered at (an average of iterates) costs one more
        # complete answer at the end: the steps stop that much earlier (the first answer's time).
        final_answer = self.estimate() is not self.point
        with deadline(remaining() - (self.history.elapsed() if final_answer else 0.0)), cuttable():
            try:
                self._step_until_stopped()
            except DeadlineReached:  # mid-step: the history's last row shows the best model of its trials
                self.status = "time_limit"
                self.record(self.estimate(), self.answer)
            except NUMERICAL_ERRORS as exc:  # the best model so far is still a model
                self.status, self.failure = "numerical_failure", f"{type(exc).__name__}: {exc}"
            except KeyboardInterrupt:  # Ctrl-C: the best model so far, without another answer
                self.status = "interrupted"
                if self.best.answer is not None:
                    # the row is kept even where the callback (a progress line) is hit again
                    with suppress(KeyboardInterrupt):
                        self.record(self.estimate(), self.answer)

    def _step_until_stopped(self) -> None:
        """A history row each iteration, then a step, until the stopping rule holds
        (``converged``), ``max_iter`` steps are taken, the deadline has passed (``time_limit``) or a
        step does not move the point of a rule that needs a lower bound (``stalled``)."""
        loop, before = self.loop, None
        while True:
            estimate = self.estimate()
            now = Progress(self.units * self.best.objective, self.units * self.best.lower,
                           self.units * self.answer.objective, estimate)
            self.record(estimate, self.answer)
            if loop.stop.reached(loop.tol, now, before):
                self.status = "converged"
                return
            if self.steps >= loop.max_iter:
                return
            if expired():
                self.status = "time_limit"
                return
            before = now
            point, self.answer, self.state = loop.optimizer.step(self.point, self.answer, self.state, self.evaluate)
            self.steps += 1
            if np.array_equal(point, self.point) and loop.stop.needs_lower_bound:
                self.record(estimate, self.answer)
                self.status = "stalled"
                return
            self.point = point

    def finish(self) -> Model:
        """The best model, after the complete answer at the estimate (:meth:`_answer_at_estimate`);
        a ``converged`` whose model's gap is above ``tol`` (the rule held short of a certificate)
        is ``stalled``."""
        self._answer_at_estimate()
        loop, top = self.loop, self.best.answer
        assert top is not None and top.coef is not None  # BestModel keeps answers with a model only
        gap = self.best.best_gap(self.units)
        if self.status == "converged" and not gap <= loop.tol:
            self.status, self.failure = "stalled", (
                f"the {loop.stop.name} rule held at tol={loop.tol:g}, but the certified gap of the model "
                + (f"is {gap:.3g}" if math.isfinite(gap) else "is unknown (no lower bound)")
            )
        message = _status_message(self.status, self.failure, self.steps, loop.tol, self.best.truncated)
        return Model(
            coef=top.coef, intercept=top.intercept, kernel_weights=top.kernel_weights,
            dual_objective=self.best.lower, n_iter=self.steps, status=self.status, message=message,
        )

    def _answer_at_estimate(self) -> None:
        """The oracle's complete model at the optimiser's estimate, accounted and recorded, where
        the run has no model yet, or where it was not interrupted, has no model certified within
        ``tol`` and the estimate is not its point (an average of iterates).  Its failure ends the
        run ``numerical_failure`` where a model exists, and is raised where none does."""
        estimate, best = self.estimate(), self.best
        # a model certified within tol needs no other (an average of iterates, say)
        certified = (self.status == "converged" and best.answer is not None
                     and best.best_gap(self.units) <= self.loop.tol)
        if best.answer is not None and (self.status == "interrupted" or certified
                                        or np.array_equal(estimate, self.point)):
            return
        try:
            final, self.oracle_state = self.loop.oracle.model(estimate, self.oracle_state)
        except NUMERICAL_ERRORS as exc:
            if best.answer is None:
                raise
            self.status, self.failure = "numerical_failure", f"{type(exc).__name__}: {exc}"
        else:
            best.account(final)
            self.record(estimate, attrs.evolve(final, gauges={**self.answer.gauges, **final.gauges}))
