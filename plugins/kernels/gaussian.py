"""Gaussian (RBF) kernel ``k(x, z) = exp(-||x - z||^2 / (2 width^2)) = exp(-gamma ||x - z||^2)``.

Given by its ``width`` or by scikit-learn's (and MKLpy's) ``gamma = 1 / (2 width^2)``, one of the
two; the kernel holds the width, and reads ``gamma`` from it.  ``width="median"``, or a width with
``relative_to="median"``, is that multiple of the median Euclidean distance between training rows
(:class:`~kernelfuse.kernels.functions.WidthKernel`).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.functions import Pairwise, WidthKernel, squared_distances


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
        """scikit-learn's ``gamma = 1 / (2 width^2)``: ``k(x, z) = exp(-gamma ||x - z||^2)``."""
        return 0.5 / self.scale**2

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.exp(-squared_distances(X, Z) / (2.0 * self.scale**2))

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        np.multiply(pairs.sqdist, -0.5 / self.scale**2, out=out)
        return np.exp(out, out=out)

    def on_device(self, pairs: Pairwise) -> Any:
        xp = pairs.xp
        assert xp is not None, "on_device reads device features"
        return xp.exp(pairs.sqdist * (-0.5 / self.scale**2))

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
