"""OBSCURE's optimiser: an online stage (Algorithm 1), a stochastic stage (Algorithm 2), then dual coordinate ascent.

Family ``pnorm_mkl`` (OBJECTIVES.md family 4), ``P(w) = (lam/2) ||w||_{2,p}^2 + (1/N) sum_i loss_i``,
with the mirror map ``h = (q/2) ||.||_{2,p}^2`` (:mod:`.group_norm_map`); the dual iterate
``theta`` is an :class:`~.expansion.Expansion` and the model ``w = grad h*(theta)``.  One
:meth:`OnlineBatch.step` is one epoch in a fresh random order: the p-norm perceptron (online
stage, which also gives the radius ``R >= ||w*||_{2,p}``), then the proximal projected
sub-gradient steps with the adaptive strong convexity ``s_t`` of Bartlett, Hazan and Rakhlin
(``adaptive=False``: ``s_t = 0``, Pegasos-MKL), then (kernelfuse's finishing stage, not in the
paper) dual coordinate ascent from the iterate's dual point (:mod:`.dual_coordinate`), which
closes the certified gap the stochastic rate leaves open.  The equations, and why each stage
is there: docs/methods/obscure.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.plugins.obscure import dual_coordinate
from kernelfuse.plugins.obscure.example_subgradient import ExampleSubgradient
from kernelfuse.plugins.obscure.expansion import Expansion
from kernelfuse.plugins.obscure.expansion_model import dual_point
from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
from kernelfuse.problem import duality
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import count, flag, positive, random_seed


def default_online_step(kernel_norms: np.ndarray, n_kernels: int, q: float) -> float:
    """``eta0 = min(M^(-2/q), 1 / max_i ||phi(x_i)||_{2,q}^2)``, from ``kernel_norms`` ``||phi(x_i)||_{2,q}``.

    From ``theta = 0`` an update on example ``i`` moves its margin to
    ``y_i f(x_i) = eta0 ||phi(x_i)||_{2,q}^2 / q`` (``<grad h*(theta), theta> = ||theta||_{2,q}^2 / q``).
    The paper's ``M^(-2/q)`` makes that ``1/q`` for kernels with ``K(x, x) = 1``
    and is the minimum wherever every ``K_m(x, x) <= 1`` (Gaussian, spherically
    or unit-trace normalised); on larger kernels the second term keeps the
    margin at most ``1/q``.  The paper's step on a stack scaled by ``s = 1e6``
    overshot by ``s``: the online iterate sat so far outside the ball of radius
    ``R`` that 300 stochastic epochs never got below ``P(0)``.  With this one
    the iterates on ``(s K, s lam)`` are those on ``(K, lam)`` rescaled, for ``s >= 1``.
    """
    paper = float(n_kernels) ** (-2.0 / q)
    top = float(np.max(kernel_norms, initial=0.0)) ** 2
    return min(paper, 1.0 / top) if top > 0 else paper


@attrs.define
class OnlineBatchState:
    """Everything the optimiser carries between epochs."""

    problem: Problem
    mirror_map: GroupNormMirrorMap
    kernel_norms: np.ndarray  # ||phi(x_i)||_{2,q}, shape (N,)
    rng: np.random.Generator
    online_step: float
    stage: str
    online_epochs_done: int = 0
    stochastic_epochs_done: int = 0
    start_objective: float = math.nan  # P(0)
    t: int = 0
    sum_s: float = 0.0
    radius: float = math.inf


@attrs.define
class OnlineBatch(OuterOptimizer):
    """OBSCURE: online epochs, then stochastic proximal projected sub-gradient epochs."""

    name: ClassVar[str] = "online-batch"
    requires: ClassVar[dict[str, tuple[str, ...]]] = ExampleSubgradient.requires
    reads_kernel_rows: ClassVar[bool] = True
    reads_kernel_factors: ClassVar[bool] = True
    #: The per-example sub-gradient oracle.
    sampler: ExampleSubgradient = attrs.field(factory=ExampleSubgradient)
    #: Epochs of the online stage at most (0: start with the stochastic stage, radius from P(0)).
    online_epochs: int = count.field(5)
    #: The online stage ends after an epoch with at most this many updates.
    stop_updates: int = count.field(0)
    #: ``eta0`` of the online stage; None: :func:`default_online_step`.
    online_step: float | None = positive.or_none("default_online_step").field(None)
    #: Epochs of the stochastic stage before the dual coordinate stage; None: no dual stage
    #: (the methods as published).
    stochastic_epochs: int | None = count.or_none("no dual stage").field(2)
    #: The adaptive ``s_t`` of Algorithm 2; False: ``s_t = 0`` (Pegasos-MKL).
    adaptive: bool = flag.field(True)
    #: Seed of the example order (None: fresh randomness).
    seed: int | None = random_seed.field(None)
    #: Examples per block of an epoch, whose kernel rows are computed together (cheaper than
    #: one by one: docs/methods/obscure.md).  Online stage: a block's adds reach the image at
    #: its end (:meth:`~.expansion.Expansion.defer`).  Stochastic stage: the examples with a
    #: non-zero sub-gradient at the block's start are predicted to update
    #: (:meth:`~kernelfuse.kernels.rows.KernelRows.prefetch`).  0: one example at a time.
    prefetch: int = count.field(64)

    def init(self, problem: Problem, point: Expansion, answer: OracleAnswer) -> OnlineBatchState:
        """The state at the starting point ``theta = 0``, where ``answer.objective = P(0)``."""
        mirror_map = GroupNormMirrorMap(problem.params["p"])
        kernel_norms = self.sampler.kernel_norms(point.diagonal, mirror_map.q)
        step = self.online_step if self.online_step is not None else \
            default_online_step(kernel_norms, problem.n_kernels, mirror_map.q)
        state = OnlineBatchState(problem, mirror_map, kernel_norms,
                                 np.random.default_rng(self.seed), step,
                                 "online" if self.online_epochs > 0 else "stochastic",
                                 start_objective=answer.objective)
        if state.stage == "stochastic":  # the bound from P(0): (lam/2) ||w*||^2 <= P(0)
            state.radius = math.sqrt(2.0 * answer.objective / problem.params["lam"])
        return state

    def readings(self, state: OnlineBatchState) -> dict[str, float]:
        """``online_epochs``, ``stochastic_epochs``: each stage's epochs so far (a stage ends at
        the row where its count stops growing)."""
        return {"online_epochs": float(state.online_epochs_done),
                "stochastic_epochs": float(state.stochastic_epochs_done)}

    def step(self, point: Expansion, answer: OracleAnswer, state: OnlineBatchState,
             evaluate: Evaluate) -> tuple[Expansion, OracleAnswer, OnlineBatchState]:
        expansion = point.copy()
        if state.stage == "online":
            updates = self._online_epoch(expansion, state)
            state.online_epochs_done += 1
            new_answer = evaluate(expansion) if updates else answer  # no update: answer's model
            if updates <= self.stop_updates or state.online_epochs_done >= self.online_epochs:
                best = min(new_answer.objective, state.start_objective)
                state.radius = math.sqrt(2.0 * best / state.problem.params["lam"])
                state.stage = "stochastic"
            if updates:
                return expansion, new_answer, state
            # The perceptron separated every example (large kernels do so in a few epochs):
            # returned unchanged, the model would let ``objective-change`` stop at the online
            # iterate, or at P(0), before the stochastic stage ran.  The next stage's first
            # epoch follows in this step instead.
        if state.stage == "stochastic" and self.stochastic_epochs is not None \
                and state.stochastic_epochs_done >= self.stochastic_epochs:
            self._enter_dual(expansion, state)
        if state.stage == "dual":
            self._dual_epoch(expansion, state, 0.1 * max(answer.objective - answer.lower_bound, 0.0))
        else:
            self._stochastic_epoch(expansion, state)
            state.stochastic_epochs_done += 1
        return expansion, evaluate(expansion), state

    def _blocks(self, expansion: Expansion, state: OnlineBatchState,
                will_update: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
                size: int) -> Iterator[np.ndarray]:
        """One epoch's examples in a fresh random order, by blocks of ``size``.

        With ``will_update`` (a block and its decision values (B, C) to the
        examples predicted to update), at a block's start the rows of those
        examples are prefetched together.  The prediction only chooses which rows are
        computed early: every example is still visited in order at the
        iterate of its turn, and a row mispredicted either way costs one row
        computed alone or one row computed for nothing, never a different step."""
        problem = state.problem
        order = state.rng.permutation(problem.n_samples)
        for start in range(0, order.size, size):
            block = order[start:start + size]
            if self.prefetch and will_update is not None:
                expansion.prefetch(block, state.mirror_map.weights(expansion.block_norms),
                                   partial(will_update, block))
            yield block

    def _online_epoch(self, expansion: Expansion, state: OnlineBatchState) -> int:
        """Algorithm 1 over one epoch, by blocks.  An example with a zero sub-gradient leaves
        ``theta`` as it is, so the decision values of a block's examples are read at once, and
        again only after an update: the next update is the first of the rest with a non-zero
        sub-gradient, the same step as visiting them one by one.  The adds of a block reach
        the image at its end (:meth:`~.expansion.Expansion.defer`): on kernel rows computed on
        demand, the rows of exactly the examples that updated, computed together."""
        problem = state.problem
        updates = 0
        for block in self._blocks(expansion, state, None, size=self.prefetch or 1):
            if self.prefetch:
                expansion.defer(block)
            rest = block
            while rest.size:
                weights = state.mirror_map.weights(expansion.block_norms)
                values = expansion.values_block(weights, rest)
                hits = np.flatnonzero(self.sampler.nonzero(problem.loss, problem.y, rest, values))
                if not hits.size:
                    break
                k = int(hits[0])
                g = self.sampler(problem.loss, problem.y, int(rest[k]), values[k])
                expansion.add(int(rest[k]), -state.online_step * g)
                updates += 1
                rest = rest[k + 1:]
            expansion.flush()
            expansion.examples += block.size
            state.t += block.size
        return updates

    def _stochastic_epoch(self, expansion: Expansion, state: OnlineBatchState) -> None:
        """Algorithm 2 over one epoch.  The factors ``omega`` do not change when ``theta`` is
        scaled and ``||theta||_{2,q}`` scales with it, so both are recomputed only after an add."""
        problem, mirror_map = state.problem, state.mirror_map
        lam, q, radius = problem.params["lam"], mirror_map.q, state.radius
        weights = mirror_map.weights(expansion.block_norms)
        dual_norm = mirror_map.dual_norm(expansion.block_norms)
        for i in self._examples(expansion, state, lambda block, f: self.sampler.nonzero(
                problem.loss, problem.y, block, f)):
            g = self.sampler(problem.loss, problem.y, i, expansion.values_at(weights, i))
            expansion.examples += 1
            state.t += 1
            if self.adaptive:
                a = lam * state.t + state.sum_s
                bound = self.sampler.dual_norm(g, state.kernel_norms[i]) + lam * dual_norm / q
                state.sum_s += 0.5 * (math.sqrt(a * a + q * bound * bound / radius**2) - a)
            eta = q / (lam * state.t + state.sum_s)
            shrink = 1.0 - eta * lam / q
            expansion.shrink(shrink)
            dual_norm *= shrink
            if np.any(g):
                expansion.add(i, -eta * g)
                weights = mirror_map.weights(expansion.block_norms)
                dual_norm = mirror_map.dual_norm(expansion.block_norms)
            factor = mirror_map.projection_factor(dual_norm, radius)
            expansion.shrink(factor)
            dual_norm *= factor

    def _examples(self, expansion: Expansion, state: OnlineBatchState,
                  will_update: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Iterator[int]:
        """One epoch's examples one at a time, rows prefetched by blocks (:meth:`_blocks`)."""
        size = self.prefetch or state.problem.n_samples
        return (int(i) for block in self._blocks(expansion, state, will_update, size) for i in block)

    def _enter_dual(self, expansion: Expansion, state: OnlineBatchState) -> None:
        """``theta`` becomes the dual point of the dual coordinate stage: its ``tau`` clipped to
        the dual domain (an add at each example that moved), then scaled by the ``t`` that
        maximises ``D(t tau)`` (:func:`~kernelfuse.problem.duality.pnorm_mkl_scaling`)."""
        problem, mirror_map = state.problem, state.mirror_map
        kappa = mirror_map.q / (problem.params["lam"] * problem.n_samples)
        tau = dual_point(problem, mirror_map, expansion)
        feasible, mass = duality.pnorm_mkl_feasible(problem, tau)
        moved = (feasible - tau).reshape(expansion.A.shape)
        for i in np.flatnonzero(np.any(moved != 0.0, axis=0)):
            expansion.add(int(i), kappa * moved[:, i])
        dual_norm = problem.params["lam"] / mirror_map.q * mirror_map.dual_norm(expansion.block_norms)
        expansion.shrink(duality.pnorm_mkl_scaling(problem, mass, dual_norm))
        state.stage = "dual"

    def _dual_epoch(self, expansion: Expansion, state: OnlineBatchState, threshold: float) -> None:
        """One epoch of dual coordinate ascent (:mod:`.dual_coordinate`), skipping examples whose
        violation is below ``threshold`` (a tenth of the gap at the epoch's start: they leave at
        most that much).  Rows are prefetched for the examples that would move at the block's
        start."""
        problem, mirror_map = state.problem, state.mirror_map
        lam, q, n = problem.params["lam"], mirror_map.q, problem.n_samples
        kappa = q / (lam * n)
        weights = mirror_map.weights(expansion.block_norms)

        def move_at(i: int, f: np.ndarray) -> tuple[np.ndarray, float, float] | None:
            return dual_coordinate.direction(problem.y[i], f, expansion.scale * expansion.A[:, i] / kappa,
                                             threshold)

        def will_update(block: np.ndarray, f: np.ndarray) -> np.ndarray:
            return np.array([move_at(int(i), f_i) is not None for i, f_i in zip(block, f)], dtype=bool)

        for i in self._examples(expansion, state, will_update):
            expansion.examples += 1
            cross = expansion.inner_products(i)  # (C, M): f(x_i) = cross @ weights
            f = cross @ weights
            move = move_at(i, f)
            if move is None:
                continue
            e, lin, upper = move
            delta = dual_coordinate.step(expansion.squared_norms, e @ cross,
                                         float(e @ e) * expansion.diagonal[i], kappa,
                                         (lin - float(e @ f)) / n, upper, lam, q, n, lin)
            if delta > 0.0:
                expansion.add(i, kappa * delta * e)
                weights = mirror_map.weights(expansion.block_norms)
