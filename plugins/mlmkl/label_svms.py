"""One SVM per label on the shared combined kernel: the full-gradient oracle of ML-MKL (Bucak, Jin and Jain, section 2).

Family 6 of OBJECTIVES.md: at a point p of the simplex the oracle solves every label's SVM
``SVM_k(p)`` on ``K(p) = sum_m p_m K_m`` (no intercept, warm-started) and answers the value
(``sum_k SVM_k`` for ``mlmkl_sum``, ``max_k SVM_k`` for ``mlmkl_max``), its Danskin
(sub)gradient from ``A[m, k] = beta_k' K_m beta_k``, the primal model ``d = p``,
``coef[m, k] = p_m beta_k``, and the certified bound ``sum_k gamma_k 1'a_k - 0.5 max_m sum_k
gamma_k A[m, k]`` (``gamma = 1`` for the sum, the best gamma by a linear programme for the max,
:func:`kernelfuse.problem.duality.max_family_lower_bound`), and for the sum its Hessian as a
factor on demand (:func:`sum_curvature`: ``mlmkl-sum``'s projected Newton steps).  A query is
two passes over the stack and L SVMs, which
``n_jobs`` solves at once, in threads by default (they share ``K(p)``; measured in
docs/parallel.md).  :meth:`LabelSVMs.solve` is the step the class sampler shares.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs
import numpy as np
import scipy.linalg

from kernelfuse.assembly.requirements import part_with
from kernelfuse.kernels.combined import combined_kernel, expansion_products
from kernelfuse.numerics.svm_curvature import margin_support_vectors, svm_curvature_factor
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import max_family_lower_bound, weighted_lower_bound
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import check, expired
from kernelfuse.runtime.parallel import check_n_jobs, map_jobs
from kernelfuse.validation import flag


def solve_label_svm(svm_solver: SVMSolver, K_p: np.ndarray, y: np.ndarray, C: float,
                    warm_start: SVMSolution | None) -> SVMSolution:
    """One label's SVM on ``K(p)``, without intercept (a job of :func:`kernelfuse.runtime.parallel.map_jobs`).

    Past the solve's deadline: inside an outer step,
    :class:`~kernelfuse.runtime.deadline.DeadlineReached`; in an answer that must be complete (the
    first, or the final one at an averaged estimate), no solve: the label's last solution, or
    ``a = 0``, with ``converged=False``.  Either is feasible (``[0, C]^N`` does not depend on
    ``p``), so the answer's lower bound stays valid and its model finite.
    """
    check()
    if expired():
        start = SVMSolution(np.zeros(y.shape[0]), 0.0) if warm_start is None else warm_start
        return attrs.evolve(start, converged=False, n_iter=0)
    return svm_solver.solve(K_p, y, C, intercept=False, warm_start=warm_start)


@attrs.frozen(eq=False)
class LabelSolutions:
    """The SVMs of some labels at one point: duals ``alpha`` (N, n), ``beta = alpha * Y``,
    ``A`` (M, n) the quadratic forms, ``products`` (M, N, n) the ``K_m beta`` of the same pass,
    ``values`` the SVM optima, and the kernel passes read."""

    labels: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    A: np.ndarray
    products: np.ndarray
    values: np.ndarray
    passes: float


def expansion_model(problem: Problem, p: np.ndarray, beta: np.ndarray, products: np.ndarray,
                    A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The model ``coef[m, k] = p_m beta_k`` at the kernel weights ``p``, its decision values and
    squared norms (the parts :func:`~kernelfuse.problem.objectives.evaluate_parts` reads), from
    the products ``K_m beta_k`` (M, N, L) and forms ``A`` (M, L): no pass over the stack.  The
    duals may come from other weights than ``p`` (solved earlier): the model is still feasible,
    so each label's objective is an upper bound on its ``SVM_k(p)``."""
    coef = p[:, None, None] * beta.T[None, :, :]
    return coef, np.einsum("m,mnk->nk", p, products), p[:, None] ** 2 * A


@attrs.define
class _State:
    problem: Problem
    warm: list[SVMSolution | None]


@attrs.define
class LabelSVMs(Oracle):
    """ML-MKL's full-gradient oracle: every label's SVM on the shared kernel ``K(p)``."""

    name = "label-svms"
    families = frozenset({"mlmkl_sum", "mlmkl_max"})
    svm_solver: SVMSolver = attrs.field(validator=part_with("solve"))
    #: Start each label's SVM from its last solution; False solves every SVM from scratch
    #: (the paper's baseline setting, for comparisons).
    warm_start: bool = flag.field(True)
    #: Workers solving the labels' SVMs at once (None or 1: one by one; -1: every core; a
    #: ``joblib.parallel_config`` backend applies, Dask included).
    n_jobs: int | None = attrs.field(default=None)

    @n_jobs.validator
    def _check_n_jobs(self, attribute: attrs.Attribute, value: int | None) -> None:
        check_n_jobs(value)

    def init(self, problem: Problem) -> tuple[np.ndarray, _State]:
        M, L = problem.n_kernels, problem.n_outputs
        return np.full(M, 1.0 / M), _State(problem, [None] * L)

    def solve(self, p: np.ndarray, labels: Sequence[int], state: _State) -> tuple[LabelSolutions, _State]:
        """The SVMs of ``labels`` on ``K(p)``, each warm-started from its last solution."""
        problem = state.problem
        K_p, fraction = combined_kernel(problem.K, p)
        warm = list(state.warm)
        index = np.asarray(labels, dtype=int)
        jobs = [(self.svm_solver, K_p, problem.y[:, k], problem.params["C"],
                 warm[k] if self.warm_start else None) for k in index]
        for k, solution in zip(index, map_jobs(solve_label_svm, jobs, self.n_jobs, prefer="threads")):
            warm[k] = solution
        alpha = np.stack([warm[k].alpha for k in index], axis=1)
        beta = alpha * problem.y[:, index]
        products, A = expansion_products(problem.K, beta)
        values = alpha.sum(axis=0) - 0.5 * (p @ A)
        solutions = LabelSolutions(index, alpha, beta, A, products, values, fraction + 1.0)
        return solutions, attrs.evolve(state, warm=warm)

    def truncated(self, state: _State) -> int:
        """How many labels' last solutions stopped short (their iteration bound or the deadline)."""
        return sum(w is not None and not w.converged for w in state.warm)

    def query(self, point: np.ndarray, state: _State) -> tuple[OracleAnswer, _State]:
        problem = state.problem
        L = problem.n_outputs
        s, state = self.solve(point, range(L), state)
        sums = s.alpha.sum(axis=0)
        curvature: Callable[[], np.ndarray] | None = None
        if problem.family.label_aggregate == "sum":
            value, gradient = float(s.values.sum()), -0.5 * s.A.sum(axis=1)
            lower = weighted_lower_bound(sums, s.A, np.ones(L))
            curvature = lambda: sum_curvature(problem, point, s)  # noqa: E731
        else:
            worst = int(np.argmax(s.values))
            value, gradient = float(s.values[worst]), -0.5 * s.A[:, worst]
            lower = max_family_lower_bound(sums, s.A)
        coef, f, sq = expansion_model(problem, point, s.beta, s.products, s.A)
        objective = objectives.evaluate_parts(problem, coef, f, sq, point)
        top = point.max()
        answer = OracleAnswer(
            value=value, gradient=gradient, coef=coef, objective=objective,
            kernel_weights=point.copy(), lower_bound=lower if math.isfinite(lower) else math.nan,
            counters={"svm_calls": L, "kernel_passes": s.passes, "oracle_calls": 1,
                      "svm_truncated": self.truncated(state)},
            active_kernels=int(np.sum(point > 1e-6 * top)),
            curvature=curvature,
        )
        return answer, state


def sum_curvature(problem: Problem, p: np.ndarray, s: LabelSolutions) -> np.ndarray:
    """A factor ``R`` (at most M x M) of the Hessian of ``sum_k SVM_k(p)``: each label's
    (:func:`~kernelfuse.numerics.svm_curvature.svm_curvature_factor`, no intercept) stacked, reduced
    by a QR decomposition.  ``K(p)`` is formed again (one pass, only when a second-order step
    asks: keeping the query's would raise its peak memory by N x N).  The maximum of
    ``mlmkl_max`` has none (it is not smooth where labels tie)."""
    K_p, _ = combined_kernel(problem.K, p)
    factors = []
    for j in range(s.labels.size):
        free = margin_support_vectors(s.alpha[:, j], problem.params["C"])
        factors.append(svm_curvature_factor(K_p[np.ix_(free, free)], s.products[:, free, j],
                                            intercept=False))
    R = np.vstack(factors)
    return R if R.shape[0] <= R.shape[1] else scipy.linalg.qr(R, mode="r", check_finite=False)[0][: R.shape[1]]
