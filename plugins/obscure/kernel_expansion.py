"""OBSCURE's kernelised iterate (section 3.1): ``theta`` stored as coefficients, never materialised.

Every (sub-)gradient of the loss at example ``i`` is ``g_c phi_m(x_i)`` in
block ``m`` for output ``c``, so the dual iterate is

    ``theta_{m,c} = sum_j A[c, j] phi_m(x_j)``,

one coefficient row per output, shared by all kernels.  The expansion keeps
``A``, the products ``K_m A_c`` at every training point (``(C, M, N)``: the
decision values of every block, O(N M) memory per output, where the kernel
stack is O(M N^2)) and the block norms
``||theta_m||^2 = sum_c A_c' K_m A_c``.  Adding ``u_c phi(x_i)`` reads one
row ``K_m[i, :]`` of each kernel; shrinking ``theta`` by a factor (the
regulariser's step, the projection) costs nothing: the stored arrays carry
one common scale, the lazy-scaling trick (``A = scale * A_stored``).

With the mirror map's factors ``omega`` (``w_m = omega_m theta_m``), the
model is ``coef[m, c] = omega_m A_c`` and ``f_c(x_i) = sum_m omega_m (K_m A_c)_i``.
"""

from __future__ import annotations

import attrs
import numpy as np

#: Below this common scale the stored arrays are rescaled (no underflow after many shrinks).
_SMALLEST_SCALE = 1e-150


@attrs.define(eq=False)
class KernelExpansion:
    """``theta`` through its coefficients ``scale * A`` (C, N) and products ``scale * K_m A_c`` (C, M, N)."""

    A: np.ndarray
    products: np.ndarray
    squared_norms: np.ndarray  # ||theta_m||^2, true scale, shape (M,)
    scale: float = 1.0
    #: Work since this expansion was made: examples visited, kernel rows ``K_m[i, :]`` read.
    examples: int = 0
    rows_read: int = 0

    @classmethod
    def zeros(cls, n_outputs: int, n_kernels: int, n_samples: int) -> KernelExpansion:
        return cls(np.zeros((n_outputs, n_samples)), np.zeros((n_outputs, n_kernels, n_samples)),
                   np.zeros(n_kernels))

    def copy(self) -> KernelExpansion:
        """An independent copy with the scale folded in (exact norms recomputed), its work counters at 0."""
        A, products = self.scale * self.A, self.scale * self.products
        squared = np.maximum(np.einsum("cn,cmn->m", A, products), 0.0)
        return KernelExpansion(A, products, squared)

    @property
    def block_norms(self) -> np.ndarray:
        """``||theta_m||`` per kernel."""
        return np.sqrt(self.squared_norms)

    def values_at(self, weights: np.ndarray, i: int) -> np.ndarray:
        """``f_c(x_i) = sum_m omega_m (K_m A_c)_i`` for every output, shape (C,)."""
        return self.scale * (self.products[:, :, i] @ weights)

    def shrink(self, factor: float) -> None:
        """``theta <- factor * theta`` (no array touched unless ``factor`` is 0)."""
        if factor == 0.0:  # Pegasos' first step: theta forgets everything
            self.A[:] = 0.0
            self.products[:] = 0.0
            self.squared_norms[:] = 0.0
            self.scale = 1.0
            return
        self.scale *= factor
        self.squared_norms *= factor * factor
        if 0.0 < self.scale < _SMALLEST_SCALE:
            self.A *= self.scale
            self.products *= self.scale
            self.scale = 1.0

    def add(self, i: int, u: np.ndarray, rows: np.ndarray, diagonal: np.ndarray) -> None:
        """``theta_{.,c} += u_c phi(x_i)``: ``rows`` is ``K_m[i, :]`` (M, N), ``diagonal`` ``K_m[i, i]`` (M,)."""
        cross = self.scale * self.products[:, :, i]  # (K_m A_c)_i, true scale, (C, M)
        self.squared_norms += 2.0 * (u @ cross) + float(u @ u) * diagonal
        np.maximum(self.squared_norms, 0.0, out=self.squared_norms)
        stored = u / self.scale
        self.rows_read += rows.shape[0]
        self.A[:, i] += stored
        for c in np.flatnonzero(stored):
            self.products[c] += stored[c] * rows

    def coef(self, weights: np.ndarray) -> np.ndarray:
        """The model ``coef[m, c] = omega_m A_c``: (M, N) for one output, else (M, C, N)."""
        A = self.scale * self.A
        if A.shape[0] == 1:
            return weights[:, None] * A[0][None, :]
        return weights[:, None, None] * A[None, :, :]

    def decision_values(self, weights: np.ndarray) -> np.ndarray:
        """``f`` at every training point: (N,) for one output, else (N, C)."""
        f = self.scale * np.einsum("cmn,m->nc", self.products, weights)
        return f[:, 0] if f.shape[1] == 1 else f

    def model_squared_norms(self, weights: np.ndarray) -> np.ndarray:
        """``coef[m, c] @ K_m @ coef[m, c]``: (M,) for one output, else (M, C)."""
        per_output = self.scale**2 * np.einsum("cn,cmn->mc", self.A, self.products)
        sq = np.maximum(per_output, 0.0) * (weights**2)[:, None]
        return sq[:, 0] if sq.shape[1] == 1 else sq
