"""Laplacian kernel ``k(x, z) = exp(-||x - z||_1 / width)``."""

from __future__ import annotations

import attrs
import numpy as np
from scipy.spatial.distance import cdist

from kernelfuse.kernels.functions import KernelFunction
from kernelfuse.validation import positive


@attrs.frozen
class Laplacian(KernelFunction):
    """Laplacian kernel exp(-||x - z||_1 / width)."""

    name = "laplacian"
    width: float = positive.field(1.0)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.exp(-cdist(X, Z, metric="cityblock") / self.width)

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
