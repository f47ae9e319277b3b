"""Gaussian (RBF) kernel ``k(x, z) = exp(-||x - z||^2 / (2 width^2))``."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.functions import KernelFunction, Pairwise, squared_distances
from kernelfuse.validation import positive


@attrs.frozen
class Gaussian(KernelFunction):
    """Gaussian kernel exp(-||x - z||^2 / (2 width^2)), the width of the SimpleMKL grids."""

    name = "gaussian"
    width: float = positive.field(1.0)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.exp(-squared_distances(X, Z) / (2.0 * self.width**2))

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        np.multiply(pairs.sqdist, -0.5 / self.width**2, out=out)
        return np.exp(out, out=out)

    def on_device(self, pairs: Pairwise) -> Any:
        xp = pairs.xp
        assert xp is not None, "on_device reads device features"
        return xp.exp(pairs.sqdist * (-0.5 / self.width**2))

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
