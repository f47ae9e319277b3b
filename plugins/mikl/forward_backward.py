"""MIKL's optimiser: forward-backward proximal descent (Algorithms 1-2), plain or accelerated.

For ``P = L(A alpha) + g(alpha)`` with ``grad L`` Lipschitz with constant ``beta = 2 ||A||^2``
(``||A||^2`` by power iteration at the start), a step is
``alpha+ = prox_{s g}(alpha - s grad L(alpha))``, which decreases ``P`` for any ``s < 2 / beta``
(``step_scale / beta``; default 1.9 plain).  ``accelerated=True`` (FISTA, default step ``1 / beta``)
steps from the extrapolated point and, with ``restart=True``, resets the momentum whenever it
points against the prox-gradient step (O'Donoghue and Candes' gradient restart); such a step
queries the oracle twice.
"""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.plugins.mikl.squared_hinge_gradient import adjoint
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import mikl_penalty
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.regularizers import MixedLpq
from kernelfuse.validation import flag, positive, positive_count


def operator_norm_squared(K: np.ndarray, iterations: int, seed: int = 0) -> float:
    """``||A||^2 = ||A'A||`` by power iteration (``A coef = sum_t K[t]' coef[t]``); 2 passes each."""
    v = np.random.default_rng(seed).normal(size=K.shape[:2])
    estimate = 0.0
    for _ in range(iterations):
        v /= np.linalg.norm(v)
        w = adjoint(K, objectives.decision_values(objectives.kernel_products(K, v)))
        new = float(np.sum(v * w))
        v = w
        if abs(new - estimate) <= 1e-6 * new:
            return new
        estimate = new
    return estimate


@attrs.define
class ForwardBackwardState:
    #: The problem's penalty ``g``, whose prox the steps take.
    penalty: MixedLpq
    step: float
    momentum: float = 1.0
    previous: np.ndarray | None = None
    restarts: int = 0


@attrs.define
class ForwardBackward(OuterOptimizer):
    """Proximal gradient on ``L + g``: plain (Algorithm 1) or FISTA with adaptive restart."""

    name: ClassVar[str] = "forward-backward"
    accelerated: bool = flag.field(True)
    restart: bool = flag.field(True)
    #: ``s = step_scale / beta``; None: 1.9 (plain, below 2) or 1.0 (accelerated).
    step_scale: float | None = positive.or_none("1.9 plain, 1.0 accelerated").field(None)
    power_iterations: int = positive_count.field(100)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> ForwardBackwardState:
        beta = 2.0 * operator_norm_squared(problem.K, self.power_iterations) * 1.01  # a safety margin
        scale = self.step_scale if self.step_scale is not None else (1.0 if self.accelerated else 1.9)
        if self.accelerated and scale > 1.0:
            raise ValidationError(f"the accelerated method needs step_scale <= 1, got {scale}")
        if scale >= 2.0:
            raise ValidationError(f"forward-backward needs step_scale < 2, got {scale}")
        return ForwardBackwardState(mikl_penalty(problem), step=scale / beta if beta > 0 else 1.0)

    def readings(self, state: ForwardBackwardState) -> dict[str, float]:
        return {"step": state.step}

    @staticmethod
    def _prox_step(state: ForwardBackwardState, point: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        """``prox_{s g}(point - s gradient)``, the penalty acting on ``alpha = coef.T``."""
        return state.penalty.prox((point - state.step * gradient).T, state.step).T

    def step(self, point: np.ndarray, answer: OracleAnswer, state: ForwardBackwardState,
             evaluate: Evaluate) -> tuple[np.ndarray, OracleAnswer, ForwardBackwardState]:
        if not self.accelerated:
            new = self._prox_step(state, point, answer.gradient)
            return new, evaluate(new), state
        next_momentum = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * state.momentum**2))
        if state.previous is None or state.momentum == 1.0:
            extrapolated, at_extrapolated = point, answer
        else:
            extrapolated = point + ((state.momentum - 1.0) / next_momentum) * (point - state.previous)
            at_extrapolated = evaluate(extrapolated)
        new = self._prox_step(state, extrapolated, at_extrapolated.gradient)
        if self.restart and float(np.sum((extrapolated - new) * (new - point))) > 0.0:
            state.momentum, state.restarts = 1.0, state.restarts + 1
        else:
            state.momentum = next_momentum
        state.previous = point
        return new, evaluate(new), state
