"""Block soft-thresholding: the proximal map of ``sum_m h(||x_m||)``, ``h(r) = C r + (C2/2) r^2`` (SpicyMKL, eq. 6).

For blocks ``x_m`` (the rows of ``x``) and a step ``s``:

    ``prox_{s h}(x)_m = max(0, 1 - s C / ||x_m||) x_m / (1 + s C2)``,

which zeroes every block whose norm is at most ``s C``: the source of the
sparse kernel weights of l1-MKL (``C2 > 0`` adds the elastic net's
shrinkage).  SpicyMKL applies it in each kernel's RKHS metric
(``||x_m|| = sqrt(x_m' K_m x_m)``), which is this map on ``L_m' x_m`` for a
factor ``K_m = L_m L_m'``; :meth:`BlockSoftThreshold.radial` gives the map
on the norms alone, which is all that metric needs (the prox of
:class:`~kernelfuse.problem.regularizers.BlockL1`, the penalty of ``l1_mkl``).  For ``C2 = 0`` the
conjugate of ``C sum ||x_m||`` is the indicator of ``{||x_m|| <= C}``, so
``prox_conjugate`` is the projection onto those balls (the Moreau identity,
checked in the tests).
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

    def radial(self, norms: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        """The prox on the block norms: ``r -> max(0, r - s C) / (1 + s C2)`` and its derivative in ``r``."""
        shrunk = self.regularizer.prox(norms, step)
        return shrunk, np.where(shrunk > 0, 1.0 / (1.0 + step * self.C2), 0.0)

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        norms = np.linalg.norm(x, axis=-1, keepdims=True)
        shrunk, _ = self.radial(norms, step)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norms > 0, shrunk / norms, 0.0) * x
