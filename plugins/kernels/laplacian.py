"""Laplacian kernel ``k(x, z) = exp(-||x - z||_1 / width) = exp(-gamma ||x - z||_1)``.

Given by its ``width`` or by scikit-learn's ``gamma = 1 / width`` (``laplacian_kernel``), one of
the two; the kernel holds the width.  ``width="median"``, or a width with ``relative_to="median"``,
is that multiple of the median l1 distance between training rows
(:class:`~kernelfuse.kernels.functions.WidthKernel`).  The l1 distances are exact, so any
positive finite width works: a tiny one gives an identity-like kernel, a huge one the constant 1.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.functions import WidthKernel


@attrs.frozen(init=False)
class Laplacian(WidthKernel):
    """Laplacian kernel exp(-||x - z||_1 / width) (or gamma = 1 / width, or a multiple of the
    median l1 distance)."""

    name = "laplacian"
    metric = "cityblock"

    def __init__(self, width: float | str | None = None, *, gamma: float | None = None,
                 relative_to: str | None = None) -> None:
        self._init_width(width, gamma, relative_to, lambda g: 1.0 / g, "gamma = 1 / width")

    @property
    def gamma(self) -> float:
        """scikit-learn's ``gamma = 1 / width``: ``k(x, z) = exp(-gamma ||x - z||_1)``."""
        return 1.0 / self.scale

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        from scipy.spatial.distance import cdist  # on first use: scipy.spatial takes 0.1 s to import

        with np.errstate(over="ignore"):  # a tiny width: -inf, whose exp is the 0 it should be
            return np.exp(-cdist(X, Z, metric="cityblock") / self.scale)

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
