"""OBSCURE's iterate in the primal, on kernel factors ``K_m = Phi_m Phi_m'``: O(N r M) per epoch.

The representation of :mod:`.expansion` for :class:`~kernelfuse.kernels.factors.FactorKernels`:
the blocks of ``theta_{m,c} = sum_j A[c, j] phi_m(x_j)`` are vectors of ``R^{r_m}``, and the image
is those vectors, ``W_{c,m} = Phi_m' A_c``.  An inner product at an example and an add cost
``O(C M r)`` and no kernel row is ever formed (an epoch ``O(N r M C)``, against ``O(N^2 M)`` for
:class:`~.kernel_expansion.KernelExpansion`); ``A`` is kept for the model.  The factors are
stacked once, example-major, ``(N, M, r)`` zero-padded to the largest rank, and work is counted
in kernel-row equivalents (docs/kernels.md, primal OBSCURE on factors).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.plugins.obscure.expansion import Expansion


@attrs.define(eq=False, kw_only=True)
class FeatureExpansion(Expansion):
    """``theta`` through ``scale * A`` (C, N) and the primal vectors ``scale * Phi_m' A_c`` (C, M, r)."""

    #: ``Phi_m[i]`` at ``features[i, m]``, shape (N, M, r), zero-padded to the largest rank.
    features: np.ndarray

    @classmethod
    def zeros(cls, n_outputs: int, kernels: FactorKernels) -> FeatureExpansion:
        """``theta = 0`` on the factors of ``kernels``."""
        M, N = kernels.shape[0], kernels.shape[1]
        features = np.zeros((N, M, int(kernels.ranks.max())))
        for m, Phi in enumerate(kernels.factors):
            features[:, m, :Phi.shape[1]] = Phi
        return cls(A=np.zeros((n_outputs, N)), image=np.zeros((n_outputs, M, features.shape[2])),
                   squared_norms=np.zeros(M), diagonal=np.ascontiguousarray(kernels.diagonal().T),
                   features=features)

    def _read(self, i: int) -> np.ndarray:
        """Example ``i``'s features (M, r), counted as ``M r / N`` kernel rows."""
        features = self.features[i]
        self.rows_read += features.size / self.features.shape[0]
        return features

    def _inner(self, i: int) -> np.ndarray:
        return np.einsum("cmr,mr->cm", self.image, self._read(i))

    def _inner_block(self, indices: np.ndarray) -> np.ndarray:
        features = self.features[indices]
        self.rows_read += features.size / self.features.shape[0]
        return np.einsum("cmr,bmr->cmb", self.image, features)

    def _entries(self, indices: np.ndarray) -> np.ndarray:
        features = self.features[indices]
        self.rows_read += features.size / self.features.shape[0]
        return np.einsum("bmr,dmr->mbd", features, features)

    def _accumulate(self, i: int, stored: np.ndarray) -> None:
        features = self.features[i]  # read by the add's inner products (or the block's)
        for c in np.flatnonzero(stored):
            self.image[c] += stored[c] * features

    def _inner_everywhere(self, weights: np.ndarray) -> np.ndarray:
        N, M, r = self.features.shape
        self.rows_read += M * r
        weighted = (self.image * weights[None, :, None]).reshape(-1, M * r)
        return self.features.reshape(N, M * r) @ weighted.T

    def _block_squares(self) -> np.ndarray:
        return np.einsum("cmr,cmr->mc", self.image, self.image)
