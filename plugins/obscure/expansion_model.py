"""OBSCURE's epoch-level oracle: the model ``w = grad h*(theta)`` of an expansion and its objective.

:meth:`ExpansionModel.init` makes the iterate ``theta = 0`` in the
representation the kernels allow (:mod:`.expansion`): a
:class:`~.feature_expansion.FeatureExpansion` (primal vectors, ``O(N r M)``
per epoch) on :class:`~kernelfuse.kernels.factors.FactorKernels`, a
:class:`~.kernel_expansion.KernelExpansion` (products at every training
point) on a stack or kernel rows.  At the end of each epoch the optimiser
hands over the expansion; the model is ``coef[m, c] = omega_m A_c``
(:mod:`.group_norm_map`) and ``P`` of ``pnorm_mkl`` (OBJECTIVES.md family
4) is evaluated from the expansion's image: the decision values at every
training point and the block norms, ``O(C M N)`` arithmetic from the cached
products (no pass over the kernels) or ``O(C M N r)`` from the primal
vectors (one read of the factors), so the full training objective is
tracked every epoch without sub-sampling.

The lower bound is the ``pnorm_mkl`` dual bound of
:mod:`kernelfuse.problem.duality` at the dual point of the same iterate:
``theta = (q / lam) v`` with ``v = (1/N) sum_i tau_i phi(x_i)`` gives
``tau = (lam N / q) A`` (:func:`dual_point`), the coefficients scaled.
Clipped to the dual domain (:func:`~kernelfuse.problem.duality.pnorm_mkl_feasible`)
it moves by ``delta_i`` at example ``i``, so by the triangle inequality its
``||v||_{2,q}`` is at most ``(lam / q) ||theta||_{2,q} + (1/N) sum_i
||delta_i||_2 ||phi(x_i)||_{2,q}``, and :func:`~kernelfuse.problem.duality.pnorm_mkl_dual_value`
at that norm is a certified bound for ``O(C N + C M N)`` arithmetic (no pass
over the kernels): exact where ``tau`` is already feasible, as in the dual
coordinate stage of :mod:`.online_batch`, and the gap closes there as the
stage converges.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.plugins.obscure.example_subgradient import ExampleSubgradient
from kernelfuse.plugins.obscure.expansion import Expansion
from kernelfuse.plugins.obscure.feature_expansion import FeatureExpansion
from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
from kernelfuse.plugins.obscure.kernel_expansion import KernelExpansion
from kernelfuse.problem import duality, objectives
from kernelfuse.problem.instance import Problem


@attrs.define
class ExpansionModel(Oracle):
    """The model of a kernel expansion under the (2,p) mirror map, with its ``pnorm_mkl`` objective."""

    name: ClassVar[str] = "expansion-model"
    families: ClassVar[frozenset[str]] = frozenset({"pnorm_mkl"})
    reads_kernel_rows: ClassVar[bool] = True
    reads_kernel_factors: ClassVar[bool] = True

    def init(self, problem: Problem) -> tuple[Expansion, Any]:
        expansion: Expansion
        if isinstance(problem.K, FactorKernels):
            expansion = FeatureExpansion.zeros(problem.n_outputs, problem.K)
        else:
            expansion = KernelExpansion.zeros(problem.n_outputs, problem.K)
        mirror_map = GroupNormMirrorMap(problem.params["p"])
        return expansion, (problem, mirror_map, ExampleSubgradient.kernel_norms(expansion.diagonal, mirror_map.q))

    def query(self, point: Expansion, state: Any) -> tuple[OracleAnswer, Any]:
        problem, mirror_map, kernel_norms = state
        weights = mirror_map.weights(point.block_norms)
        coef = point.coef(weights)
        objective = objectives.evaluate_parts(  # counted below: decision values may read the kernels
            problem, coef, point.decision_values(weights), point.model_squared_norms(weights))
        model_norms = weights * point.block_norms  # ||w_m||
        return OracleAnswer(
            value=objective, gradient=np.zeros(0), coef=coef, objective=objective,
            kernel_weights=objectives.norm_weights(model_norms),
            lower_bound=lower_bound(problem, mirror_map, point, kernel_norms),
            counters={"examples": point.examples, "kernel_passes": point.kernel_passes},
            active_kernels=int(np.count_nonzero(model_norms > 1e-6 * model_norms.max(initial=0.0))),
        ), state


def dual_point(problem: Problem, mirror_map: GroupNormMirrorMap, expansion: Expansion) -> np.ndarray:
    """``tau = (lam N / q) A`` (one kernel's coefficient layout: (N,) or (C, N)), the dual point of ``theta``."""
    tau = problem.params["lam"] * problem.n_samples / mirror_map.q * expansion.scale * expansion.A
    return tau[0] if tau.shape[0] == 1 else tau


def lower_bound(problem: Problem, mirror_map: GroupNormMirrorMap, expansion: Expansion,
                kernel_norms: np.ndarray) -> float:
    """The certified ``pnorm_mkl`` dual bound at ``theta``'s dual point, clipped to the domain
    (module docstring; ``kernel_norms`` the ``||phi(x_i)||_{2,q}``)."""
    tau = dual_point(problem, mirror_map, expansion)
    feasible, mass = duality.pnorm_mkl_feasible(problem, tau)
    moved = np.abs(feasible - tau) if tau.ndim == 1 else np.linalg.norm(feasible - tau, axis=0)
    theta_norm = mirror_map.dual_norm(np.sqrt(expansion.output_squared_norms().sum(axis=1)))
    dual_norm = problem.params["lam"] / mirror_map.q * theta_norm + float(moved @ kernel_norms) / problem.n_samples
    return duality.pnorm_mkl_dual_value(problem, mass, dual_norm)
