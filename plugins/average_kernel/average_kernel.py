"""The average-kernel SVM: the baseline every MKL paper compares with.

An SVM on ``K_avg = (1/M) sum_m K_m`` (uniform kernel weights, nothing
learnt; MKLpy's ``AverageMKL``).  Its model is reported in the units of the family asked for
(``l1_mkl_sq`` or ``vskl``): ``coef_m = (alpha * y) / M``, the kernel weights
``d_m = 1/M``, the SVM's intercept, and the family objective at that model.  Its ``dual_objective``
is the certified bound ``H(alpha)`` at the SVM's ``alpha``
(:mod:`kernelfuse.problem.fixed_weights`), so ``gap`` says how far the average kernel is from
the MKL optimum of the family, as information: the baseline does not optimise the family
objective, and ends ``completed`` once its SVM is solved (no warning), ``converged`` where that
certified gap is at most ``tol`` (uniform weights are then optimal).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.result import History
from kernelfuse.assembly.solver import Model, Solver
from kernelfuse.parts.svm_solver import SVMSolver
from kernelfuse.problem.fixed_weights import svm_at_weights
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
        d = np.full(problem.n_kernels, 1.0 / problem.n_kernels)
        fit = svm_at_weights(problem, d, self.svm_solver)
        gap = history.record(fit.objective, fit.lower_bound, svm_calls=1, kernel_passes=fit.kernel_passes).gap
        return Model(coef=fit.coef, intercept=fit.intercept, kernel_weights=d,
                     dual_objective=fit.lower_bound, n_iter=1, status="completed",
                     message="uniform kernel weights: the SVM on the mean kernel, certified gap "
                             f"{gap:.3g} to the MKL optimum (tol={self.tol:g})")
