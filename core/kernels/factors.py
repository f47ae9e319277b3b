"""Kernels given by explicit features on the training points: ``K_m = Phi_m Phi_m'``, never formed.

A kernel function with explicit features (Nystrom, random Fourier features) has on ``N``
training points a factor ``Phi_m`` of shape ``(N, r_m)``, the normalisation's scales folded into
its rows.  :class:`FactorKernels` holds the factors (``8 N sum_m r_m`` bytes where the stack takes
``8 M N^2``) and stands for the stack wherever kernel rows go: a row or a product
``K_m v = Phi_m (Phi_m' v)`` costs ``O(N r_m)``, exactly.  Solvers that declare
``reads_kernel_factors`` work from the factors themselves (OBSCURE's primal iterate, SpicyMKL's
Woodbury Newton system); the others that read rows read them from here.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.kernels.rows import KernelRows


def has_features(spec: KernelSpec) -> bool:
    """Whether the spec's kernel function gives explicit features (``features(X)``)."""
    return callable(getattr(spec.function, "features", None))


@attrs.define(eq=False)
class FactorKernels(KernelRows):
    """``M`` kernels ``K_m = Phi_m Phi_m'`` on ``N`` points, from their factors (each ``(N, r_m)``)."""

    factors: list[np.ndarray] = attrs.field(converter=list)

    def __attrs_post_init__(self) -> None:
        if not self.factors:
            raise ValidationError("factor kernels need at least one factor")
        factors = []
        for m, Phi in enumerate(self.factors):
            Phi = np.asarray(Phi, dtype=np.float64)
            if Phi.ndim != 2 or Phi.shape[0] != np.asarray(self.factors[0]).shape[0] or Phi.shape[1] == 0:
                raise ValidationError(
                    f"factor {m} must have shape (N, r) with N = {np.asarray(self.factors[0]).shape[0]} "
                    f"and r >= 1, got {Phi.shape}")
            if not np.isfinite(Phi).all():
                raise ValidationError(f"factor {m} contains NaN or inf")
            factors.append(np.ascontiguousarray(Phi))
        self.factors = factors
        N = factors[0].shape[0]
        self.shape = (len(factors), N, N)
        self._diagonal = np.stack([np.einsum("ij,ij->i", Phi, Phi) for Phi in factors])

    @classmethod
    def from_specs(cls, specs: Sequence[KernelSpec], X: np.ndarray,
                   normalization: str | KernelNormalizer = "unit-trace") -> FactorKernels:
        """The factors of ``specs`` (each with explicit features) on ``X``, normalised as the stack
        would be: by ``normalization``, or by a normaliser already fitted on ``X``.  Each kernel's
        features are computed once (the diagonals a normaliser fits on are their squared norms)."""
        specs = list(specs)
        missing = [m for m, spec in enumerate(specs) if not has_features(spec)]
        if missing:
            raise ValidationError(
                f"kernel(s) {', '.join(map(str, missing[:10]))} have no explicit features: factor "
                "kernels need low-rank kernels (Nystrom, random Fourier features) only")
        X = np.asarray(X, dtype=np.float64)
        features = [spec.function.features(spec.columns(X)) for spec in specs]
        normalizer = normalization if isinstance(normalization, KernelNormalizer) else \
            KernelNormalizer(normalization).fit_diagonal(np.stack([np.einsum("ij,ij->i", phi, phi)
                                                                  for phi in features]))
        scales = normalizer.training_scales()
        return cls([scales[m][:, None] * phi for m, phi in enumerate(features)])

    @property
    def ranks(self) -> np.ndarray:
        """``r_m`` for every kernel."""
        return np.array([Phi.shape[1] for Phi in self.factors])

    @property
    def nbytes(self) -> int:
        """Bytes the factors take."""
        return int(sum(Phi.nbytes for Phi in self.factors))

    def rows(self, i: int) -> np.ndarray:
        return np.stack([Phi @ Phi[i] for Phi in self.factors])

    def diagonal(self) -> np.ndarray:
        return self._diagonal

    def times(self, V: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        """``K_m @ V`` for every kernel (or those of ``kernels``, in their order): shape
        ``(M,) + V.shape``, in ``O(N r)`` per kernel and column of ``V``."""
        factors = self.factors if kernels is None else [self.factors[m] for m in kernels]
        return np.stack([Phi @ (Phi.T @ V) for Phi in factors])

    def products(self, coef: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        """``K_m @ coef_m`` for every kernel (and output), exactly, from the factors; only those
        of ``kernels`` when given (the others 0)."""
        out = np.zeros(coef.shape)
        for m in range(len(self.factors)) if kernels is None else kernels:
            Phi = self.factors[m]
            out[m] = ((Phi @ (Phi.T @ coef[m].T)).T if coef.ndim == 3 else Phi @ (Phi.T @ coef[m]))
        return out
