"""Negative distance kernel ``k(x, z) = -||x - z||^power``: indefinite, for family ``mikl``.

For ``0 < power <= 2`` it is conditionally positive definite (positive on
vectors summing to zero) but not positive semi-definite: the kernel of
energy distances, used as an indefinite kernel by MIKL's experiments.  Its
diagonal is 0, so normalise it with ``"none"``.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.functions import KernelFunction, Pairwise
from kernelfuse.validation import Domain


@attrs.frozen
class NegativeDistance(KernelFunction):
    """Negative distance -||x - z||^power (0 < power <= 2); indefinite (use family mikl)."""

    name = "negative-distance"
    psd = False
    power: float = Domain("in (0, 2]", lambda v: 0 < v <= 2).field(1.0)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return self.on_pairwise(Pairwise(X, Z))

    def on_pairwise(self, pairs: Pairwise) -> np.ndarray:
        return -(pairs.sqdist ** (0.5 * self.power))

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        return np.zeros(X.shape[0])
