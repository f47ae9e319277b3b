"""SpicyMKL (Suzuki and Tomioka, 2009): dual augmented Lagrangian for ``l1_mkl``.

Proximal minimisation of ``P(alpha, b) = sum_i loss_i + C sum_m ||alpha_m||_{K_m}``
(OBJECTIVES.md family 1, ``C2 = 0``; eqs. 3-6): each outer step is

    ``(alpha, b)^{t+1} = argmin P + sum_m ||alpha_m - alpha_m^t||^2_{K_m} / (2 gamma_t) + (b - b^t)^2 / (2 gamma_t)``,

solved through its dual by Newton's method (:mod:`.inner_newton`), with the
penalty ``gamma_t`` growing geometrically (eqs. 10-11: non-decreasing
schedules give super-linear convergence).  Each outer step is certified by
the duality gap of :func:`kernelfuse.duality.l1_mkl_lower_bound` at
``rho = loss'(f)``.  Losses need a smooth conjugate on an open domain
(logistic, squared); the hinge-type losses, whose dual optimum sits on the
boundary of the conjugate's domain, need section 3.3's slack variables
(not yet here), and fail the capability check.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse import objectives
from kernelfuse.duality import l1_mkl_lower_bound
from kernelfuse.errors import IncompatiblePartsError
from kernelfuse.plugins.spicymkl.inner_newton import solve_inner
from kernelfuse.problem import Problem
from kernelfuse.prox import ProxOperator
from kernelfuse.result import History, relative_gap
from kernelfuse.solver import Model, Requirements, Solver


def _default_prox() -> ProxOperator:
    from kernelfuse.plugins.prox.block_soft_threshold import BlockSoftThreshold

    return BlockSoftThreshold(C=1.0)


@attrs.define
class SpicyMKL(Solver):
    """SpicyMKL: augmented Lagrangian on l1-MKL, Newton inner solver on active kernels only."""

    name: ClassVar[str] = "spicymkl"
    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl"})
    requires: ClassVar[Requirements] = {
        "loss": ("derivative", "conjugate", "conjugate_derivative", "conjugate_second_derivative"),
        "prox": ("prox",),
    }
    prox: ProxOperator = attrs.field(factory=_default_prox)
    tol: float = 1e-6
    max_iter: int = 50
    gamma0: float = 10.0
    growth: float = 10.0
    max_newton: int = 50
    #: Left to the process (two threads here): its cost is large passes over the
    #: stack, measured 8.8-9.2 s with two threads against 11.1 s with one on the
    #: main job's grid (N = 455, M = 837, logistic, C = 0.3, gap 1e-3).
    blas_threads: int | None = None

    def parts(self) -> dict[str, object]:
        return {"prox": self.prox}

    def _shrink(self, norms: np.ndarray, threshold: float) -> np.ndarray:
        """Block soft-threshold scale ``max(0, 1 - threshold / ||v_m||)`` via the prox part."""
        shrunk = self.prox.prox(norms[:, None], threshold)[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norms > 0, shrunk / norms, 0.0)

    def run(self, problem: Problem, history: History) -> Model:
        if problem.params["C2"] != 0.0:
            raise IncompatiblePartsError("solver 'spicymkl' solves l1_mkl with C2 = 0 for now")
        M, N = problem.n_kernels, problem.n_samples
        coef, intercept = np.zeros((M, N)), 0.0
        rho = problem.loss.derivative(problem.y, np.zeros(N))
        gamma, passes, newton, lower = self.gamma0, 0.0, 0, -np.inf
        status = "max_iter"
        for _ in range(self.max_iter):
            state = solve_inner(problem, coef, intercept, rho, gamma, gamma, self._shrink,
                                tol=1e-14, max_steps=self.max_newton)
            coef, intercept, rho = state.coef, state.intercept, state.rho
            passes += state.passes
            newton += state.newton_steps
            products, fraction = objectives.sparse_kernel_products(problem.K, coef)
            f = objectives.decision_values(products, intercept)
            objective = objectives.evaluate_parts(problem, coef, f,
                                                  objectives.squared_norms(coef, products))
            bound, cost = l1_mkl_lower_bound(problem, problem.loss.derivative(problem.y, f))
            lower = max(lower, bound)
            passes += fraction + cost
            history.record(objective, lower, kernel_passes=passes, newton_steps=newton,
                           active_kernels=int(np.sum(np.abs(coef).sum(axis=1) > 0)))
            if relative_gap(objective, lower) <= self.tol:
                status = "converged"
                break
            gamma *= self.growth
        return Model(coef=coef, intercept=intercept, dual_objective=lower,
                     n_iter=len(history.rows), status=status)


def as_recipe() -> Any:
    from kernelfuse.recipe import Recipe

    return Recipe("spicymkl", SpicyMKL, parts={"prox": ("prox", "block-soft-threshold")},
                  description="SpicyMKL: dual augmented Lagrangian with a Newton inner solver (l1_mkl, "
                              "logistic and squared losses)")
