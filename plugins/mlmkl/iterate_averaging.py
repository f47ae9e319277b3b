"""Iterate averaging (ML-MKL-SA eq. 10; Polyak and Juditsky 1992): any optimiser, reporting the mean iterate.

Wraps an inner optimiser and leaves its steps unchanged; its :meth:`~IterateAveraging.estimate`
is the uniform average of the points it visited (the point whose saddle gap stochastic mirror
descent bounds) or, with ``decay = eta > 0``, the polynomial-decay average
``z_bar_t = (1 - w_t) z_bar_{t-1} + w_t z_t``, ``w_t = (eta + 1) / (t + eta)`` (Shamir and Zhang
2013), which weighs late iterates more at the same O(1) cost (``mlmkl-sa``'s ``decay = 3``,
measured in docs/methods/ml-mkl-sa.md).  The outer loop stops on this average's change and asks
the oracle for the complete model there.  Composes like an optax wrapper:
``IterateAveraging(inner=optimizer)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from kernelfuse.assembly.requirements import part_with
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import nonnegative


@attrs.define
class _State:
    inner: Any
    average: np.ndarray
    count: int


@attrs.define
class IterateAveraging(OuterOptimizer):
    """The inner optimiser's steps; its estimate is the running mean of the iterates."""

    name = "iterate-averaging"
    inner: OuterOptimizer = attrs.field(validator=part_with("init", "step"))
    #: Polynomial-decay weights ``w_t proportional to (t + decay - 1)^decay`` (Shamir and Zhang
    #: 2013); 0: the uniform mean of eq. 10.
    decay: float = nonnegative.field(0.0)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> _State:
        return _State(self.inner.init(problem, point, answer), np.array(point, dtype=float), 1)

    def step(
        self, point: np.ndarray, answer: OracleAnswer, state: _State, evaluate: Evaluate
    ) -> tuple[np.ndarray, OracleAnswer, _State]:
        new_point, new_answer, inner = self.inner.step(point, answer, state.inner, evaluate)
        count = state.count + 1
        weight = (self.decay + 1.0) / (count + self.decay)
        average = state.average + weight * (new_point - state.average)
        return new_point, new_answer, _State(inner, average, count)

    def readings(self, state: _State) -> Mapping[str, float]:
        return self.inner.readings(state.inner)

    def estimate(self, point: np.ndarray, state: _State) -> np.ndarray:
        return state.average
