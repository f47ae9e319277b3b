"""The average-kernel SVM: the baseline every MKL paper compares with.

An SVM on ``K_avg = (1/M) sum_m K_m`` (uniform kernel weights ``d_m = 1/M``, nothing learnt;
MKLpy's ``AverageMKL``): the :class:`~kernelfuse.TwoStageMKL` whose criterion is the uniform
weights, reported in the units of the family asked for (``l1_mkl_sq`` or ``vskl``).  Its
``gap`` says how far the average kernel is from the MKL optimum of the family, as information;
``converged`` where that certified gap is at most ``tol`` (uniform weights are then optimal).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL
from kernelfuse.problem.instance import Problem


@attrs.define
class AverageKernelSVM(TwoStageMKL):
    """SVM on the mean kernel (uniform weights), reported in l1_mkl_sq or vskl units."""

    name: ClassVar[str] = "average"
    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl_sq", "vskl"})

    def weights(self, problem: Problem) -> KernelWeights:
        return KernelWeights(np.full(problem.n_kernels, 1.0 / problem.n_kernels), note="uniform")
