"""MIKL's oracle: the smooth part of ``mikl`` at a model, its gradient, and a duality gap (section 3).

Family ``mikl`` (OBJECTIVES.md family 5) is ``P(alpha) = L(A alpha) + g(alpha)`` with
``A alpha = f = sum_t K[t]' coef[t]`` (the kernels may be indefinite and non-symmetric), ``L`` the
squared hinge and ``g`` the mixed norm (:mod:`.mixed_norm_prox`).  At ``coef`` the oracle answers
with ``L``, its gradient ``A' L'(f)`` and ``P``: two passes over the kernels.  The lower bound is
Fenchel's dual ``D(c u) = -sum_i L*_i(c u_i) - g*(-c A' u)`` at ``u = L'(f)`` scaled by its best
``c >= 0`` (a quadratic in ``c``; for ``q = 1`` capped to the dual ball): free once the gradient
is known, and exact at the optimum (``c = 1``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.products import kernel_times
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import mikl_lower_bound, mikl_penalty
from kernelfuse.problem.instance import Problem


def adjoint(K: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``A' u``: ``K[t] @ u`` for every kernel, shape (M, N) (the layout of ``coef``)."""
    return kernel_times(K, u)


@attrs.define
class SquaredHingeGradient(Oracle):
    """``L(A alpha)``, its gradient and the objective of ``mikl``, with a duality gap."""

    name: ClassVar[str] = "squared-hinge-gradient"
    families: ClassVar[frozenset[str]] = frozenset({"mikl"})
    requires: ClassVar[dict[str, tuple[str, ...]]] = {"loss": ("derivative", "conjugate")}

    def init(self, problem: Problem) -> tuple[np.ndarray, Any]:
        return np.zeros(problem.coef_shape), (problem, mikl_penalty(problem))

    def query(self, point: np.ndarray, state: Any) -> tuple[OracleAnswer, Any]:
        problem, penalty = state
        products = objectives.kernel_products(problem.K, point)
        f = objectives.decision_values(products)
        smooth = problem.loss.total(problem.y, f)
        u = problem.loss.derivative(problem.y, f)
        gradient = adjoint(problem.K, u)
        objective = objectives.evaluate_parts(problem, point, f, objectives.squared_norms(point, products))
        return OracleAnswer(
            value=smooth, gradient=gradient, coef=point, objective=objective,
            lower_bound=mikl_lower_bound(problem, penalty, u, gradient),
            counters={"kernel_passes": 2.0},
            active_kernels=int(np.count_nonzero(np.any(point != 0, axis=1))),
        ), state
