"""OBSCURE's dual iterate (section 3.1): ``theta`` through coefficients and one cached image of it.

The iterate is ``theta_{m,c} = sum_j A[c, j] phi_m(x_j)``, one coefficient row per output shared
by all kernels.  Beside ``A`` an expansion caches an image of ``theta`` that answers the
optimiser's questions without a pass over the kernels: the inner products at one example, the
block norms ``||theta_m||^2`` (updated per add) and the decision values at every training
point.  :class:`~.kernel_expansion.KernelExpansion` caches the products ``K_m A_c`` (a stack or
rows on demand; an add costs ``O(C M N)``), :class:`~.feature_expansion.FeatureExpansion` the
primal vectors ``Phi_m' A_c`` (kernel factors; ``O(C M r)``).  Shrinks are free: ``A`` and the
image carry one lazy common scale.  The model is ``coef[m, c] = omega_m A_c``, ``omega`` the
mirror map's factors; work is counted in kernel rows read (:attr:`Expansion.rows_read`).
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
    #: The block of :meth:`defer` (None: adds reach the image at once), each example's position
    #: in it (-1 outside), the inner products at its examples when it began (C, M, B), the
    #: deferred adds' part of them (C, M, B), the block's kernels ``K_m[block, block]`` from the
    #: first deferred add's position ``_origin`` on, and the deferred adds themselves.
    _block: np.ndarray | None = attrs.field(default=None, init=False)
    _slot: np.ndarray = attrs.field(factory=lambda: np.empty(0, dtype=np.intp), init=False)
    _begun: np.ndarray = attrs.field(factory=lambda: np.empty(0), init=False)
    _deferred: np.ndarray = attrs.field(factory=lambda: np.empty(0), init=False)
    _within: np.ndarray = attrs.field(factory=lambda: np.empty(0), init=False)
    _origin: int = attrs.field(default=0, init=False)
    _pending: list[tuple[int, np.ndarray]] = attrs.field(factory=list, init=False)

    @abstractmethod
    def _inner(self, i: int) -> np.ndarray:
        """``<theta_{m,c}, phi_m(x_i)>`` at stored scale, shape (C, M)."""

    @abstractmethod
    def _inner_block(self, indices: np.ndarray) -> np.ndarray:
        """:meth:`_inner` at every example of ``indices``, shape (C, M, B)."""

    @abstractmethod
    def _entries(self, indices: np.ndarray) -> np.ndarray:
        """``K_m[indices, indices]``, shape (M, B, B)."""

    @abstractmethod
    def _accumulate(self, i: int, stored: np.ndarray) -> None:
        """The image of ``theta_{., c} += stored_c phi(x_i)`` (stored scale)."""

    def _before_deferred(self, examples: np.ndarray) -> None:  # noqa: B027 (a no-op default, not abstract)
        """The deferred adds at ``examples`` are about to reach the image (a representation
        reading kernel rows on demand computes theirs together)."""

    @abstractmethod
    def _inner_everywhere(self, weights: np.ndarray) -> np.ndarray:
        """``sum_m omega_m <theta_{m,c}, phi_m(x_n)>`` at stored scale for every training point, (N, C)."""

    @abstractmethod
    def _block_squares(self) -> np.ndarray:
        """``A_c' K_m A_c`` at stored scale, shape (M, C)."""

    def copy(self: _E) -> _E:
        """An independent copy with the scale folded in (exact norms recomputed), its work counters at 0.

        The kernels it reads are shared, not copied."""
        self.flush()
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
        if self._block is not None:
            return self.values_block(weights, np.array([i]))[0]
        return self.scale * (self._inner(i) @ weights)

    def values_block(self, weights: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """:meth:`values_at` at every example of ``indices`` at once, shape (B, C)."""
        return self.scale * np.einsum("cmb,m->bc", self._inner_now(indices), weights)

    def defer(self, block: np.ndarray) -> None:
        """Adds at ``block``'s examples wait for :meth:`flush` to reach the image.  Meanwhile the
        inner products at the block's examples are those at its start (read once) plus the
        deferred adds' part, from the block's own kernels ``K_m[block, block]`` (``O(M B^2)``,
        computed at the first add, from its position on): exact at the examples after the
        last add.  :meth:`flush` then applies the adds together: on kernel rows computed on
        demand one block of rows, of exactly the examples that were added."""
        self.flush()
        if not self._slot.size:
            self._slot = np.full(self.A.shape[1], -1)
        self._slot[block] = np.arange(block.size)
        self._block = block
        self._begun = self._inner_block(block)
        self._deferred = np.zeros_like(self._begun)

    def flush(self) -> None:
        """Bring the image up to date with the deferred adds and end :meth:`defer`'s block."""
        if self._block is None:
            return
        if self._pending:
            self._before_deferred(np.array([i for i, _ in self._pending]))
        for i, stored in self._pending:
            self._accumulate(i, stored)
        self._slot[self._block] = -1
        self._block, self._pending = None, []

    def _inner_now(self, indices: np.ndarray) -> np.ndarray:
        """``<theta_{m,c}, phi_m(x_i)>`` at stored scale at ``indices``, deferred adds included."""
        if self._block is not None:
            slots = self._slot[indices]
            if np.all(slots >= (self._origin if self._pending else 0)):
                return self._begun[:, :, slots] + self._deferred[:, :, slots]
            self.flush()  # outside the block, or before the first add's position: no entries
        return self._inner_block(indices)

    def shrink(self, factor: float) -> None:
        """``theta <- factor * theta`` (no array touched unless ``factor`` is 0)."""
        self.flush()
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

    def prefetch(self, indices: np.ndarray, weights: np.ndarray,  # noqa: B027 (a no-op default, not abstract)
                 will_update: Callable[[np.ndarray], np.ndarray]) -> None:
        """Examples ``indices`` are about to be visited; ``will_update`` maps their decision values
        (B, C) to the examples predicted to update (here: nothing to prepare; an expansion reading
        kernel rows computed on demand computes those examples' rows together)."""

    def inner_products(self, i: int) -> np.ndarray:
        """``<theta_{m,c}, phi_m(x_i)>`` at true scale, deferred adds included, shape (C, M)."""
        inner = self._inner(i) if self._block is None else self._inner_now(np.array([i]))[:, :, 0]
        return self.scale * inner

    def add(self, i: int, u: np.ndarray) -> None:
        """``theta_{., c} += u_c phi(x_i)`` for every output (``u`` shape (C,)), reading example ``i``'s kernels."""
        self.updates += 1
        cross = self.inner_products(i)
        self.squared_norms += 2.0 * (u @ cross) + float(u @ u) * self.diagonal[i]
        np.maximum(self.squared_norms, 0.0, out=self.squared_norms)
        stored = u / self.scale
        self.A[:, i] += stored
        if self._block is None:
            self._accumulate(i, stored)
            return
        if not self._pending:  # the block's kernels from this add's position on
            self._origin = int(self._slot[i])
            self._within = self._entries(self._block[self._origin:])
        column = self._within[:, int(self._slot[i]) - self._origin, :]  # K_m[i, later], (M, B')
        for c in np.flatnonzero(stored):
            self._deferred[c, :, self._origin:] += stored[c] * column
        self._pending.append((i, stored))

    def coef(self, weights: np.ndarray) -> np.ndarray:
        """The model ``coef[m, c] = omega_m A_c``: (M, N) for one output, else (M, C, N)."""
        A = self.scale * self.A
        if A.shape[0] == 1:
            return weights[:, None] * A[0][None, :]
        return weights[:, None, None] * A[None, :, :]

    def decision_values(self, weights: np.ndarray) -> np.ndarray:
        """``f`` at every training point: (N,) for one output, else (N, C)."""
        self.flush()
        f = self.scale * self._inner_everywhere(weights)
        return f[:, 0] if f.shape[1] == 1 else f

    def model_squared_norms(self, weights: np.ndarray) -> np.ndarray:
        """``coef[m, c] @ K_m @ coef[m, c]``: (M,) for one output, else (M, C)."""
        sq = self.output_squared_norms() * (weights**2)[:, None]
        return sq[:, 0] if sq.shape[1] == 1 else sq

    def output_squared_norms(self) -> np.ndarray:
        """``||theta_{m,c}||^2 = A_c' K_m A_c`` recomputed from the image (not the running
        :attr:`squared_norms`), shape (M, C)."""
        self.flush()
        return np.maximum(self.scale**2 * self._block_squares(), 0.0)
