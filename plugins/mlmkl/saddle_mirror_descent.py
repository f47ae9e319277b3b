"""Entropic mirror descent-ascent for ``min_p max_gamma F(p, gamma)`` (ML-MKL-SA section 3, eq. 7).

The point ``z = (p, gamma)`` lies on a product of two simplices (kernel weights, label weights)
and the oracle's ``gradient`` is the saddle operator ``(d F / d p, -d F / d gamma)`` or an
unbiased estimate of it.  A step is eq. 7's multiplicative update in each block,
``z+ = grad h*(grad h(z) - s * operator)`` for the entropic map, with one step per block,
``s_b = step_scale * sqrt(2 log n_b / sum_{tau <= t} r_tau^2)``: entropic stochastic mirror
descent's step (Nemirovski, Juditsky, Lan and Shapiro 2009) in AdaGrad's adaptive form, ``r``
the range of the centred gradient of the earlier iterations, so no horizon or gradient bound is
needed.  Pair with :class:`~kernelfuse.plugins.mlmkl.iterate_averaging.IterateAveraging` for
eq. 10's averaged iterates.  The step rules tried and rejected: docs/methods/ml-mkl-sa.md.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from kernelfuse.assembly.requirements import part_with
from kernelfuse.parts.mirror_map import MirrorMap
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import positive


@attrs.define
class _State:
    groups: np.ndarray
    ranges: np.ndarray  # sum of squared centred gradient ranges, per block
    last: np.ndarray = attrs.field(factory=lambda: np.zeros(2))  # the last steps, per block


@attrs.define
class SaddleMirrorDescent(OuterOptimizer):
    """Multiplicative updates of the kernel weights (descent) and label weights (ascent), eq. 7."""

    name = "saddle-mirror-descent"
    mirror_map: MirrorMap = attrs.field(validator=part_with("grad_h", "grad_h_conjugate"))
    step_scale: float = positive.field(1.0)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> _State:
        M = problem.n_kernels
        groups = np.r_[np.zeros(M, int), np.ones(point.size - M, int)]
        return _State(groups, np.zeros(2))

    def steps(self, point: np.ndarray, g: np.ndarray, state: _State) -> tuple[np.ndarray, _State]:
        """The step of each coordinate's block for operator ``g`` at ``point``, and the new state.

        The step uses the ranges of earlier iterations only (the first
        iteration: its own): a step that shrank with the current sample's
        range would shrink exactly when a rarely drawn label is drawn, and
        bias the label weights towards the labels drawn often.
        """
        ranges = state.ranges.copy()
        step = np.zeros(2)
        for b in range(2):
            block = state.groups == b
            z, gb = point[block], g[block]
            current = float(np.max(np.abs(gb - z @ gb))) ** 2
            seen = ranges[b] if ranges[b] > 0.0 else current
            ranges[b] += current
            if seen > 0.0:
                step[b] = self.step_scale * math.sqrt(2.0 * math.log(max(2, gb.size)) / seen)
        return step[state.groups], attrs.evolve(state, ranges=ranges, last=step)

    def readings(self, state: _State) -> dict[str, float]:
        """The last steps of the kernel block and of the label block."""
        return {"step_kernels": float(state.last[0]), "step_labels": float(state.last[1])}

    def step(
        self, point: np.ndarray, answer: OracleAnswer, state: _State, evaluate: Evaluate
    ) -> tuple[np.ndarray, OracleAnswer, _State]:
        step, state = self.steps(point, answer.gradient, state)
        theta = self.mirror_map.grad_h(point) - step * answer.gradient
        trial = self.mirror_map.grad_h_conjugate(theta, state.groups)
        return trial, evaluate(trial), state
