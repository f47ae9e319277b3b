"""Sigmoid kernel ``k(x, z) = tanh(scale x'z + coef0)``: indefinite, for family ``mikl``."""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.functions import KernelFunction, Pairwise
from kernelfuse.validation import finite


@attrs.frozen
class Sigmoid(KernelFunction):
    """Sigmoid (tanh) kernel tanh(scale x'z + coef0); not PSD in general (use family mikl)."""

    name = "sigmoid"
    psd = False
    scale: float = finite.field(1.0)
    coef0: float = finite.field(0.0)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.tanh(self.scale * (X @ Z.T) + self.coef0)

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        np.multiply(pairs.gram, self.scale, out=out)
        out += self.coef0
        return np.tanh(out, out=out)

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.tanh(self.scale * (X * X).sum(1) + self.coef0)
