"""OBSCURE's kernelised iterate (section 3.1): ``theta`` with the products ``K_m A_c`` at every training point.

The representation of :mod:`.expansion` for any kernels, a stack or
:class:`~kernelfuse.kernels.rows.KernelRows` read on demand: the image is ``K_m A_c``
(``(C, M, N)``, the values ``<theta_{m,c}, phi_m(x_n)>`` at every training point: O(N M) memory
per output where the stack is O(M N^2)).  Inner products, decision values and the block norms
``A_c' K_m A_c`` are read from it; an add at example ``i`` reads its ``M`` rows ``K_m[i, :]``
(:attr:`rows_read`) and updates the products of the outputs it changes, ``O(M N)`` each.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
from scipy.linalg import get_blas_funcs

from kernelfuse.kernels.rows import KernelRows, kernel_diagonal, kernel_entries, kernel_rows
from kernelfuse.plugins.obscure.expansion import Expansion


@attrs.define(eq=False, kw_only=True)
class KernelExpansion(Expansion):
    """``theta`` through ``scale * A`` (C, N) and the products ``scale * K_m A_c`` (C, M, N)."""

    #: The kernels, a stack (M, N, N) or rows on demand (read by :meth:`add` only).
    kernels: np.ndarray | KernelRows

    @classmethod
    def zeros(cls, n_outputs: int, kernels: np.ndarray | KernelRows) -> KernelExpansion:
        """``theta = 0`` on ``kernels``."""
        M, N = kernels.shape[0], kernels.shape[1]
        return cls(A=np.zeros((n_outputs, N)), image=np.zeros((n_outputs, M, N)), squared_norms=np.zeros(M),
                   diagonal=np.ascontiguousarray(kernel_diagonal(kernels).T, dtype=np.float64), kernels=kernels)

    def prefetch(self, indices: np.ndarray, weights: np.ndarray,
                 will_update: Callable[[np.ndarray], np.ndarray]) -> None:
        """Rows on demand of the examples predicted to update computed together
        (:meth:`KernelRows.prefetch`); their decision values are read from the image, no row."""
        if isinstance(self.kernels, KernelRows):
            self.kernels.prefetch(indices[will_update(self.values_block(weights, indices))])

    def _inner(self, i: int) -> np.ndarray:
        return self.image[:, :, i]

    def _inner_block(self, indices: np.ndarray) -> np.ndarray:
        return self.image[:, :, indices]

    def _entries(self, indices: np.ndarray) -> np.ndarray:
        within = kernel_entries(self.kernels, indices, indices)
        self.rows_read += within.size / self.A.shape[1]
        return within

    def _before_deferred(self, examples: np.ndarray) -> None:
        """Rows on demand of the examples added in a block, computed together."""
        if isinstance(self.kernels, KernelRows):
            self.kernels.prefetch(examples)

    def _accumulate(self, i: int, stored: np.ndarray) -> None:
        rows = kernel_rows(self.kernels, i)
        self.rows_read += rows.shape[0]
        axpy = get_blas_funcs("axpy", (self.image,))
        flat_rows = np.ascontiguousarray(rows, dtype=np.float64).reshape(-1)
        for c in np.flatnonzero(stored):  # image[c] += stored[c] * rows in place, no temporary
            axpy(flat_rows, self.image[c].reshape(-1), a=stored[c])

    def _inner_everywhere(self, weights: np.ndarray) -> np.ndarray:
        return np.einsum("cmn,m->nc", self.image, weights)

    def _block_squares(self) -> np.ndarray:
        return np.einsum("cn,cmn->mc", self.A, self.image)
