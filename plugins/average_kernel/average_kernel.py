"""The average-kernel SVM: the baseline every MKL paper compares with.

An SVM on ``K_avg = (1/M) sum_m K_m`` (uniform kernel weights, nothing
learnt; MKLpy's ``AverageMKL``).  Its model is reported in the units of the family asked for
(``l1_mkl_sq`` or ``vskl``): ``coef_m = (alpha * y) / M``, the kernel weights
``d_m = 1/M``, the SVM's intercept, and the family objective at that model.  Its ``dual_objective``
is the certified bound ``H(alpha)`` of :mod:`kernelfuse.plugins.mirror_vskl.vskl_bca`
at the SVM's ``alpha``, so ``gap`` says how far the average kernel is from
the MKL optimum of the family.  ``status`` is ``converged`` only when that
certified gap is at most ``tol`` (uniform weights are then optimal);
otherwise ``max_iter``: the baseline takes no step on the kernel weights
(as an MKL solver run with ``max_iter = 0``), and the message gives the gap.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.result import History, relative_gap
from kernelfuse.assembly.solver import Model, Solver
from kernelfuse.parts.svm_solver import SVMSolver
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import positive, positive_count


@attrs.define
class AverageKernelSVM(Solver):
    """SVM on the mean kernel (uniform weights), reported in l1_mkl_sq or vskl units."""

    name: ClassVar[str] = "average"
    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl_sq", "vskl"})
    svm_solver: SVMSolver
    #: The certified relative gap below which the uniform weights count as the MKL optimum.
    tol: float = positive.field(1e-6)
    blas_threads: int | None = positive_count.or_none("the process setting").field(1)

    def parts(self) -> dict[str, object]:
        return {"svm_solver": self.svm_solver}

    def run(self, problem: Problem, history: History) -> Model:
        from kernelfuse.kernels.combined import quadratic_forms
        from kernelfuse.kernels.products import weighted_sum
        from kernelfuse.problem import objectives
        from kernelfuse.problem.duality import vskl_lower_bound

        M = problem.n_kernels
        K_avg = weighted_sum(problem.K, np.full(M, 1.0 / M))
        solution = self.svm_solver.solve(K_avg, problem.y, problem.params["C"])
        beta = solution.alpha * problem.y
        a = quadratic_forms(problem.K, beta)
        groups = problem.groups if problem.groups is not None else np.zeros(M, int)
        lower = vskl_lower_bound(solution.alpha, a, groups, problem.params.get("q", 1.0))
        coef = np.tile(beta / M, (M, 1))
        objective = objectives.evaluate_parts(
            problem, coef, K_avg @ beta + solution.intercept, a / M**2
        )
        history.record(objective, lower, svm_calls=1, kernel_passes=2)
        gap = relative_gap(objective, lower)
        return Model(coef=coef, intercept=solution.intercept, kernel_weights=np.full(M, 1.0 / M),
                     dual_objective=lower, n_iter=1,
                     status="converged" if gap <= self.tol else "max_iter",
                     message="uniform kernel weights: the SVM on the mean kernel, certified gap "
                             f"{gap:.3g} to the MKL optimum (tol={self.tol:g})")
