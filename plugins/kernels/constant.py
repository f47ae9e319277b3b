"""Constant kernel ``k(x, z) = value``: a bias term for the families without an intercept.

A model with this kernel adds ``value * sum_j coef_j``, one number, to every
decision value: ``mikl`` and ``pnorm_mkl`` have no intercept (OBJECTIVES.md),
so adding it to the kernels gives them one (regularised like any other kernel).
``kernelfuse.kernels.functions.with_constant_kernel`` appends it to a stack.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.functions import KernelFunction, Pairwise
from kernelfuse.validation import positive


@attrs.frozen
class Constant(KernelFunction):
    """Constant kernel k(x, z) = value: a (regularised) bias for families without an intercept."""

    name = "constant"
    value: float = positive.field(1.0)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return np.full((X.shape[0], Z.shape[0]), self.value)

    def on_pairwise(self, pairs: Pairwise) -> np.ndarray:
        return self(pairs.X, pairs.Z)

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.value)
