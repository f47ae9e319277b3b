"""Polynomial kernel ``k(x, z) = (scale x'z + coef0)^degree``."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.functions import KernelFunction, Pairwise
from kernelfuse.validation import finite, positive


@attrs.frozen
class Polynomial(KernelFunction):
    """Polynomial kernel (scale x'z + coef0)^degree; PSD for integer degree and coef0 >= 0."""

    name = "polynomial"
    #: A positive number; an integer one (the kernel grid's) for a PSD kernel.
    degree: float = positive.field(2)
    scale: float = finite.field(1.0)
    coef0: float = finite.field(1.0)

    @property
    def psd(self) -> bool:  # type: ignore[override]
        """A positive integer power of ``scale x'z + coef0``, a PSD kernel when ``scale`` and
        ``coef0`` are non-negative (sums and products of PSD kernels are PSD)."""
        return self.degree.is_integer() and self.scale >= 0 and self.coef0 >= 0

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return (self.scale * (X @ Z.T) + self.coef0) ** self.degree

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        np.multiply(pairs.gram, self.scale, out=out)
        out += self.coef0
        return np.power(out, self.degree, out=out)

    def on_device(self, pairs: Pairwise) -> Any:
        return (self.scale * pairs.gram + self.coef0) ** self.degree

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return (self.scale * (X * X).sum(1) + self.coef0) ** self.degree
