"""Gaussian (RBF) kernel ``k(x, z) = exp(-||x - z||^2 / (2 width^2)) = exp(-gamma ||x - z||^2)``.

Given by its ``width`` or by scikit-learn's (and MKLpy's) ``gamma = 1 / (2 width^2)``, one of the
two; the kernel holds the width, and reads ``gamma`` from it.  ``width="median"``, or a width with
``relative_to="median"``, is that multiple of the median Euclidean distance between training rows
(:class:`~kernelfuse.kernels.functions.WidthKernel`).  Any positive finite width is computed
without overflow: a tiny one gives an identity-like kernel (1 on equal rows, 0 between rows
apart), a huge one the constant kernel 1.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.functions import Pairwise, WidthKernel

#: The largest rounding error of the exponent ``gamma ||x - z||^2`` taken from the Gram form of
#: the distances (``gamma`` times the bound :attr:`Pairwise.sqdist_error`).  Beyond it (a width
#: under about 1e-3 times the features' norm) the pairs whose kernel value is above 0 get their
#: distances from their differences, so that equal rows give exactly 1 at any width.
EXPONENT_ERROR = 1e-6
#: ``exp(-t)`` is 0 in float64 for ``t`` above this.
EXP_UNDERFLOW = 746.0


@attrs.frozen(init=False)
class Gaussian(WidthKernel):
    """Gaussian kernel exp(-||x - z||^2 / (2 width^2)), the width of the SimpleMKL grids (or gamma,
    or a multiple of the median distance)."""

    name = "gaussian"

    def __init__(self, width: float | str | None = None, *, gamma: float | None = None,
                 relative_to: str | None = None) -> None:
        self._init_width(width, gamma, relative_to, lambda g: math.sqrt(0.5 / g), "gamma = 1 / (2 width^2)")

    @property
    def gamma(self) -> float:
        """scikit-learn's ``gamma = 1 / (2 width^2)``: ``k(x, z) = exp(-gamma ||x - z||^2)`` (inf
        for a width whose square underflows, 0 for one whose square overflows)."""
        square = self.scale * self.scale
        return 0.5 / square if square > 0 else math.inf

    def _factor(self) -> float:
        """``gamma``, at most the largest float: a distance times it is never ``0 x inf``."""
        return min(self.gamma, sys.float_info.max)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return self.on_pairwise(Pairwise(X, Z))

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        factor = self._factor()
        with np.errstate(over="ignore"):  # an exponent below -1e308 is -inf, whose exp is the 0 it should be
            np.multiply(pairs.sqdist, -factor, out=out)
            error = pairs.sqdist_error
            if factor * error > EXPONENT_ERROR:  # a width under the Gram form's resolution
                rows, cols = np.nonzero(pairs.sqdist <= error + EXP_UNDERFLOW / factor)
                out[rows, cols] = pairs.exact_sqdist(rows, cols) * -factor
        return np.exp(out, out=out)

    def on_device(self, pairs: Pairwise) -> Any:
        """The kernel from the Gram form of the distances on the device (a width under its
        resolution is not recomputed from the differences there)."""
        xp = pairs.xp
        assert xp is not None, "on_device reads device features"
        return xp.exp(pairs.sqdist * (-self._factor()))

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
