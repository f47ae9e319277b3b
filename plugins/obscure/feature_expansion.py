"""OBSCURE's iterate in the primal, on kernel factors ``K_m = Phi_m Phi_m'``: O(N r M) per epoch.

The representation of :mod:`.expansion` for
:class:`~kernelfuse.kernels.factors.FactorKernels`.  With explicit features
``phi_m(x_j) = Phi_m[j]`` (``r_m`` numbers) the blocks of
``theta_{m,c} = sum_j A[c, j] phi_m(x_j)`` are vectors of ``R^{r_m}``, and
the image is those vectors themselves:

    ``image[c, m] = W_{c,m} = Phi_m' A_c``  (``(C, M, r)``),

so that, at stored scale,

* ``<theta_{m,c}, phi_m(x_i)> = W_{c,m} . Phi_m[i]``: ``O(C M r)`` at an
  example, ``O(N M r C)`` at every training point (the epoch's objective);
* ``||theta_m||^2 = sum_c ||W_{c,m}||^2`` (``A_c' K_m A_c``);
* adding ``u_c phi(x_i)`` is ``W_{c,m} += u_c Phi_m[i]``: ``O(C M r)``.

No kernel row is ever formed: one epoch costs ``O(N r M C)`` against
``O(N^2 M)`` for :class:`~.kernel_expansion.KernelExpansion`, which reads
a row ``K_m[i, :]`` (``O(N r)`` from factors) per update and updates
products at all ``N`` points.  ``A`` is kept as well: the model is still
``coef[m, c] = omega_m A_c``, the dual coefficients of the objective.

The factors are stacked once, example-major, as ``features`` of shape
``(N, M, r)`` with ``r = max_m r_m`` (a kernel of smaller rank padded with
zero columns, which change no inner product): one example's features are
one contiguous ``(M, r)`` block.  Work is counted in kernel-row equivalents
(:mod:`.expansion`): reading one example's features (``M r`` numbers)
counts ``M r / N`` rows; :meth:`values_at` and :meth:`add` read them once
each, :meth:`decision_values` reads all ``N``.  An epoch with ``U`` updates
whose objective is evaluated thus reads ``(2 N + U) M r / N`` rows, that
is ``(2 + U / N) r / N`` kernel passes.
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
