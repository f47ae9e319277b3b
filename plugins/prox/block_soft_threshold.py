"""Block soft-thresholding: the proximal map of ``sum_m h(||x_m||)``, ``h(r) = C r + (C2/2) r^2`` (SpicyMKL, eq. 6).

``prox_{s h}(x)_m = max(0, 1 - s C / ||x_m||) x_m / (1 + s C2)`` zeroes every block of norm at most
``s C``: the sparse kernel weights of l1-MKL.  SpicyMKL applies it in each kernel's RKHS metric,
which needs the map on the norms alone (:meth:`~kernelfuse.problem.regularizers.BlockL1.radial_prox`,
read from the problem's regulariser); this operator is the same map on Euclidean blocks, for
composing new methods.  ``prox_conjugate`` is the projection onto ``{||x_m|| <= C}`` (Moreau).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.parts.prox import ProxOperator
from kernelfuse.problem.regularizers import BlockL1


@attrs.frozen
class BlockSoftThreshold(ProxOperator):
    """Block soft-thresholding, prox of sum_m C ||x_m|| + (C2/2) ||x_m||^2 over the rows x_m."""

    name = "block-soft-threshold"
    C: float = 1.0
    C2: float = 0.0

    #: The penalty ``C ||v||_1 + (C2/2) ||v||_2^2`` of the block norms ``v``.
    regularizer: BlockL1 = attrs.field(init=False, repr=False, eq=False)

    @regularizer.default
    def _regularizer(self) -> BlockL1:
        return BlockL1(weight=self.C, elastic=self.C2)

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        norms = np.linalg.norm(x, axis=-1, keepdims=True)
        shrunk = self.regularizer.prox(norms, step)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norms > 0, shrunk / norms, 0.0) * x
