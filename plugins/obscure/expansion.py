"""OBSCURE's dual iterate (section 3.1): ``theta`` through coefficients and one cached image of it.

Every (sub-)gradient of the loss at example ``i`` is ``g_c phi_m(x_i)`` in
block ``m`` for output ``c``, so the dual iterate is

    ``theta_{m,c} = sum_j A[c, j] phi_m(x_j)``,

one coefficient row per output, shared by all kernels.  Beside ``A`` an
expansion caches an *image* of ``theta`` from which the optimiser's three
questions are answered without a pass over the kernels: the inner products
``<theta_{m,c}, phi_m(x_i)>`` at one example (the decision values that give
the sub-gradient), the block norms ``||theta_m||^2 = sum_c A_c' K_m A_c``,
and the decision values at every training point (the epoch's objective).
Two representations of the one iterate:

* :class:`~.kernel_expansion.KernelExpansion`, for any kernels (a stack,
  rows on demand): the image is the products ``K_m A_c`` at every training
  point, ``(C, M, N)``; an add reads one row ``K_m[i, :]`` of each kernel
  and costs ``O(C M N)``;
* :class:`~.feature_expansion.FeatureExpansion`, for kernels given by
  factors ``K_m = Phi_m Phi_m'``: the image is the primal vectors
  ``W_{c,m} = Phi_m' A_c``, ``(C, M, r)``; an add reads one factor row
  ``Phi_m[i]`` of each kernel and costs ``O(C M r)``.

Both update the block norms by the same formula: adding ``u_c phi(x_i)`` to
``theta_{., c}`` for every output,

    ``||theta_m||^2 += 2 sum_c u_c <theta_{m,c}, phi_m(x_i)> + ||u||^2 K_m(x_i, x_i)``,

and shrinking ``theta`` by a factor (the regulariser's step, the
projection) costs nothing: ``A`` and the image carry one common scale, the
lazy-scaling trick (``A = scale * A_stored``).  One scale serves all
outputs: every shrink scales them alike, and an add stores ``u / scale``
without touching the other outputs.

With the mirror map's factors ``omega`` (``w_m = omega_m theta_m``), the
model is ``coef[m, c] = omega_m A_c`` and
``f_c(x_i) = sum_m omega_m <theta_{m,c}, phi_m(x_i)>``.

Work is counted in kernel rows: :attr:`Expansion.rows_read` is the number of
rows ``K_m[i, :]`` (``N`` numbers each) read from the kernels, or the
equivalent in numbers read (a factor row of ``r`` numbers is ``r / N`` of a
row), and :attr:`Expansion.kernel_passes` that number over the ``M N`` rows
of the stack.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

import attrs
import numpy as np

#: Below this common scale the stored arrays are rescaled (no underflow after many shrinks).
_SMALLEST_SCALE = 1e-150

_E = TypeVar("_E", bound="Expansion")


@attrs.define(eq=False, kw_only=True)
class Expansion(ABC):
    """``theta`` through its coefficients ``scale * A`` (C, N) and its image ``scale * image``."""

    A: np.ndarray
    #: What the representation caches of ``theta`` (stored scale): see the subclasses.
    image: np.ndarray
    #: ``||theta_m||^2``, true scale, shape (M,).
    squared_norms: np.ndarray
    #: ``K_m(x_i, x_i)``, shape (N, M) (one example's entries contiguous).
    diagonal: np.ndarray
    scale: float = 1.0
    #: Work since this expansion was made: examples visited, updates (adds), kernel rows (or their
    #: equivalent) read.
    examples: int = 0
    updates: int = 0
    rows_read: float = 0.0

    @abstractmethod
    def _inner(self, i: int) -> np.ndarray:
        """``<theta_{m,c}, phi_m(x_i)>`` at stored scale, shape (C, M)."""

    @abstractmethod
    def _accumulate(self, i: int, stored: np.ndarray) -> None:
        """The image of ``theta_{., c} += stored_c phi(x_i)`` (stored scale), after :meth:`_inner` at ``i``."""

    @abstractmethod
    def _inner_everywhere(self, weights: np.ndarray) -> np.ndarray:
        """``sum_m omega_m <theta_{m,c}, phi_m(x_n)>`` at stored scale for every training point, (N, C)."""

    @abstractmethod
    def _block_squares(self) -> np.ndarray:
        """``A_c' K_m A_c`` at stored scale, shape (M, C)."""

    def copy(self: _E) -> _E:
        """An independent copy with the scale folded in (exact norms recomputed), its work counters at 0.

        The kernels it reads are shared, not copied."""
        fresh = attrs.evolve(self, A=self.scale * self.A, image=self.scale * self.image,
                             scale=1.0, examples=0, updates=0, rows_read=0.0)
        fresh.squared_norms = np.maximum(fresh._block_squares().sum(axis=1), 0.0)
        return fresh

    @property
    def block_norms(self) -> np.ndarray:
        """``||theta_m||`` per kernel."""
        return np.sqrt(self.squared_norms)

    @property
    def kernel_passes(self) -> float:
        """:attr:`rows_read` in passes over the ``M N`` rows of the stack."""
        return self.rows_read / self.A.shape[1] / self.squared_norms.size

    def values_at(self, weights: np.ndarray, i: int) -> np.ndarray:
        """``f_c(x_i) = sum_m omega_m <theta_{m,c}, phi_m(x_i)>`` for every output, shape (C,)."""
        return self.scale * (self._inner(i) @ weights)

    def shrink(self, factor: float) -> None:
        """``theta <- factor * theta`` (no array touched unless ``factor`` is 0)."""
        if factor == 0.0:  # Pegasos' first step: theta forgets everything
            self.A[:] = 0.0
            self.image[:] = 0.0
            self.squared_norms[:] = 0.0
            self.scale = 1.0
            return
        self.scale *= factor
        self.squared_norms *= factor * factor
        if 0.0 < self.scale < _SMALLEST_SCALE:
            self.A *= self.scale
            self.image *= self.scale
            self.scale = 1.0

    def prefetch(self, indices: np.ndarray, weights: np.ndarray,
                 will_update: Callable[[np.ndarray], np.ndarray]) -> None:
        """Examples ``indices`` are about to be visited; ``will_update`` maps their decision values
        (B, C) to the examples predicted to update (here: nothing to prepare; an expansion reading
        kernel rows computed on demand computes those examples' rows together)."""

    def add(self, i: int, u: np.ndarray) -> None:
        """``theta_{., c} += u_c phi(x_i)`` for every output (``u`` shape (C,)), reading example ``i``'s kernels."""
        self.updates += 1
        cross = self.scale * self._inner(i)  # <theta_{m,c}, phi_m(x_i)>, true scale, (C, M)
        self.squared_norms += 2.0 * (u @ cross) + float(u @ u) * self.diagonal[i]
        np.maximum(self.squared_norms, 0.0, out=self.squared_norms)
        stored = u / self.scale
        self.A[:, i] += stored
        self._accumulate(i, stored)

    def coef(self, weights: np.ndarray) -> np.ndarray:
        """The model ``coef[m, c] = omega_m A_c``: (M, N) for one output, else (M, C, N)."""
        A = self.scale * self.A
        if A.shape[0] == 1:
            return weights[:, None] * A[0][None, :]
        return weights[:, None, None] * A[None, :, :]

    def decision_values(self, weights: np.ndarray) -> np.ndarray:
        """``f`` at every training point: (N,) for one output, else (N, C)."""
        f = self.scale * self._inner_everywhere(weights)
        return f[:, 0] if f.shape[1] == 1 else f

    def model_squared_norms(self, weights: np.ndarray) -> np.ndarray:
        """``coef[m, c] @ K_m @ coef[m, c]``: (M,) for one output, else (M, C)."""
        per_output = self.scale**2 * self._block_squares()
        sq = np.maximum(per_output, 0.0) * (weights**2)[:, None]
        return sq[:, 0] if sq.shape[1] == 1 else sq
