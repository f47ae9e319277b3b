"""The block-coordinate-ascent oracle of mirrorVSKL (Aflalo et al., section 3, Algorithm 2).

Family ``vskl`` (``l1_mkl_sq`` is one group, q = 1) as
``min_{lam in product of simplices} G(lam)``, with ``t = (q - 1) / q`` and
``G(lam) = max_{alpha in S, gamma in simplex} 1'alpha - 0.5 sum_j gamma_j^(-t) sum_{k in j} lam_k a_k(alpha)``
(our derivation, docs/methods/mirror-vskl.md).  Block-coordinate ascent alternates an SVM on
``K(w)``, ``w_k = lam_k gamma_j^(-t)`` (alpha), and the closed form ``gamma_j ~ v_j^r`` (gamma).
The answer: the value ``G(lam)``, its Danskin gradient ``-0.5 gamma_j^(-t) a_k(alpha)``, the
certified bound ``H(alpha)`` (:func:`vskl_lower_bound`), the primal model and, on demand, the
curvature for the ``local-quadratic`` map.  A sweep is two passes over the stack and one SVM
(the capability ``value``, for SimpleMKL's line search: one SVM and ``K(w)`` alone, the forms
computed where a query completes it; a trial's ``K(w)`` combined from the kernels held for its
line search, :class:`~kernelfuse.kernels.combined.HeldKernels`);
``gamma_floor`` and a rounding floor on ``v_j`` keep weak or constant groups from spreading the
weights or cycling on noise (docs/reliability.md, degenerate problems).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from kernelfuse.assembly.requirements import part_with
from kernelfuse.kernels.combined import (
    HeldKernels,
    combined_kernel,
    expansion_products,
    forms_passes,
    included_kernels,
    quadratic_forms,
    worth_holding,
)
from kernelfuse.kernels.products import kernels_times
from kernelfuse.numerics.svm_curvature import margin_support_vectors, svm_curvature_factor
from kernelfuse.parts.oracle import Oracle, OracleAnswer, ValueAnswer
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import exponents, vskl_lower_bound
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import expired
from kernelfuse.validation import below_one, positive, positive_count


def _curvature(K_w: np.ndarray, alpha: np.ndarray, C: float, products: np.ndarray,
               scale: np.ndarray) -> Callable[[], np.ndarray]:
    """The factor of ``G``'s Hessian in ``lam`` at fixed gamma, on demand
    (:mod:`kernelfuse.numerics.svm_curvature`).

    With gamma held, ``w = lam * scale``; the gamma-block's own response
    only adds curvature (G is the maximum over gamma too), so for q > 1 the
    model is a lower estimate that the outer line search corrects.
    """
    free = margin_support_vectors(alpha, C)  # the slices, not K_w, outlive the query
    K_free, products_free = K_w[np.ix_(free, free)], products[:, free]
    return lambda: svm_curvature_factor(K_free, products_free, scale=scale)


#: Value answers kept for the query that completes one (a line search's step is among the latest).
KEPT_VALUES = 64


@attrs.frozen(eq=False)
class _Solved:
    """An SVM :meth:`VSKLBlockCoordinateAscent.value` solved at ``point`` (gamma fixed) and its value."""

    point: np.ndarray
    solution: SVMSolution
    value: float


@attrs.define
class _State:
    problem: Problem
    groups: np.ndarray
    q: float
    gamma: np.ndarray
    #: ``max_i K_m[i, i]`` of every kernel: the scale of the forms' rounding error.
    diagonal: np.ndarray
    svm: SVMSolution | None = None
    #: The SVMs :meth:`VSKLBlockCoordinateAscent.value` solved since the last query (the latest).
    solved: tuple[_Solved, ...] = ()
    #: Whether :meth:`VSKLBlockCoordinateAscent.value` holds the kernels it forms (a stack of
    #: enough kernels, :func:`worth_holding`).
    holds: bool = False
    #: The kernels :meth:`VSKLBlockCoordinateAscent.value` formed last, which its line search's
    #: next trials are combinations of.
    held: HeldKernels = HeldKernels()


@attrs.define
class VSKLBlockCoordinateAscent(Oracle):
    """Algorithm 2 of mirrorVSKL: SVM for alpha, closed form for gamma, until gamma settles."""

    name = "vskl-bca"
    families = frozenset({"vskl", "l1_mkl_sq"})
    svm_solver: SVMSolver = attrs.field(validator=part_with("solve"))
    #: Stop the sweeps when ``max_j |log gamma_j - log gamma_j_prev| <= bca_tol``.
    bca_tol: float = positive.field(1e-6)
    max_bca_iter: int = positive_count.field(500)
    #: Lower bound on gamma_j relative to max_j gamma_j.
    gamma_floor: float = below_one.field(1e-12)

    def init(self, problem: Problem) -> tuple[np.ndarray, _State]:
        groups = problem.groups if problem.groups is not None else np.zeros(problem.n_kernels, int)
        sizes = np.bincount(groups)
        q = problem.params.get("q", 1.0)
        point = 1.0 / sizes[groups]
        gamma = np.full(sizes.size, 1.0 / sizes.size)
        diagonal = np.array([float(np.max(np.diagonal(problem.K[m]))) for m in range(problem.n_kernels)])
        return point, _State(problem, groups, q, gamma, diagonal, holds=worth_holding(problem.K))

    def query(self, point: np.ndarray, state: _State) -> tuple[OracleAnswer, _State]:
        solved = next((kept for kept in state.solved if np.array_equal(kept.point, point)), None)
        if solved is not None:
            return self._complete(point, solved, state)
        problem, groups = state.problem, state.groups
        K, y, C = problem.K, problem.y, problem.params["C"]
        t, r = exponents(state.q)
        gamma, solution = state.gamma, state.svm
        sweeps, passes, truncated = 0, 0.0, 0
        rounding = y.shape[0] * np.finfo(float).eps * np.bincount(
            groups, weights=point * state.diagonal, minlength=gamma.size)
        while True:
            sweeps += 1
            used = gamma  # alpha, the weights and a below all belong to this gamma
            weights = point * used[groups] ** (-t)
            K_w, fraction = combined_kernel(K, weights)
            passes += fraction + 1.0
            solution = self.svm_solver.solve(K_w, y, C, warm_start=solution)
            truncated += not solution.converged
            beta = solution.alpha * y
            products, a = expansion_products(K, beta)
            if t == 0.0:
                break
            v = np.bincount(groups, weights=point * a, minlength=gamma.size)
            new = np.maximum(v, rounding * float(np.abs(beta).sum()) ** 2) ** r
            if new.max() <= 0.0:
                break  # alpha = 0: every gamma is optimal
            new = np.maximum(new, self.gamma_floor * new.max())
            gamma = new / new.sum()
            change = float(np.max(np.abs(np.log(gamma) - np.log(used))))
            if change <= self.bca_tol or sweeps >= self.max_bca_iter or expired():
                break
        scale = used[groups] ** (-t)
        value = float(solution.alpha.sum() - 0.5 * np.sum(scale * point * a))
        counters = {"svm_calls": sweeps, "bca_iterations": sweeps, "oracle_calls": 1,
                    "kernel_passes": passes, "svm_truncated": truncated}
        answer = self._answer(point, state, solution, weights, scale, a, value, counters,
                              f=K_w @ beta + solution.intercept,
                              curvature=_curvature(K_w, solution.alpha, C, products, scale))
        return answer, attrs.evolve(state, gamma=gamma, svm=solution, solved=(), held=HeldKernels())

    def value(self, point: np.ndarray, state: _State) -> tuple[ValueAnswer, _State]:
        """SimpleMKL's cost alone: ``G = 1'alpha - 0.5 beta' K(w) beta`` from one SVM on ``K(w)``,
        without the forms ``a_k`` (Rakotomamonjy et al., Algorithm 1: the line search compares SVM
        objectives; the gradient is computed at the step taken).

        Where gamma moves with the forms (several groups and q > 1), the query's own value.
        """
        t, _ = exponents(state.q)
        if t != 0.0 and state.gamma.size > 1:
            answer, state = self.query(point, state)
            return ValueAnswer(answer.value, answer.counters), state
        problem = state.problem
        y = problem.y
        weights = point * state.gamma[state.groups] ** (-t)
        if state.holds:
            K_w, fraction, held = state.held.kernel(problem.K, weights, state.diagonal)
        else:
            (K_w, fraction), held = combined_kernel(problem.K, weights), state.held
        nearest = min(state.solved, key=lambda kept: float(np.abs(kept.point - point).sum()), default=None)
        warm = state.svm if nearest is None else nearest.solution
        solution = self.svm_solver.solve(K_w, y, problem.params["C"], warm_start=warm)
        beta = solution.alpha * y
        value = float(solution.alpha.sum() - 0.5 * beta @ (K_w @ beta))
        kept = (*state.solved[-(KEPT_VALUES - 1):], _Solved(np.array(point, copy=True), solution, value))
        counters = {"svm_calls": 1, "bca_iterations": 1, "oracle_calls": 1,
                    "kernel_passes": fraction, "svm_truncated": int(not solution.converged)}
        return ValueAnswer(value, counters), attrs.evolve(state, svm=solution, solved=kept, held=held)

    def _complete(self, point: np.ndarray, solved: _Solved, state: _State) -> tuple[OracleAnswer, _State]:
        """The full answer where :meth:`value` solved the SVM: the forms ``a_k`` (the gradient
        SimpleMKL computes at each accepted step) and ``f``, no second SVM: from the rows of the
        support vectors of every kernel (:func:`quadratic_forms`) and the model's kernels where
        that reads less than one pass, else both from one pass."""
        problem, groups, solution = state.problem, state.groups, solved.solution
        t, _ = exponents(state.q)
        scale = state.gamma[groups] ** (-t)
        weights = point * scale
        beta = solution.alpha * problem.y
        kept = included_kernels(weights)
        passes = forms_passes(problem.K, beta) + kept.size / weights.size
        if passes < 1.0:  # the forms from the support vectors' rows, f from the model's kernels
            a = quadratic_forms(problem.K, beta)
            f = weights[kept] @ kernels_times(problem.K, beta, kept) + solution.intercept
        else:  # both from one pass
            products, a = expansion_products(problem.K, beta)
            f = weights[kept] @ products[kept] + solution.intercept
            passes = 1.0

        def curvature() -> np.ndarray:  # K(w) and every product formed only if a second-order step asks
            K_w, _ = combined_kernel(problem.K, weights)
            products, _ = expansion_products(problem.K, beta)
            return _curvature(K_w, solution.alpha, problem.params["C"], products, scale)()

        counters = {"svm_calls": 0, "bca_iterations": 0, "oracle_calls": 0,
                    "kernel_passes": passes, "svm_truncated": 0}
        answer = self._answer(point, state, solution, weights, scale, a, solved.value, counters,
                              f=f, curvature=curvature)
        held = state.held.anchored(weights, state.diagonal) if state.holds else state.held
        return answer, attrs.evolve(state, svm=solution, solved=(), held=held)

    def _answer(self, point: np.ndarray, state: _State, solution: SVMSolution, weights: np.ndarray,
                scale: np.ndarray, a: np.ndarray, value: float,
                counters: dict[str, float], f: np.ndarray,
                curvature: Callable[[], np.ndarray]) -> OracleAnswer:
        """The answer at ``point`` from the SVM on ``K(w)``, ``w = point * scale``: the Danskin
        gradient, the bound ``H(alpha)`` and the primal model with its objective."""
        beta = solution.alpha * state.problem.y
        used_weights = np.zeros_like(weights)  # the kernels K_w holds: the model is the SVM's
        kept = included_kernels(weights)
        used_weights[kept] = weights[kept]
        coef = used_weights[:, None] * beta[None, :]
        return OracleAnswer(
            value=value,
            gradient=-0.5 * scale * a,
            coef=coef,
            intercept=solution.intercept,
            kernel_weights=used_weights / used_weights.sum(),  # f = sum_m d_m K_m beta
            objective=objectives.evaluate_parts(state.problem, coef, f, used_weights**2 * a),
            lower_bound=vskl_lower_bound(solution.alpha, a, state.groups, state.q),
            counters=counters,
            active_kernels=int(np.sum(weights > 1e-6 * weights.max())) if weights.max() > 0 else 0,
            curvature=curvature,
        )
