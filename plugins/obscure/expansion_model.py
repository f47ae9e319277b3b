"""OBSCURE's epoch-level oracle: the model ``w = grad h*(theta)`` of an expansion and its objective.

:meth:`ExpansionModel.init` makes ``theta = 0`` in the representation the kernels allow
(:mod:`.expansion`: primal vectors on kernel factors, products at every training point on a stack
or rows).  At each epoch's end the answer is the model ``coef[m, c] = omega_m A_c`` and the exact
``pnorm_mkl`` objective (OBJECTIVES.md family 4) from the expansion's image, with no pass over the
kernels, and a certified lower bound: the dual bound of :mod:`kernelfuse.problem.duality` at the
iterate's own dual point ``tau = (lam N / q) A`` (:func:`dual_point`), clipped to the domain, its
norm bounded by the triangle inequality (exact in the dual coordinate stage).  The derivation:
docs/methods/obscure.md, the certificate.
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
            kernel_weights=objectives.combination_weights(problem, model_norms),
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
    (its norm bounded by the triangle inequality; ``kernel_norms`` the ``||phi(x_i)||_{2,q}``)."""
    tau = dual_point(problem, mirror_map, expansion)
    feasible, mass = duality.pnorm_mkl_feasible(problem, tau)
    moved = np.abs(feasible - tau) if tau.ndim == 1 else np.linalg.norm(feasible - tau, axis=0)
    theta_norm = mirror_map.dual_norm(np.sqrt(expansion.output_squared_norms().sum(axis=1)))
    dual_norm = problem.params["lam"] / mirror_map.q * theta_norm + float(moved @ kernel_norms) / problem.n_samples
    return duality.pnorm_mkl_dual_value(problem, mass, dual_norm)
