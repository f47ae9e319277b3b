"""Laplacian kernel ``k(x, z) = exp(-||x - z||_1 / width) = exp(-gamma ||x - z||_1)``.

Given by its ``width`` or by scikit-learn's ``gamma = 1 / width`` (``laplacian_kernel``), one of
the two; the kernel holds the width.
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.spatial.distance import cdist

from kernelfuse.kernels.functions import KernelFunction, width_or_gamma
from kernelfuse.validation import positive


@attrs.frozen(init=False)
class Laplacian(KernelFunction):
    """Laplacian kernel exp(-||x - z||_1 / width) (or gamma = 1 / width)."""

    name = "laplacian"
    width: float = positive.field(1.0)

    def __init__(self, width: float | None = None, *, gamma: float | None = None) -> None:
        self.__attrs_init__(width_or_gamma(self.name, width, gamma, lambda g: 1.0 / g, "gamma = 1 / width"))

    @property
    def gamma(self) -> float:
        """scikit-learn's ``gamma = 1 / width``: ``k(x, z) = exp(-gamma ||x - z||_1)``."""
        return 1.0 / self.width

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.exp(-cdist(X, Z, metric="cityblock") / self.width)

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
