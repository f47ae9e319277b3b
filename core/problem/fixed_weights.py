"""One SVM at fixed kernel weights ``d``, as a model of families ``l1_mkl_sq`` and ``vskl``.

The SVM on ``K(d) = sum_m d_m K_m`` (the registered SVM solver part) gives ``alpha`` and ``b``;
with ``beta = alpha * y`` the model is ``coef_m = d_m beta`` (``f_m = d_m K_m beta``), its family
objective (OBJECTIVES.md families 2 and 3, norms ``||f_m||^2 = d_m^2 beta' K_m beta``) an upper
bound on the optimum, and ``H(alpha)`` (:func:`~kernelfuse.problem.duality.vskl_lower_bound`) a
certified lower bound: the gap says how far ``d`` is from the MKL optimum.  Used by the baselines
that choose ``d`` without the family objective (the average kernel, the two-stage methods).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.combined import combined_kernel, quadratic_forms
from kernelfuse.parts.svm_solver import SVMSolver
from kernelfuse.problem.duality import vskl_lower_bound
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.objectives import evaluate_parts


@attrs.frozen
class WeightedSVM:
    """The model of one SVM at fixed weights, its objective, its lower bound, and the stack's
    passes it read (the combined kernel's, then the quadratic forms' one)."""

    coef: np.ndarray
    intercept: float
    objective: float
    lower_bound: float
    kernel_passes: float


def svm_at_weights(problem: Problem, d: np.ndarray, svm_solver: SVMSolver) -> WeightedSVM:
    """The SVM on ``K(d)``, reported in the units of ``problem``'s family (``l1_mkl_sq``, or
    ``vskl`` with its groups and ``q``)."""
    K, y = problem.K, problem.y
    K_d, fraction = combined_kernel(K, d)
    solution = svm_solver.solve(K_d, y, problem.params["C"])
    beta = solution.alpha * y
    a = quadratic_forms(K, beta)
    coef = d[:, None] * beta[None, :]
    objective = evaluate_parts(problem, coef, K_d @ beta + solution.intercept, d**2 * a)
    groups = problem.groups if problem.groups is not None else np.zeros(K.shape[0], int)
    lower = vskl_lower_bound(solution.alpha, a, groups, problem.params.get("q", 1.0))
    return WeightedSVM(coef, solution.intercept, objective, lower, 1.0 + fraction)
