"""Reduced gradient with golden-section line search: SimpleMKL (Rakotomamonjy et al., JMLR 2008, Algorithm 1).

Minimises ``J(d)`` over one simplex along the reduced descent direction of section 3.2 (``mu``
the largest weight: ``D_m = g_mu - g_m`` except at ``d_m = 0`` with ``g_m > g_mu``, and
``D_mu = -sum_{m != mu} D_m``).  The step first goes as far as the simplex allows while that
lowers ``J``, dropping each weight that reaches 0 from ``D``; then a golden-section search on
``[0, gamma_max]`` to ``line_search_tol`` of the bracket (the SimpleMKL toolbox's default is 0.1),
backing off geometrically (at most ``max_backtracks`` times) when no step lowered ``J``.  As
the toolbox's numerical cleaning (``option.numericalprecision``, 1e-8 in its examples), a weight
at most ``numerical_precision`` does not bound a step (its falling direction is dropped) and is
set to 0 after each step, the others renormalised: left at a residue such as 8e-12 it capped
every later step near 1e-14 and the search stalled far from the optimum.  Every
trial asks the oracle for ``J`` alone (one SVM on ``K(d)``, no quadratic form) and the gradient
is asked for once per step, at the point taken, as in the SimpleMKL toolbox (``mklsvm``: the
line search of ``mklsvmupdate`` compares SVM costs; ``gradsvmclass`` runs after it on the
accepted SVM's solution).
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import IncompatiblePartsError
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer, ValueAnswer
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import Domain, count, positive

logger = logging.getLogger(__name__)

GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0

#: What a line-search trial returns: the value alone, or a complete answer from an oracle
#: without the capability ``value``.
Value = OracleAnswer | ValueAnswer


def reduced_direction(d: np.ndarray, g: np.ndarray, precision: float = 0.0) -> tuple[np.ndarray, int]:
    """SimpleMKL's descent direction on the simplex at ``d`` (sums to 0), and ``mu``; a weight
    at most ``precision`` counts as 0."""
    mu = int(np.argmax(d))
    D = g[mu] - g
    D[(d <= precision) & (g > g[mu])] = 0.0
    D[mu] = 0.0
    D[mu] = -D.sum()
    return D, mu


def max_step(d: np.ndarray, D: np.ndarray) -> tuple[float, int]:
    """Largest ``gamma`` keeping ``d + gamma D >= 0`` and the index that reaches 0."""
    falling = np.flatnonzero(D < 0)
    if falling.size == 0:
        return np.inf, -1
    ratios = -d[falling] / D[falling]
    k = int(np.argmin(ratios))
    return float(ratios[k]), int(falling[k])


def at_edge(d: np.ndarray, D: np.ndarray, gamma: float) -> np.ndarray:
    """``d + gamma D`` with the weights that reach 0 there to rounding set to 0.

    Weights of kernels alike to the oracle (duplicated or constant kernels share
    a gradient) reach the edge together; left at a rounding residue (measured
    1e-33) they would cap every later step at about that size.
    """
    step = gamma * D
    edge = d + step
    edge[np.abs(edge) <= 4.0 * np.finfo(float).eps * (d + np.abs(step))] = 0.0
    return edge


@attrs.define
class ReducedGradient(OuterOptimizer):
    """SimpleMKL's reduced gradient on one simplex, with golden-section line search."""

    name = "reduced-gradient"
    line_search_tol: float = positive.field(0.1)
    #: Steps of 10x back-off after a golden search that found no decrease.
    max_backtracks: int = count.field(10)
    #: Weights at most this are 0 to the search and after each step (the toolbox's
    #: ``numericalprecision``).
    numerical_precision: float = Domain("in [0, 1e-3]", lambda v: 0 <= v <= 1e-3).field(1e-8)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> Any:
        if problem.groups is not None and int(problem.groups.max()) > 0:
            raise IncompatiblePartsError(
                "optimizer 'reduced-gradient' works on one simplex; the problem has "
                f"{int(problem.groups.max()) + 1} groups"
            )
        logger.info("reduced-gradient (SimpleMKL) takes tens to hundreds of steps, each a golden-section search "
                    "of about 7 SVMs and a pass over every kernel's support-vector rows: several times spicymkl's "
                    "time (docs/methods/mirror-vskl.md)")
        return None

    def step(
        self, point: np.ndarray, answer: OracleAnswer, state: Any, evaluate: Evaluate
    ) -> tuple[np.ndarray, OracleAnswer, Any]:
        new, found = self._search(point, answer, evaluate)
        if found is None:  # no step lowered J: the iterate stays, with its complete answer
            return point, answer, state
        if isinstance(found, OracleAnswer):  # an oracle without the capability ``value``
            return new, found, state
        # The gradient (every kernel's quadratic form) at the step taken only, as SimpleMKL's
        # toolbox computes it after its line search: the oracle completes the value it gave there.
        new = self._cleaned(new)
        return new, evaluate(new), state

    def _cleaned(self, d: np.ndarray) -> np.ndarray:
        """``d`` with the weights at most ``numerical_precision`` set to 0, renormalised."""
        small = d <= self.numerical_precision
        if not np.any(small & (d > 0)):
            return d
        cleaned = np.where(small, 0.0, d)
        return cleaned / cleaned.sum()

    def _search(
        self, point: np.ndarray, answer: OracleAnswer, evaluate: Evaluate
    ) -> tuple[np.ndarray, Value | None]:
        """The step along the reduced direction and the value there (None: no step lowered J);
        every trial asks for the value alone."""
        d, moved = point, False
        current: Value = answer
        D, mu = reduced_direction(d, answer.gradient, self.numerical_precision)
        if not np.any(D):
            return d, None
        # Go to the boundary while that lowers J.
        while True:
            gamma_max, nu = max_step(d, D)
            if nu < 0:  # rounding left no falling weight: nothing to gain
                return d, current if moved else None
            if gamma_max > 0.0:
                edge = at_edge(d, D, gamma_max)
                edge[nu] = 0.0
                edge_answer = evaluate(edge, value_only=True)
                if edge_answer.value >= current.value:
                    break
                d, current, moved = edge, edge_answer, True
            # The weight nu is at 0 (reached, or already there): drop it from the direction, with
            # any other falling weight the step left at most numerical_precision.
            D = D.copy()
            D[nu] = 0.0
            D[(d <= self.numerical_precision) & (D < 0)] = 0.0
            if nu == mu:  # the balancing weight itself hit 0: rebalance on the largest
                mu = int(np.argmax(d))
            D[mu] = 0.0
            D[mu] = -D.sum()  # D_mu += D_nu when nu != mu: sum(D) stays 0
            if not np.any(D < 0):
                return d, current if moved else None
        new, found = self._golden_section(d, D, gamma_max, current, edge_answer, evaluate)
        if found is None:
            return d, current if moved else None
        return new, found

    def _golden_section(
        self, d: np.ndarray, D: np.ndarray, gamma_max: float, at_zero: Value,
        at_max: Value, evaluate: Evaluate,
    ) -> tuple[np.ndarray, Value | None]:
        """The golden-section search on ``[0, gamma_max]``; None where no trial lowered J
        below ``at_zero`` (then the back-off)."""
        def point_at(gamma: float) -> np.ndarray:
            return np.maximum(d + gamma * D, 0.0)

        def value_at(gamma: float) -> Value:
            return evaluate(point_at(gamma), value_only=True)

        lo, hi = 0.0, gamma_max
        candidates = [(at_zero.value, 0.0, at_zero), (at_max.value, gamma_max, at_max)]
        x1, x2 = hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo)
        a1, a2 = value_at(x1), value_at(x2)
        candidates += [(a1.value, x1, a1), (a2.value, x2, a2)]
        while hi - lo > self.line_search_tol * gamma_max:
            if a1.value < a2.value:
                hi, x2, a2 = x2, x1, a1
                x1 = hi - GOLDEN * (hi - lo)
                a1 = value_at(x1)
                candidates.append((a1.value, x1, a1))
            else:
                lo, x1, a1 = x1, x2, a2
                x2 = lo + GOLDEN * (hi - lo)
                a2 = value_at(x2)
                candidates.append((a2.value, x2, a2))
        value, gamma, best = min(candidates, key=lambda c: c[0])
        if gamma > 0.0:
            return point_at(gamma), best
        # No evaluated step lowered J: back off geometrically rather than stall.
        trial = min(x for _, x, _ in candidates if x > 0.0)
        for _ in range(self.max_backtracks):
            trial *= 0.1
            answer = value_at(trial)
            if answer.value < at_zero.value:
                return point_at(trial), answer
        return d, None
