"""OBSCURE's epoch-level oracle: the model ``w = grad h*(theta)`` of an expansion and its objective.

:meth:`ExpansionModel.init` makes the iterate ``theta = 0`` in the
representation the kernels allow (:mod:`.expansion`): a
:class:`~.feature_expansion.FeatureExpansion` (primal vectors, ``O(N r M)``
per epoch) on :class:`~kernelfuse.kernel_factors.FactorKernels`, a
:class:`~.kernel_expansion.KernelExpansion` (products at every training
point) on a stack or kernel rows.  At the end of each epoch the optimiser
hands over the expansion; the model is ``coef[m, c] = omega_m A_c``
(:mod:`.group_norm_map`) and ``P`` of ``pnorm_mkl`` (OBJECTIVES.md family
4) is evaluated from the expansion's image: the decision values at every
training point and the block norms, ``O(C M N)`` arithmetic from the cached
products (no pass over the kernels) or ``O(C M N r)`` from the primal
vectors (one read of the factors), so the full training objective is
tracked every epoch without sub-sampling.  The method certifies no lower
bound (``nan``): runs stop on epochs or on the change of the objective.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse import objectives
from kernelfuse.kernel_factors import FactorKernels
from kernelfuse.oracle import Oracle, OracleAnswer
from kernelfuse.plugins.obscure.expansion import Expansion
from kernelfuse.plugins.obscure.feature_expansion import FeatureExpansion
from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
from kernelfuse.plugins.obscure.kernel_expansion import KernelExpansion
from kernelfuse.problem import Problem


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
        return expansion, (problem, GroupNormMirrorMap(problem.params["p"]))

    def query(self, point: Expansion, state: Any) -> tuple[OracleAnswer, Any]:
        problem, mirror_map = state
        weights = mirror_map.weights(point.block_norms)
        coef = point.coef(weights)
        objective = objectives.evaluate_parts(  # counted below: decision values may read the kernels
            problem, coef, point.decision_values(weights), point.model_squared_norms(weights))
        model_norms = weights * point.block_norms  # ||w_m||
        return OracleAnswer(
            value=objective, gradient=np.zeros(0), coef=coef, objective=objective,
            kernel_weights=objectives.norm_weights(model_norms), lower_bound=math.nan,
            counters={"examples": point.examples, "kernel_passes": point.kernel_passes},
            active_kernels=int(np.count_nonzero(model_norms > 1e-6 * model_norms.max(initial=0.0))),
        ), state
