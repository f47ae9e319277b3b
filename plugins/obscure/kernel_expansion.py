"""OBSCURE's kernelised iterate (section 3.1): ``theta`` with the products ``K_m A_c`` at every training point.

The representation of :mod:`.expansion` for any kernels, a stack or
:class:`~kernelfuse.kernel_rows.KernelRows` read on demand: with
``theta_{m,c} = sum_j A[c, j] phi_m(x_j)``, the image is

    ``image[c, m] = K_m A_c``  (``(C, M, N)``),

the values ``<theta_{m,c}, phi_m(x_n)>`` at every training point: O(N M)
memory per output, where the kernel stack is O(M N^2).  The inner products
at an example, the decision values everywhere and the block norms
``A_c' K_m A_c`` are read from it; adding ``u_c phi(x_i)`` reads the rows
``K_m[i, :]`` of example ``i`` (``M`` rows: :attr:`rows_read`) and updates
the products of the outputs with ``u_c != 0``, ``O(M N)`` each.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernel_rows import KernelRows, kernel_diagonal, kernel_rows
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

    def prefetch(self, indices: np.ndarray) -> None:
        """Rows on demand computed together for ``indices`` (:meth:`KernelRows.prefetch`)."""
        if isinstance(self.kernels, KernelRows):
            self.kernels.prefetch(indices)

    def _inner(self, i: int) -> np.ndarray:
        return self.image[:, :, i]

    def _accumulate(self, i: int, stored: np.ndarray) -> None:
        rows = kernel_rows(self.kernels, i)
        self.rows_read += rows.shape[0]
        for c in np.flatnonzero(stored):
            self.image[c] += stored[c] * rows

    def _inner_everywhere(self, weights: np.ndarray) -> np.ndarray:
        return np.einsum("cmn,m->nc", self.image, weights)

    def _block_squares(self) -> np.ndarray:
        return np.einsum("cn,cmn->mc", self.A, self.image)
