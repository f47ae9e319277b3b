"""Block soft-thresholding: the proximal map of ``C sum_m ||x_m||`` (SpicyMKL, eq. 6).

For blocks ``x_m`` (the rows of ``x``):

    ``prox_{s C sum ||.||}(x)_m = max(0, 1 - s C / ||x_m||) x_m``,

which zeroes every block whose norm is at most ``s C``: the source of the
sparse kernel weights of l1-MKL.  SpicyMKL applies it in each kernel's
RKHS metric (``||x_m|| = sqrt(x_m' K_m x_m)``), which is this map on
``L_m' x_m`` for a factor ``K_m = L_m L_m'``.  The conjugate of
``C sum ||x_m||`` is the indicator of ``{||x_m|| <= C for all m}``, so
``prox_conjugate`` is the projection onto those balls (the Moreau identity,
checked in the tests).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.prox import ProxOperator


@attrs.frozen
class BlockSoftThreshold(ProxOperator):
    """Block soft-thresholding, prox of C sum_m ||x_m|| over the rows x_m: zeroes small blocks."""

    name = "block-soft-threshold"
    C: float = 1.0

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        norms = np.linalg.norm(x, axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            shrink = np.where(norms > step * self.C, 1.0 - step * self.C / norms, 0.0)
        return shrink * x
