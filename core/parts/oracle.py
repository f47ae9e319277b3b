"""The ``Oracle`` interface: the inner problem at the current outer point.

At each point of an outer optimiser (kernel weights, dual multipliers, primal coefficients) an
oracle solves or samples the inner problem and answers with a value, a (sub)gradient in the
outer variables, where it has one a certified lower bound, and the primal model the point gives
with its objective.  Its state (warm starts, caches) is explicit, as in optax: ``init`` creates
it, ``query`` returns the new one.  Examples: an SVM on the combined kernel (mirrorVSKL,
SimpleMKL), Newton on the smoothed dual (SpicyMKL), one sampled label (ML-MKL-SA); a sampling
oracle's answers are unbiased estimates without a model, and :meth:`Oracle.model` gives the
complete answer.  An oracle whose value costs less alone than with its gradient (an SVM's
objective against every kernel's quadratic form) may offer the capability ``value``, for line
searches (:func:`answers_value_only`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeGuard

import attrs
import numpy as np

if TYPE_CHECKING:
    from kernelfuse.problem.families import Family
    from kernelfuse.problem.instance import Problem


@attrs.frozen(eq=False)
class OracleAnswer:
    """What an oracle returns at a point.

    ``value`` and ``gradient``: the outer function and a (sub)gradient at
    the point.  ``lower_bound``: a certified lower bound on the family
    optimum (nan if none).  ``coef``, ``intercept``, ``kernel_weights``: the
    primal model at the point, and ``objective`` the family objective there
    (:func:`kernelfuse.problem.objectives.evaluate_parts`); a stochastic answer (one
    sampled label) carries no model: ``coef`` None, ``objective`` nan.  ``counters``: the work
    this answer cost (``svm_calls``, ``kernel_passes``, ...), summed by the
    loop.  ``gauges``: readings recorded in the history as they are, not
    summed (e.g. ML-MKL-SA's estimate of the saddle-point gap).
    ``active_kernels``: how many kernels the model uses, for progress reports.
    ``curvature``: where the oracle can tell, a function returning a factor
    ``R`` (r, n) with ``R'R`` the Hessian of ``value`` at the point, valid
    while the inner solution's active sets hold (computed on demand: only
    a second-order step asks for it); None otherwise.
    """

    value: float
    gradient: np.ndarray
    coef: np.ndarray | None
    objective: float
    intercept: float = 0.0
    kernel_weights: np.ndarray | None = None
    lower_bound: float = math.nan
    counters: Mapping[str, float] = attrs.field(factory=dict)
    gauges: Mapping[str, float] = attrs.field(factory=dict)
    #: Kernels the model uses (weight above 1e-6 of the largest); -1 if unknown.
    active_kernels: int = -1
    curvature: Callable[[], np.ndarray] | None = None


@attrs.frozen(eq=False)
class ValueAnswer:
    """The value of the outer function at a point, alone: what a line search compares.

    ``counters``: the work it cost, summed by the loop like an answer's.
    """

    value: float
    counters: Mapping[str, float] = attrs.field(factory=dict)


#: The outer variables at a point: an array (the kernel weights) for most methods, or an object
#: of the method's own that its oracle and optimiser share (SpicyMKL's proximal point, OBSCURE's
#: expansion).
Point = Any


class Oracle(ABC):
    """Solves or samples the inner problem at an outer point.

    Optional capability (checked by name, like a loss's):

    ``value(point, state) -> (ValueAnswer, state)``
        The value at ``point`` without the gradient, bound or model, at less cost than
        :meth:`query`; a :meth:`query` at a point ``value`` answered since the last query
        completes that answer from the same inner solution (no second inner solve).
    """

    name: ClassVar[str]
    #: Families this oracle's inner problem belongs to.
    families: ClassVar[frozenset[str]]

    def solves(self, family: Family) -> bool:
        """Whether its inner problem is ``family``'s: by name, one of :attr:`families` (an oracle
        reading only the family's structure says which structure)."""
        return family.name in self.families

    @abstractmethod
    def init(self, problem: Problem) -> tuple[Point, Any]:
        """The starting point for ``problem`` and the initial oracle state."""

    @abstractmethod
    def query(self, point: Point, state: Any) -> tuple[OracleAnswer, Any]:
        """Answer at ``point``, and the updated state."""

    def model(self, point: Point, state: Any) -> tuple[OracleAnswer, Any]:
        """The complete answer at ``point``, with its primal model.

        Asked once, at the end, where the optimiser's estimate is a point the
        oracle never answered at (an average of iterates).  A deterministic
        oracle's :meth:`query` is already complete; a sampling oracle solves
        the whole inner problem here.
        """
        return self.query(point, state)


class ValueOracle(Protocol):
    """An oracle with the capability ``value``."""

    def value(self, point: Point, state: Any) -> tuple[ValueAnswer, Any]: ...


def answers_value_only(oracle: Oracle) -> TypeGuard[ValueOracle]:
    """Whether ``oracle`` has the capability ``value`` (a value without its gradient)."""
    return callable(getattr(oracle, "value", None))
