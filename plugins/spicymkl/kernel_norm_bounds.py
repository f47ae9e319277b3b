"""Certified bounds on the kernel norms ``||v||_{K_m}`` of a moving vector, between reads of the kernels.

A dual method for ``l1_mkl`` asks of every kernel at each iterate whether ``||rho||_{K_m}``
passes the threshold ``C`` and what ``max_m ||rho||_{K_m}`` is (for the certificate): a pass
over the stack each, answered exactly.  With ``g_m = K_m u_m`` kept from the kernel's last read
``u_m``, any ``v = u_m + d`` has ``v'K_m v = u_m'K_m u_m + 2 g_m'd + d'K_m d`` and
``|d'K_m d| <= ||K_m||_F ||d||^2`` (any symmetric kernel, PSD or not): an interval for ``O(N)``
work a kernel instead of ``O(N^2)``, widened by ``1e-12`` of its terms so that rounding never
screens a kernel out.  :class:`KernelNormBounds` keeps them; methods that learn ``K_m v``
another way hand it over (:meth:`KernelNormBounds.update`).  Why, and what it saved:
docs/methods/spicymkl.md (bounded checks).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels import array_backend
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.products import float64_blocks, is_float64, kernels_times

#: Relative widening of every interval, for the rounding of the sums that form it.
ROUNDING = 1e-12


def kernel_times_and_frobenius(K: np.ndarray | FactorKernels, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K_m @ V`` (shape ``(M, N) + V.shape[1:]``) and ``||K_m||_F`` for every kernel, in one pass.

    Kernel by kernel, so that each ``K_m`` is read for its Frobenius norm
    while it is in cache; from factors ``K_m = Phi_m Phi_m'``,
    ``||K_m||_F = ||Phi_m' Phi_m||_F``."""
    if isinstance(K, FactorKernels):
        return K.times(V), np.array([np.linalg.norm(F.T @ F) for F in K.factors])
    if array_backend.is_device_array(K):  # on the device: two reads there, no transfer of a kernel
        return array_backend.kernel_times(K, V), array_backend.frobenius_norms(K)
    M, N = K.shape[0], K.shape[1]
    products = np.empty((M, N) + V.shape[1:])
    frobenius = np.empty(M)
    for m in range(M):
        if is_float64(K):
            Km = K[m]
            np.matmul(Km, V, out=products[m])
            frobenius[m] = np.sqrt(np.vdot(Km, Km))  # 30% faster than einsum here (M = 3000)
        else:
            squares = 0.0
            for rows, block in float64_blocks(K[m]):
                products[m][rows] = block @ V
                squares += float(np.einsum("ij,ij->", block, block))
            frobenius[m] = np.sqrt(squares)
    return products, frobenius


@attrs.define(eq=False)
class KernelNormBounds:
    """Per kernel: ``K_m u_m`` at its last exact read ``u_m``, ``u_m'K_m u_m`` and ``||K_m||_F``."""

    #: ``K_m u_m``, shape (M, N).
    products: np.ndarray
    #: ``u_m'K_m u_m``, shape (M,).
    squares: np.ndarray
    #: ``||K_m||_F``, shape (M,).
    frobenius: np.ndarray
    #: The reference vectors, and which one each kernel's product belongs to.
    references: list[np.ndarray]
    reference: np.ndarray

    @classmethod
    def at(cls, products: np.ndarray, v: np.ndarray, frobenius: np.ndarray) -> KernelNormBounds:
        """Bounds from ``K_m v`` of every kernel (``products``, (M, N))."""
        products = np.array(products, dtype=np.float64)
        return cls(products, products @ v, np.asarray(frobenius, dtype=np.float64),
                   [np.array(v, dtype=np.float64)], np.zeros(products.shape[0], dtype=int))

    def update(self, kernels: np.ndarray, v: np.ndarray, products: np.ndarray) -> None:
        """``K_m v`` is now known for ``kernels`` (``products``, one row each)."""
        if kernels.size == 0:
            return
        index = self._index_of(v)
        if index is None:
            index = len(self.references)
            self.references.append(np.array(v, dtype=np.float64))
        self.products[kernels] = products
        self.squares[kernels] = products @ v
        self.reference[kernels] = index
        self._forget_unused()

    def exact(self, v: np.ndarray) -> np.ndarray:
        """Whether each kernel's product is at ``v`` (its norm at ``v`` is then known exactly)."""
        index = self._index_of(v)
        return np.zeros(self.reference.size, dtype=bool) if index is None else self.reference == index

    def _index_of(self, v: np.ndarray) -> int | None:
        """The index of ``v`` among the reference vectors (kept distinct), or None."""
        return next((index for index, reference in enumerate(self.references)
                     if reference is v or np.array_equal(reference, v)), None)

    def squared_interval(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds on ``v'K_m v`` for every kernel, ``O(M N)``; equal where exact."""
        first = np.empty_like(self.squares)
        spread = np.empty_like(self.squares)
        for index, reference in enumerate(self.references):
            kernels = np.flatnonzero(self.reference == index)
            if kernels.size == 0:
                continue
            d = v - reference
            cross = self.products[kernels] @ d
            first[kernels] = self.squares[kernels] + 2.0 * cross
            spread[kernels] = self.frobenius[kernels] * float(d @ d)
            spread[kernels] += ROUNDING * (np.abs(self.squares[kernels]) + 2.0 * np.abs(cross)
                                           + spread[kernels])
        return first - spread, first + spread

    def norms(self, K: np.ndarray | FactorKernels, v: np.ndarray,
              known: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, float]:
        """``||v||_{K_m}`` for every kernel where it could be the largest, upper bounds elsewhere.

        ``known``: kernels and their ``v'K_m v``, known exactly another way.
        The kernels whose upper bound reaches the largest lower bound are read
        (the others cannot hold the maximum), so ``max`` of the result is
        ``max_m ||v||_{K_m}`` exactly, and every entry is at least the
        norm.  Returns the norms and the kernels read, as a fraction of a
        pass.  Nothing is stored: ``v`` is typically a one-off point."""
        lower, upper = self.squared_interval(v)
        if known is not None:
            lower[known[0]] = upper[known[0]] = known[1]
        read = np.flatnonzero(upper >= max(float(lower.max(initial=0.0)), 0.0))
        if known is not None:
            read = np.setdiff1d(read, known[0], assume_unique=True)
        squares = upper.copy()
        if read.size:
            products = kernels_times(K, v, read)
            squares[read] = products @ v
        return np.sqrt(np.maximum(squares, 0.0)), read.size / K.shape[0]

    def _forget_unused(self) -> None:
        """Drop reference vectors no kernel refers to any more (renumbering the others)."""
        used = np.unique(self.reference)
        if used.size == len(self.references):
            return
        renumber = np.full(len(self.references), -1)
        renumber[used] = np.arange(used.size)
        self.references = [self.references[i] for i in used]
        self.reference = renumber[self.reference]
