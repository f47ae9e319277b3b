"""A kernel given as a matrix: ``k(x_i, x_j) = G[i, j]``, the "features" being indices."""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelFunction
from kernelfuse.validation import flag


def _as_matrix(value: object) -> np.ndarray:
    matrix = np.asarray(value, dtype=np.float64)
    if matrix.ndim != 2 or not np.isfinite(matrix).all():
        raise ValidationError("a precomputed kernel needs a finite 2-D matrix")
    return matrix


@attrs.frozen(eq=False)
class Precomputed(KernelFunction):
    """A similarity given as a matrix G; rows of X and Z hold indices into G (one column)."""

    name = "precomputed"
    matrix: np.ndarray = attrs.field(converter=_as_matrix)
    #: Whether G is a PSD Gram matrix (say False for an arbitrary similarity).
    positive_semidefinite: bool = flag.field(True)

    @property
    def psd(self) -> bool:  # type: ignore[override]
        return self.positive_semidefinite

    def _indices(self, X: np.ndarray, axis: int) -> np.ndarray:
        index = np.asarray(X)[:, 0]
        if not np.all(index == np.round(index)) or index.min() < 0 or index.max() >= self.matrix.shape[axis]:
            raise ValidationError(
                f"precomputed kernel: indices must be integers in [0, {self.matrix.shape[axis]})"
            )
        return index.astype(np.intp)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return self.matrix[np.ix_(self._indices(X, 0), self._indices(Z, 1))]

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        index = self._indices(X, 0)
        return self.matrix[index, index]
