"""``TwoStageMKL``: the solver assembled from a kernel-weight criterion and one SVM.

A two-stage method (Cortes, Mohri and Rostamizadeh, "Two-stage learning kernel algorithms",
ICML 2010) chooses the kernel weights ``d`` on the simplex by its own criterion
(:meth:`TwoStageMKL.weights`), then fits one SVM on ``K(d) = sum_m d_m K_m`` (the registered
SVM solver part): ``alpha`` and ``b`` of ``min_alpha 1/2 beta' K(d) beta - sum_i alpha_i``,
``0 <= alpha_i <= C``, ``y'alpha = 0``, ``beta = alpha * y``.  The average kernel (uniform
``d``), the two-stage methods of MKLpy and contrib's centred alignment are each one subclass.

The model is reported in the units of the family asked for (``l1_mkl_sq``, OBJECTIVES.md family
2, or ``vskl`` where a subclass lists it): ``coef_m = d_m beta`` (so ``f_m = d_m K_m beta``), the
SVM's intercept, the kernel weights ``d``, the family objective at that model (an upper bound on
the family's optimum) and, as ``dual_objective``, the certified lower bound ``H(alpha)`` of the
family at the SVM's ``alpha`` (:func:`kernelfuse.svm_at_weights`).  ``gap`` thus says how far the
method's weights are from the MKL optimum of the family, as information: the method optimises
its own criterion, not the family objective, so a run that took all of its own steps ends
``completed`` (no warning; the message gives the gap), and ``converged`` where that certified
gap is at most ``tol`` (the weights are then an MKL optimum).  An iterative method (GRAM, MEMO,
R-MKL) whose own steps the solve's ``time_limit`` ended reports ``time_limit``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.result import History
from kernelfuse.assembly.solver import Model, Solver
from kernelfuse.parts.svm_solver import SVMSolver
from kernelfuse.problem.fixed_weights import svm_at_weights
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import positive, positive_count


def simplex_weights(scores: np.ndarray) -> np.ndarray:
    """Non-negative ``scores`` divided by their sum (uniform where they are all 0)."""
    total = float(scores.sum())
    return scores / total if total > 0 else np.full(scores.size, 1.0 / scores.size)


@attrs.frozen
class KernelWeights:
    """A method's kernel weights ``d`` (on the simplex) and how it reached them."""

    d: np.ndarray
    #: The work they took (history counters: svm_calls, kernel_passes, ...).
    counters: dict[str, float] = attrs.field(factory=dict)
    #: The method's own steps (1 for a one-step method).
    n_iter: int = 1
    #: Whether the solve's deadline ended the method's steps (status ``time_limit``).
    cut: bool = False
    #: What the method's own criterion did, for the message.
    note: str = ""


@attrs.define
class TwoStageMKL(Solver):
    """Kernel weights by the method's criterion (:meth:`weights`), then one SVM on the combined
    kernel, reported in the family's units; a subclass names itself and defines :meth:`weights`."""

    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl_sq"})
    svm_solver: SVMSolver
    #: The certified relative gap below which the method's weights count as the MKL optimum.
    tol: float = positive.field(1e-6)
    blas_threads: int | None = positive_count.or_none("the process setting").field(1)

    def parts(self) -> dict[str, object]:
        return {"svm_solver": self.svm_solver}

    @abstractmethod
    def weights(self, problem: Problem) -> KernelWeights:
        """The kernel weights by the method's criterion."""

    def run(self, problem: Problem, history: History) -> Model:
        learnt = self.weights(problem)
        d, work = learnt.d, learnt.counters
        fit = svm_at_weights(problem, d, self.svm_solver)
        counters: dict[str, Any] = {**work, "svm_calls": work.get("svm_calls", 0) + 1,
                                    "kernel_passes": work.get("kernel_passes", 0) + fit.kernel_passes}
        gap = history.record(fit.objective, fit.lower_bound, **counters).gap
        criterion = f"its own criterion: {learnt.note}" if learnt.note else "its own criterion"
        return Model(coef=fit.coef, intercept=fit.intercept, kernel_weights=d, dual_objective=fit.lower_bound,
                     n_iter=learnt.n_iter, status="time_limit" if learnt.cut else "completed",
                     message=f"{self.name} kernel weights ({criterion}), then one SVM: certified gap "
                             f"{gap:.3g} to the {problem.family.name} optimum (tol={self.tol:g})")
