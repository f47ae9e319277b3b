"""MIKL's second-order optimiser: proximal Newton on the primal, inner steps on a working set.

``P(alpha) = L(A alpha) + g(alpha)`` (OBJECTIVES.md family 5; ``L`` the squared hinge, ``g`` the
mixed norm).  ``L`` is C^1 with a piecewise-linear gradient; at ``f = A alpha`` its generalised
Hessian is ``2 A_S' A_S``, ``S = {i : y_i f_i < 1}`` the margin violators.  A step solves the model
(Lee, Sun and Saunders' proximal Newton; the forward-backward splitting of Kowalski, Szafranski and
Ralaivola, section 3, applied to it instead of to ``P``)

``min_d  <G, d> + ||A_S d||^2 + g(alpha + d)``,  ``G = A' L'(f)`` the oracle's gradient,

by a semismooth Newton augmented Lagrangian in the model's dual (:mod:`.model_augmented_lagrangian`:
Newton systems of the violators' size, the prox's generalised Jacobian) over a working set of
entries, then takes ``alpha + t d`` with ``t`` the first of ``1, 1/2, ...`` with
``P(alpha + t d) <= P(alpha) + sigma t Delta``, ``Delta = <G, d> + g(alpha + d) - g(alpha)``.

The working set (:func:`_working_set`): the units that can be non-zero at the optimum are groups
for p = 2 (a sample's row of ``alpha`` for r = 1, a kernel's column for r = 2; zero iff
``||G_g||_2 <= lam``) and entries for p = 1 (zero iff ``|G_e| <= lam``, or ``lam ||alpha_g||_1``
for the elitist lasso); ``l2`` zeroes nothing.  The model moves the non-zero units and the largest
violators, at most a quarter as many more entries (at least 5 groups' worth); the others stay 0, and
where they satisfy their condition the step is the model's optimum (else the next step takes them
in).  The model reads the working entries' columns of the violators once, ``B = K[t, i, S]``; each
read of ``B`` (a product, or the Gram matrices formed) costs ``entries |S| / (M N^2)`` of a pass,
added to the history's ``kernel_passes`` (the oracle's line-search answers count their own).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.products import transpose_product
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.plugins.mikl.model_augmented_lagrangian import solve_model
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import mikl_penalty
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.regularizers import MixedLpq
from kernelfuse.runtime.deadline import expired
from kernelfuse.validation import below_one, flag, positive_count

#: The working set gains at most this fraction of its non-zero entries a step, and at least MIN_GROWTH groups' worth.
GROWTH, MIN_GROWTH = 0.25, 5
#: Sufficient decrease of the line search (Armijo's sigma), and its bound on halvings.
SIGMA, MAX_HALVINGS = 1e-4, 30
#: Relative round-off below which a trial's objective counts as no increase.
ROUNDOFF = 1e-13


@attrs.define
class NewtonState:
    problem: Problem
    #: The problem's penalty ``g``.
    penalty: MixedLpq
    f: np.ndarray
    #: Cumulative: stack reads of the Newton steps (pass units), inner iterations.
    passes: float = 0.0
    inner: int = 0
    #: The last model's size: working entries, and violators ``|S|``.
    working_set: int = 0
    violators: int = 0


def _working_set(penalty: MixedLpq, point: np.ndarray, gradient: np.ndarray, screen: bool) -> np.ndarray:
    """The entries of ``coef`` (M, N) the model moves, as a mask: units (groups for p = 2, entries
    for p = 1) that are non-zero, and those violating their zero condition, largest first, at most
    GROWTH times the non-zero entries (at least MIN_GROWTH groups' worth)."""
    if not screen or (penalty.p == 2.0 and penalty.q == 2.0):
        return np.ones(point.shape, dtype=bool)
    axis = 0 if penalty.r == 1.0 else 1  # r = 1: a group is a sample (a column of coef)
    size = point.shape[axis]
    if penalty.p == 2.0:  # groups: zero iff ||G_g||_2 <= lam
        score = np.linalg.norm(gradient, axis=axis) / penalty.weight
        used = np.any(point != 0, axis=axis)
        unit = size
    else:  # entries: zero iff |G_e| <= lam (q = 1), or lam ||alpha_g||_1 (q = 2, the elitist lasso)
        scale = penalty.weight * (np.abs(point).sum(axis=axis, keepdims=True) if penalty.q == 2.0 else 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(gradient != 0, np.abs(gradient) / scale, 0.0)
        used = point != 0
        unit = 1
    candidates = np.flatnonzero(~used & (score > 1.0))
    grow = max(MIN_GROWTH * size, int(GROWTH * np.count_nonzero(point))) // unit
    keep = np.zeros(used.size, dtype=bool)
    keep[candidates[np.argsort(-score.ravel()[candidates])[:grow]]] = True
    keep = keep.reshape(used.shape) | used
    return (np.broadcast_to(np.expand_dims(keep, axis), point.shape).copy() if penalty.p == 2.0 else keep)


@attrs.define
class ProximalNewton(OuterOptimizer):
    """Proximal Newton on ``L + g`` with the squared hinge's generalised Hessian ``2 A_S' A_S``."""

    name: ClassVar[str] = "proximal-newton"
    #: The inner solve stops at this fraction of the model's gradient mapping at ``alpha``.
    forcing: float = below_one.field(0.03)
    #: Newton steps of one inner solve, at most.
    inner_max_iter: int = positive_count.field(200)
    #: Solve the model over a working set of the units that can be non-zero (groups for p = 2, entries for p = 1).
    working_set: bool = flag.field(True)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> NewtonState:
        f = objectives.decision_values(objectives.kernel_products(problem.K, point))
        return NewtonState(problem, mikl_penalty(problem), f, passes=1.0)

    def readings(self, state: NewtonState) -> dict[str, float]:
        return {"inner_iterations": state.inner, "working_set": state.working_set,
                "violators": state.violators}

    def counters(self, state: NewtonState) -> dict[str, float]:
        return {"kernel_passes": state.passes}

    def step(self, point: np.ndarray, answer: OracleAnswer, state: NewtonState,
             evaluate: Evaluate) -> tuple[np.ndarray, OracleAnswer, NewtonState]:
        problem, penalty = state.problem, state.penalty
        K, y = problem.K, problem.y
        M, N = point.shape
        S = np.flatnonzero(y * state.f < 1.0)
        mask = _working_set(penalty, point, answer.gradient, self.working_set)
        T, R = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        block = np.ix_(T, R)
        kernels, samples = np.nonzero(mask)
        whole = bool(mask[block].all())  # p = 2 and l2: whole groups, the block is the working set
        # B' (entries, |S|) in the stack's dtype: the model's products cast it by blocks
        rows = np.asarray(K[np.ix_(T, R, S)] if whole else K[kernels[:, None], samples[:, None], S[None, :]])
        rows = rows.reshape(kernels.size, S.size)
        fraction = kernels.size * S.size / (M * N * N)
        z, iterations, products = solve_model(penalty, answer.gradient[block], rows, point[block], mask[block],
                                              self.forcing, self.inner_max_iter)
        direction = np.zeros_like(point)
        direction[block] = z - point[block]
        change = np.zeros(N)  # f's change: sum over the working entries (t, i) of direction[t, i] K[t, i, :]
        for kernel in T:
            working = np.flatnonzero(mask[kernel])
            rows_of_kernel = K[kernel] if working.size == N else K[kernel][working]
            change += transpose_product(rows_of_kernel, direction[kernel, working])
        state.passes += fraction * (1 + products) + kernels.size / (M * N)
        state.inner += iterations
        state.working_set, state.violators = kernels.size, S.size
        current = penalty.value(point.T)
        decrease = float(np.sum(answer.gradient * direction)) + penalty.value((point + direction).T) - current
        slack = ROUNDOFF * max(1.0, abs(answer.objective))  # an equal objective is not an increase
        t = 1.0
        for _ in range(MAX_HALVINGS):
            trial = point + t * direction
            trial_answer = evaluate(trial)
            if trial_answer.objective <= answer.objective + SIGMA * t * min(decrease, 0.0) + slack:
                state.f = state.f + t * change
                return trial, trial_answer, state
            if expired():
                break
            t *= 0.5
        return point, answer, state  # no decrease along the step: the loop reports 'stalled'

