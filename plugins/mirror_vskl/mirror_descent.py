"""Mirror descent over a product of simplices (mirrorVSKL section 3.2.1; Ben-Tal et al. 2001).

One step from ``lam`` with (sub)gradient ``g`` and step ``s`` is
``lam+ = grad h*(grad h(lam) - s g)``: for the entropic map a per-group softmax of
``log lam - s g``; for the ``local-quadratic`` map, built at each step from the oracle's
curvature, a projected Newton step.  ``step_rule`` picks the step: ``"auto"`` (``"line-search"``
for a local map, ``"armijo"`` for a fixed one), ``"armijo"`` (the descent lemma in the Bregman
geometry), ``"line-search"`` (sufficient decrease along the mirror step, as proximal Newton
methods), and the paper's ``"lipschitz-free"`` and ``"theorem-3.1"`` for the entropic map.
Each rule's formula: docs/methods/mirror-vskl.md.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from kernelfuse.assembly.requirements import part_with
from kernelfuse.errors import ValidationError
from kernelfuse.parts.mirror_map import MirrorMap
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import below_one, count, growth_factor, positive

STEP_RULES = ("auto", "armijo", "line-search", "lipschitz-free", "theorem-3.1")


#: The rules whose steps are set in the entropic map's units (section 3.2.1).
ENTROPIC_RULES = ("lipschitz-free", "theorem-3.1")


def _check_rule(instance: Any, attribute: Any, value: str) -> None:
    if value not in STEP_RULES:
        raise ValidationError(f"step_rule must be one of {', '.join(STEP_RULES)}, got {value!r}")
    if value in ENTROPIC_RULES and instance.mirror_map.local:
        raise ValidationError(
            f"step_rule {value!r} sets the entropic map's steps (section 3.2.1), not the "
            f"{instance.mirror_map.name!r} map's: pass mirror_map='entropic' with it, or use "
            "step_rule='auto' / 'line-search'")


@attrs.define
class _State:
    groups: np.ndarray
    log_n_max: float
    step: float
    t: int = 0
    lipschitz: float = 0.0


@attrs.define
class MirrorDescent(OuterOptimizer):
    """Mirror descent on a product of simplices (entropic or local-quadratic map) with Armijo,
    line-search or 1/sqrt(t) steps."""

    name = "mirror-descent"
    mirror_map: MirrorMap = attrs.field(validator=part_with("grad_h", "grad_h_conjugate", "divergence"))
    step_rule: str = attrs.field(default="auto", validator=_check_rule)
    A: float = positive.field(1.0)
    grow: float = growth_factor.field(1.5)
    max_backtracks: int = count.field(40)
    #: ``c`` of the line-search rule's sufficient-decrease condition.
    sufficient_decrease: float = below_one.field(1e-4)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> _State:
        groups = problem.groups if problem.groups is not None else np.zeros(point.size, int)
        log_n_max = max(math.log(2.0), math.log(int(np.bincount(groups).max())))
        return _State(groups, log_n_max, self.mirror_map.initial_step(answer.gradient, groups))

    def readings(self, state: _State) -> dict[str, float]:
        """``step``: the step the rule holds (Armijo: its next first trial)."""
        return {"step": state.step}

    @staticmethod
    def _move(geometry: MirrorMap, point: np.ndarray, g: np.ndarray, step: float,
              groups: np.ndarray) -> np.ndarray:
        theta = geometry.grad_h(point) - step * g
        return geometry.grad_h_conjugate(theta, groups)

    def step(
        self, point: np.ndarray, answer: OracleAnswer, state: _State, evaluate: Evaluate
    ) -> tuple[np.ndarray, OracleAnswer, _State]:
        g = answer.gradient
        t = state.t + 1
        geometry = self.mirror_map.at(point, answer)
        rule = self.step_rule
        if rule == "auto":
            rule = "line-search" if self.mirror_map.local else "armijo"
        if rule == "line-search":
            return self._line_search(point, answer, state, evaluate, geometry)
        if rule != "armijo":
            top = float(np.max(np.abs(g))) or 1.0
            lipschitz = max(state.lipschitz, top)
            if rule == "lipschitz-free":
                step = self.A * math.sqrt(state.log_n_max) / (top * math.sqrt(t))
            else:
                step = math.sqrt(2.0 * state.log_n_max) / (lipschitz * math.sqrt(t))
            trial = self._move(geometry, point, g, step, state.groups)
            return trial, evaluate(trial), attrs.evolve(state, t=t, lipschitz=lipschitz, step=step)
        step = state.step
        slack = 1e-12 * max(1.0, abs(answer.value))
        for attempt in range(self.max_backtracks):
            trial = self._move(geometry, point, g, step, state.groups)
            trial_answer = evaluate(trial)
            model = (answer.value + float(g @ (trial - point))
                     + geometry.divergence(trial, point) / step)
            if trial_answer.value <= model + slack:
                next_step = min(step * self.grow, geometry.max_step) if attempt == 0 else step
                return trial, trial_answer, attrs.evolve(state, t=t, step=next_step)
            step *= 0.5
        # No decrease at any step: stationary to the oracle's accuracy.  Stay
        # (the loop reports it) and keep the step for a later attempt.
        return point, answer, attrs.evolve(state, t=t)

    def _line_search(
        self, point: np.ndarray, answer: OracleAnswer, state: _State, evaluate: Evaluate,
        geometry: MirrorMap,
    ) -> tuple[np.ndarray, OracleAnswer, _State]:
        """The mirror step at ``state.step``, then halving along the segment to it until
        ``G(lam + tau d) <= G(lam) + c tau g'd`` (Lee, Sun and Saunders 2014, section 3.1)."""
        g = answer.gradient
        slack = 1e-12 * max(1.0, abs(answer.value))
        direction = self._move(geometry, point, g, state.step, state.groups) - point
        slope = float(g @ direction)
        if slope >= 0.0:  # the model predicts no decrease: stationary for this map
            return point, answer, attrs.evolve(state, t=state.t + 1)
        tau = 1.0
        for attempt in range(self.max_backtracks):
            trial = np.maximum(point + tau * direction, 0.0)
            trial_answer = evaluate(trial)
            if trial_answer.value <= answer.value + self.sufficient_decrease * tau * slope + slack:
                step = min(state.step * self.grow, geometry.max_step) if attempt == 0 else state.step
                return trial, trial_answer, attrs.evolve(state, t=state.t + 1, step=step)
            tau *= 0.5
        return point, answer, attrs.evolve(state, t=state.t + 1)
