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

import math
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.products import kernel_times
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.plugins.mikl.mixed_norm_prox import MixedNormProx
from kernelfuse.problem import objectives
from kernelfuse.problem.instance import Problem


def penalty_of(problem: Problem) -> MixedNormProx:
    """The mixed-norm penalty of a ``mikl`` problem."""
    params = problem.params
    return MixedNormProx(lam=params["lam"], p=params["p"], q=params["q"], r=params["r"])


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
        return np.zeros(problem.coef_shape), (problem, penalty_of(problem))

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
            lower_bound=self.dual_bound(problem, penalty, u, gradient),
            counters={"kernel_passes": 2.0},
            active_kernels=int(np.count_nonzero(np.any(point != 0, axis=1))),
        ), state

    @staticmethod
    def dual_bound(problem: Problem, penalty: MixedNormProx, u: np.ndarray, gradient: np.ndarray) -> float:
        s = problem.y * u  # <= 0 on the conjugate's domain
        linear, quadratic = float(s.sum()), float(s @ s) / 4.0
        v = -gradient.T  # -A'u in the layout of alpha
        cap = math.inf
        if penalty.q == 1.0:
            top = penalty.regularizer.dual_norm(v)
            cap = penalty.lam / top if top > 0 else math.inf
        else:
            quadratic += penalty.conjugate(v)
        c = min(cap, -linear / (2.0 * quadratic)) if quadratic > 0 else (cap if linear < 0 else 0.0)
        if not math.isfinite(c):
            c = 0.0
        return float(-problem.loss.conjugate(problem.y, c * u).sum() - penalty.conjugate(c * v))
