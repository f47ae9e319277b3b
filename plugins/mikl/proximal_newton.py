"""MIKL's second-order optimiser: proximal Newton on the primal, inner steps on a working set.

``P(alpha) = L(A alpha) + g(alpha)`` (OBJECTIVES.md family 5; ``L`` the squared hinge, ``g`` the
mixed norm).  ``L`` is C^1 with a piecewise-linear gradient; at ``f = A alpha`` its generalised
Hessian is ``2 A_S' A_S``, ``S = {i : y_i f_i < 1}`` the margin violators.  A step solves the model
(Lee, Sun and Saunders' proximal Newton; the forward-backward splitting of Kowalski, Szafranski and
Ralaivola, section 3, applied to it instead of to ``P``)

``min_d  <G, d> + ||A_S d||^2 + g(alpha + d)``,  ``G = A' L'(f)`` the oracle's gradient,

by accelerated proximal gradient (FISTA with gradient restart, the prox of ``g`` per step) over a
working set of groups, then takes ``alpha + t d`` with ``t`` the first of ``1, 1/2, ...`` with
``P(alpha + t d) <= P(alpha) + sigma t Delta``, ``Delta = <G, d> + g(alpha + d) - g(alpha)``.

The working set: for ``q = 1`` a group (a sample's row of ``alpha`` for ``r = 1``, a kernel's
column for ``r = 2``) is zero at the optimum iff ``||G_g||_{p*} <= lam``; the model is solved over
the non-zero groups and at most a quarter as many more (at least 5) of the groups violating the
condition, the largest ``||G_g||_{p*}`` first (for ``q = 2`` every group), the others held at 0: where every held
group satisfies the condition the step is the model's optimum, and otherwise the next step's working
set takes the violators in.  The model reads the kernel entries of the working set's rows and the violators' columns
once, ``B = K[T, R, S]``; its products cost ``|T| |R| |S| / (M N^2)`` of a pass each, counted in the
reading ``newton_passes`` (the oracle's line-search answers count their own ``kernel_passes``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.recipe import part_with
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.plugins.mikl.mixed_norm_prox import MixedNormProx
from kernelfuse.plugins.mikl.squared_hinge_gradient import problem_penalty
from kernelfuse.problem import objectives
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import expired
from kernelfuse.validation import below_one, flag, positive_count

#: The working set gains at most this fraction of its non-zero groups a step, and at least MIN_GROWTH.
GROWTH, MIN_GROWTH = 0.25, 5
#: Sufficient decrease of the line search (Armijo's sigma), and its bound on halvings.
SIGMA, MAX_HALVINGS = 1e-4, 30
#: Relative round-off below which a trial's objective counts as no increase.
ROUNDOFF = 1e-13
#: Power iterations for the model's Lipschitz constant, and the safety factor on the estimate.
POWER_ITERATIONS, LIPSCHITZ_MARGIN = 30, 1.1


@attrs.define
class NewtonState:
    problem: Problem
    prox: MixedNormProx
    f: np.ndarray
    #: Cumulative: stack reads of the Newton steps (pass units), inner iterations.
    passes: float = 0.0
    inner: int = 0
    working_set: int = 0
    violators: int = 0


def _groups(state: NewtonState, point: np.ndarray, gradient: np.ndarray, screen: bool
            ) -> tuple[np.ndarray, np.ndarray]:
    """The working set as (kernels T, samples R) of ``coef`` (M, N)."""
    M, N = point.shape
    T, R = np.arange(M), np.arange(N)
    prox = state.prox
    if not screen or prox.q != 1.0:
        return T, R
    axis = 0 if prox.r == 1.0 else 1  # r = 1: a group is a sample (a column of coef)
    dual = np.abs(gradient).max(axis=axis) if prox.p == 1.0 else np.linalg.norm(gradient, axis=axis)
    used = np.any(point != 0, axis=axis)
    candidates = np.flatnonzero(~used & (dual > prox.lam))
    grow = max(MIN_GROWTH, int(GROWTH * np.count_nonzero(used)))
    added = candidates[np.argsort(-dual[candidates])[:grow]]
    keep = np.union1d(np.flatnonzero(used), added)
    return (T, keep) if prox.r == 1.0 else (keep, R)


def _lipschitz(B: np.ndarray, seed: int = 0) -> tuple[float, int]:
    """``2 ||B||^2`` by power iteration (overestimated by LIPSCHITZ_MARGIN), and the products used."""
    v = np.random.default_rng(seed).normal(size=B.shape[1])
    estimate, products = 0.0, 0
    for _ in range(POWER_ITERATIONS):
        norm = np.linalg.norm(v)
        if norm == 0:
            break
        w = B.T @ (B @ (v / norm))
        products += 2
        new = float(np.linalg.norm(w))
        v = w
        if abs(new - estimate) <= 1e-3 * new:
            estimate = new
            break
        estimate = new
    return 2.0 * LIPSCHITZ_MARGIN * estimate, products


def solve_model(prox: MixedNormProx, gradient: np.ndarray, B: np.ndarray, start: np.ndarray,
                forcing: float, max_iter: int) -> tuple[np.ndarray, int, int]:
    """``argmin_z <gradient, z - start> + ||B (z - start)||^2 + g(z)`` over ``z`` shaped like ``start``
    (coef layout: ``g`` acts on ``z.T``), ``B`` (|S|, z.size): FISTA with gradient restart until the
    gradient mapping is at most ``forcing`` times its value at ``start``, or ``max_iter``.
    Returns ``z``, the iterations and the products with ``B``."""
    L, products = _lipschitz(B)
    step = 1.0 / L if L > 0 else 1.0

    def prox_step(y: np.ndarray, residual: np.ndarray) -> np.ndarray:
        smooth = gradient + 2.0 * (B.T @ residual).reshape(start.shape)
        return prox.prox((y - step * smooth).T, step).T

    x = start
    x_new = prox_step(start, np.zeros(B.shape[0]))
    target = forcing * np.linalg.norm(x_new - start)
    momentum, iterations = 1.0, 0
    y, x_old = start, start
    while iterations < max_iter and not expired():
        x_old, x = x, x_new
        iterations += 1
        if np.linalg.norm(x - y) <= target:
            break
        next_momentum = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * momentum**2))
        if float(np.sum((y - x) * (x - x_old))) > 0.0:  # the momentum points uphill: restart
            next_momentum, y = 1.0, x
        else:
            y = x + ((momentum - 1.0) / next_momentum) * (x - x_old)
        momentum = next_momentum
        x_new = prox_step(y, B @ (y - start).ravel())
        products += 2
    return x, iterations, products


@attrs.define
class ProximalNewton(OuterOptimizer):
    """Proximal Newton on ``L + g`` with the squared hinge's generalised Hessian ``2 A_S' A_S``."""

    name: ClassVar[str] = "proximal-newton"
    #: The proximal part: its lam, p, q, r come from the problem.
    prox: MixedNormProx = attrs.field(factory=MixedNormProx, validator=part_with("prox", "value"))
    #: The inner solve stops at this fraction of the model's gradient mapping at ``alpha``.
    forcing: float = below_one.field(0.03)
    inner_max_iter: int = positive_count.field(2000)
    #: Solve the model over the groups that can be non-zero only (q = 1).
    working_set: bool = flag.field(True)

    def init(self, problem: Problem, point: np.ndarray, answer: OracleAnswer) -> NewtonState:
        f = objectives.decision_values(objectives.kernel_products(problem.K, point))
        return NewtonState(problem, problem_penalty(problem, self.prox), f, passes=1.0)

    def readings(self, state: NewtonState) -> dict[str, float]:
        return {"newton_passes": state.passes, "inner_iterations": state.inner,
                "working_set": state.working_set, "violators": state.violators}

    def step(self, point: np.ndarray, answer: OracleAnswer, state: NewtonState,
             evaluate: Evaluate) -> tuple[np.ndarray, OracleAnswer, NewtonState]:
        problem, prox = state.problem, state.prox
        K, y = problem.K, problem.y
        M, N = point.shape
        S = np.flatnonzero(y * state.f < 1.0)
        T, R = _groups(state, point, answer.gradient, self.working_set)
        block = np.ix_(T, R)
        B = np.asarray(K[np.ix_(T, R, S)], dtype=float).reshape(T.size * R.size, S.size).T
        fraction = T.size * R.size * S.size / (M * N * N)
        z, iterations, products = solve_model(prox, answer.gradient[block], B, point[block],
                                              self.forcing, self.inner_max_iter)
        direction = np.zeros_like(point)
        direction[block] = z - point[block]
        rows = K if T.size == M and R.size == N else K[block]
        change = np.tensordot(np.asarray(rows, dtype=float), direction[block], axes=([0, 1], [0, 1]))
        state.passes += fraction * (1 + products) + T.size * R.size / (M * N)
        state.inner += iterations
        state.working_set, state.violators = T.size * R.size, S.size
        penalty = prox.value(point.T)
        decrease = float(np.sum(answer.gradient * direction)) + prox.value((point + direction).T) - penalty
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

