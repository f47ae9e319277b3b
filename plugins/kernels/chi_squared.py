"""Exponential chi-squared kernel for histograms ``k(x, z) = exp(-gamma sum_k (x_k - z_k)^2 / (x_k + z_k))``."""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelFunction
from kernelfuse.validation import finite


@attrs.frozen
class ChiSquared(KernelFunction):
    """Exponential chi-squared kernel on non-negative features (histograms); 0/0 terms count 0."""

    name = "chi2"
    gamma: float = finite.field(1.0)

    @property
    def psd(self) -> bool:  # type: ignore[override]
        """``exp(-gamma d)`` of the chi-squared distance ``d`` (conditionally negative definite on
        non-negative features) is PSD for ``gamma >= 0`` (Schoenberg)."""
        return self.gamma >= 0

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        if (X < 0).any() or (Z < 0).any():
            raise ValidationError("the chi2 kernel needs non-negative features (histograms)")
        distance = np.zeros((X.shape[0], Z.shape[0]))
        for k in range(X.shape[1]):  # one column at a time keeps memory at N x N
            num = (X[:, k, None] - Z[None, :, k]) ** 2
            den = X[:, k, None] + Z[None, :, k]
            distance += np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        return np.exp(-self.gamma * distance)

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.ones(X.shape[0])
