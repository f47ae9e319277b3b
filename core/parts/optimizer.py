"""The ``OuterOptimizer`` interface: an iteration rule with explicit state.

Shaped like an optax transformation with a line search: ``init`` builds the
state, and ``step(point, answer, state, evaluate)`` returns the next point,
the oracle's answer there and the new state.  ``evaluate(point)`` asks the
oracle at a trial point, so rules with a line search (Armijo steps, golden
section) are steps like any other; ``evaluate(point, value_only=True)`` asks for
the value alone (a :class:`ValueAnswer` where the oracle can give one for less,
else its complete answer), and a later ``evaluate(point)`` at the step taken
completes it.  The state holds everything the rule
carries (step sizes, penalties, averages), so runs can be warm-started,
checkpointed and tested step by step.  ``estimate`` is the point the rule
vouches for (its iterate, or an average of iterates: ML-MKL-SA eq. 10).  Examples: mirror descent, reduced
gradient, augmented Lagrangian, forward-backward (+ FISTA), stochastic
proximal sub-gradient, stochastic mirror-prox.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, overload

from kernelfuse.parts.oracle import OracleAnswer, Point, ValueAnswer

if TYPE_CHECKING:
    from kernelfuse.problem.instance import Problem


class Evaluate(Protocol):
    """The oracle at a trial point, as the loop gives it to a step."""

    @overload
    def __call__(self, point: Point, /) -> OracleAnswer: ...

    @overload
    def __call__(self, point: Point, /, value_only: Literal[False]) -> OracleAnswer: ...

    @overload
    def __call__(self, point: Point, /, value_only: Literal[True]) -> OracleAnswer | ValueAnswer: ...

    def __call__(self, point: Point, /, value_only: bool = False) -> OracleAnswer | ValueAnswer: ...


class OuterOptimizer(ABC):
    """An iteration rule over the outer variables."""

    name: ClassVar[str]

    @abstractmethod
    def init(self, problem: Problem, point: Point, answer: OracleAnswer) -> Any:
        """Initial state at ``point``, where the oracle answered ``answer``."""

    @abstractmethod
    def step(
        self, point: Point, answer: OracleAnswer, state: Any, evaluate: Evaluate
    ) -> tuple[Point, OracleAnswer, Any]:
        """The next point, the oracle's answer there, and the new state."""

    def readings(self, state: Any) -> Mapping[str, float]:
        """Numbers the rule holds that a history row should show (e.g. its ``step``)."""
        return {}

    def counters(self, state: Any) -> Mapping[str, float]:
        """The optimiser's own cumulative work (e.g. ``kernel_passes`` of its inner model), added
        to the oracle's counters in the history, so that a run's totals count every pass."""
        return {}

    def estimate(self, point: Point, state: Any) -> Point:
        """The optimiser's estimate of the solution: the current point, or,
        for rules that average their iterates, the average."""
        return point
