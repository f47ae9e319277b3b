"""Random Fourier features of the Gaussian kernel (Rahimi & Recht 2007).

By Bochner's theorem ``exp(-||x - z||^2 / (2 width^2)) = E[2 cos(w'x + b) cos(w'z + b)]``
(``w ~ N(0, I / width^2)``, ``b ~ U[0, 2 pi)``), so ``r`` draws give
``phi(x) = sqrt(2 / r) cos(Omega x / width + b)``, an unbiased estimate of the kernel with an
error of order ``1 / sqrt(r)``.  :meth:`RandomFourierFeatures.draw` draws ``Omega`` (r, d) for
the input dimension ``d``; the kernel keeps the draws as arrays, so a saved model reloads
them as drawn, and ``attrs.evolve(kernel, width=w)`` reuses them at another width.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.plugins.kernels.nystrom import FeatureMap, array_repr, frozen_array
from kernelfuse.validation import count, positive, positive_count


@attrs.frozen(eq=False, kw_only=True)
class RandomFourierFeatures(FeatureMap):
    """Random Fourier features sqrt(2/r) cos(Omega x / width + b) of the Gaussian kernel (Rahimi-Recht).

    Build it with :meth:`draw`; the fields are what a saved model stores.
    """

    name = "random-fourier"
    #: The Gaussian kernel's width: ``k(x, z) = exp(-||x - z||^2 / (2 width^2))``.
    width: float = positive.field(1.0)
    #: ``r``, the number of features.
    n_features: int = positive_count.field()
    #: The seed ``frequencies`` and ``offsets`` were drawn from (kept as provenance).
    seed: int = count.field(0)
    # mypy's attrs plugin reads named converters only, not frozen_array(...)'s: the ignores below.
    #: ``Omega``, shape (r, d): standard normal draws (the frequencies for width 1).
    frequencies: np.ndarray = attrs.field(converter=frozen_array(2, "frequencies"), repr=array_repr)  # type: ignore[misc]
    #: ``b``, shape (r,): uniform draws in [0, 2 pi).
    offsets: np.ndarray = attrs.field(converter=frozen_array(1, "offsets"), repr=array_repr)  # type: ignore[misc]

    def __attrs_post_init__(self) -> None:
        if self.frequencies.shape[0] != self.n_features or self.offsets.shape != (self.n_features,):
            r = self.n_features
            raise ValidationError(
                f"random-fourier: {r} features need frequencies of shape ({r}, d) and offsets of shape "
                f"({r},), got {self.frequencies.shape} and {self.offsets.shape}"
            )

    @classmethod
    def draw(cls, n_inputs: int, *, width: float = 1.0, n_features: int = 1000,
             seed: int = 0) -> RandomFourierFeatures:
        """``n_features`` random features for inputs of ``n_inputs`` columns, deterministic in ``seed``."""
        for what, value in (("n_inputs", n_inputs), ("n_features", n_features)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValidationError(f"{what} must be a positive integer, got {value!r}")
        rng = np.random.default_rng(seed)
        frequencies = rng.standard_normal((int(n_features), int(n_inputs)))
        offsets = rng.uniform(0.0, 2.0 * np.pi, int(n_features))
        return cls(width=width, n_features=int(n_features), seed=seed, frequencies=frequencies,
                   offsets=offsets)

    @property
    def n_inputs(self) -> int:
        return int(self.frequencies.shape[1])

    def _map(self, X: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            projection = X @ (self.frequencies.T / self.width)
            projection += self.offsets
        if not np.isfinite(projection).all():
            raise ValidationError(
                f"random-fourier: width {self.width:g} is too small for these features: Omega x / width "
                "overflows float64; give a larger width (or standardise the features)")
        return np.sqrt(2.0 / self.n_features) * np.cos(projection, out=projection)
