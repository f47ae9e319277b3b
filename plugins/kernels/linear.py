"""Linear kernel ``k(x, z) = x'z``."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels.functions import KernelFunction, Pairwise


@attrs.frozen
class Linear(KernelFunction):
    """Linear kernel x'z."""

    name = "linear"

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return X @ Z.T

    def on_pairwise_into(self, pairs: Pairwise, out: np.ndarray) -> np.ndarray:
        np.copyto(out, pairs.gram)
        return out

    def on_device(self, pairs: Pairwise) -> Any:
        return pairs.gram

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return (X * X).sum(1)
