"""OBSCURE's epoch-level oracle: the model ``w = grad h*(theta)`` of a kernel expansion and its objective.

At the end of each epoch the optimiser hands over the expansion; the model
is ``coef[m, c] = omega_m A_c`` (:mod:`.group_norm_map`) and ``P`` of
``pnorm_mkl`` (OBJECTIVES.md family 4) is evaluated from the cached
products ``K_m A_c``: the decision values at every training point and the
block norms, O(C M N) arithmetic and no pass over the kernels, so the full
training objective is tracked every epoch without sub-sampling.  The method
certifies no lower bound (``nan``): runs stop on epochs or on the change of
the objective.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse import objectives
from kernelfuse.oracle import Oracle, OracleAnswer
from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
from kernelfuse.plugins.obscure.kernel_expansion import KernelExpansion
from kernelfuse.problem import Problem


@attrs.define
class ExpansionModel(Oracle):
    """The model of a kernel expansion under the (2,p) mirror map, with its ``pnorm_mkl`` objective."""

    name: ClassVar[str] = "expansion-model"
    families: ClassVar[frozenset[str]] = frozenset({"pnorm_mkl"})
    reads_kernel_rows: ClassVar[bool] = True

    def init(self, problem: Problem) -> tuple[KernelExpansion, Any]:
        expansion = KernelExpansion.zeros(problem.n_outputs, problem.n_kernels, problem.n_samples)
        return expansion, (problem, GroupNormMirrorMap(problem.params["p"]))

    def query(self, point: KernelExpansion, state: Any) -> tuple[OracleAnswer, Any]:
        problem, mirror_map = state
        weights = mirror_map.weights(point.block_norms)
        coef = point.coef(weights)
        objective = objectives.evaluate_parts(
            problem, coef, point.decision_values(weights), point.model_squared_norms(weights))
        model_norms = weights * point.block_norms  # ||w_m||
        return OracleAnswer(
            value=objective, gradient=np.zeros(0), coef=coef, objective=objective,
            kernel_weights=objectives.norm_weights(model_norms), lower_bound=math.nan,
            counters={"examples": point.examples,
                      "kernel_passes": point.rows_read / (problem.n_kernels * problem.n_samples)},
            active_kernels=int(np.count_nonzero(model_norms > 1e-6 * model_norms.max(initial=0.0))),
        ), state
