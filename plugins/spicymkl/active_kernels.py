"""SpicyMKL's kernel bookkeeping: the kernel terms of ``phi_gamma`` from cached products (Remark 1, section 3.4).

At a centre ``alpha`` with penalty ``gamma``, kernel ``m`` enters the inner dual through
``r_m = ||alpha_m - gamma rho||_{K_m}`` and its block soft-threshold ``r'_m``.
:class:`KernelTerms` keeps ``K_m alpha_m`` and ``K_m rho``, so that along a Newton direction the
norms are quadratics in the step (every line-search trial is free, section 3.4), and the
gradient and Hessian involve only the active kernels ``r_m > gamma C`` (Remark 1), the Hessian
re-reading a kernel only when its weight moved (:meth:`KernelTerms.hessian`).
:meth:`KernelTerms.newton_system` hands the system to :mod:`.newton_system` (a matrix from a
stack, low-rank factors from :class:`~kernelfuse.kernels.factors.FactorKernels`).  Products go
through :mod:`kernelfuse.kernels.products`.  For a stack on a device every array here lives on
that device, and :meth:`KernelTerms.read` is a Newton step's one read from it.
The formulas: docs/methods/spicymkl.md, the inner problem.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from kernelfuse.kernels import array_backend
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.products import add_kernel, kernel_times, kernels_times
from kernelfuse.parts.regularizer import SeparablePenalty
from kernelfuse.plugins.spicymkl.newton_system import DenseSystem, DeviceSystem, LowRankSystem, NewtonSystem


@attrs.define(slots=False)
class KernelTerms:
    """Kernel terms of the inner dual at one centre over the working set ``kernels``; ``K_rho`` follows ``rho``.

    ``K_alpha``, ``a_K_a`` and ``K_rho`` hold the rows of the working set only; ``K`` is a
    stack (float64 or float32) or :class:`~kernelfuse.kernels.factors.FactorKernels`.  The
    arrays given are NumPy's; for a device stack they are copied there once, and ``rho`` and
    ``K_rho`` come back by :meth:`on_host`.
    """

    K: np.ndarray | FactorKernels
    kernels: np.ndarray
    K_alpha: Any
    a_K_a: Any
    gamma: float
    #: The problem's penalty of the kernel norms (its radial prox: ``l1_mkl``'s block soft-thresholding;
    #: on a device, called on the host unless it computes in any namespace).
    penalty: SeparablePenalty | array_backend.HostCalls
    rho: Any
    K_rho: Any
    #: Relative change of ``s_m`` below which the Hessian keeps the kernel's old weight.
    hessian_tol: float = 0.0
    passes: float = 0.0

    def __attrs_post_init__(self) -> None:
        self._everything = self.kernels.size == self.K.shape[0]
        self.on_device = array_backend.is_device_array(self.K)
        #: The namespace of every array here: NumPy, or the stack's library.
        self.xp = array_backend.array_namespace(self.K)
        if self.on_device:
            K = self.K
            self.K_alpha, self.a_K_a, self.rho, self.K_rho = array_backend.all_like_stack(
                (self.K_alpha, self.a_K_a, self.rho, self.K_rho), K)
            if not self.penalty.array_api:
                self.penalty = array_backend.HostCalls(self.penalty, K)
            self._subset = array_backend.KernelSubset(K, self.kernels)
        self._weighted_sum: Any = None  # sum_m w_m K_m (N x N, stacks only), from hessian()
        self._weights = np.zeros(self.kernels.size)  # the w_m it holds
        self._refresh()

    def _refresh(self) -> None:
        g, xp = self.gamma, self.xp
        self.a_K_r = self.K_alpha @ self.rho
        self.r_K_r = self.K_rho @ self.rho
        self.norms = xp.sqrt(array_backend.clip(self.a_K_a - 2 * g * self.a_K_r + g * g * self.r_K_r, 0.0))
        prox: tuple[Any, Any] = self.penalty.radial_prox(self.norms, g)
        self.shrunk, self.slope = prox
        self.scale = self.scale_of(self.norms, self.shrunk)
        if not self.on_device:
            self.host_scale = self.scale  # the weights s_m as the host reads them (device: read())

    def scale_of(self, norms: Any, shrunk: Any) -> Any:
        """``s_m = r'_m / r_m`` (0 where ``r_m = 0``)."""
        xp = self.xp
        positive = norms > 0
        return xp.where(positive, shrunk / xp.where(positive, norms, 1.0), 0.0)

    def read(self, residual: Any, length: Any | None) -> tuple[float, float | None]:
        """A Newton step's ``residual`` and the last step's ``length`` (0-d arrays; None before
        the first step) as host numbers, and the weights ``s_m``: on a device, one transfer (the
        weights, kept as ``host_scale``, choose the kernels the lazy Hessian re-reads)."""
        if not self.on_device:
            return float(residual), None if length is None else float(length)
        xp = self.xp
        numbers = [xp.reshape(residual, (1,))] + ([] if length is None else [xp.reshape(length, (1,))])
        values = array_backend.to_numpy(xp.concat([*numbers, self.scale]))
        self.host_scale = values[len(numbers):]
        return float(values[0]), None if length is None else float(values[1])

    def on_host(self) -> tuple[np.ndarray, np.ndarray]:
        """``rho`` and ``K_m rho`` over the working set as NumPy arrays (on a device: one transfer)."""
        if not self.on_device:
            return self.rho, self.K_rho
        both = array_backend.to_numpy(self.xp.concat([self.rho[None, :], self.K_rho], axis=0))
        return both[0], both[1:]

    def value(self, norms: Any = None) -> Any:
        """The kernel terms of ``phi`` at the current ``rho``, or at the given norms ``r_m`` (k,) or
        (k, T) (each column a trial point of the line search)."""
        xp = self.xp
        r = self.norms if norms is None else norms
        shrunk = self.shrunk if norms is None else self.penalty.radial_prox(r, self.gamma)[0]
        return (xp.sum((2 * r - shrunk) * shrunk, axis=0) / (2 * self.gamma)
                - xp.sum(self.penalty.kernel_values(shrunk), axis=0))

    def K_v(self) -> Any:
        """``K_m v_m`` for every kernel."""
        return self.K_alpha - self.gamma * self.K_rho

    def gradient(self) -> Any:
        """``-sum_m s_m K_m v_m``."""
        return -(self.scale @ self.K_v())

    def _rank_one_weights(self) -> Any:
        """``(dr'_m/dr_m - s_m) / r_m^2`` on the active kernels, 0 on the others."""
        xp = self.xp
        active = self.scale > 0
        safe = xp.where(active, self.norms, 1.0)
        return xp.where(active, (self.slope - self.scale) / (safe * safe), 0.0)

    def hessian(self) -> Any:
        """The Hessian over the active kernels as an ``N x N`` matrix (stacks), ``sum_m s_m K_m`` updated lazily.

        The sum is kept from the previous Newton step as ``sum_m w_m K_m`` and
        ``K_m`` is read only where ``|s_m - w_m| > hessian_tol * max(s_m, w_m)``
        (the weights as last read, ``host_scale``):
        a kernel leaving the active set is always read (to remove it), one
        inactive throughout never is.  With ``hessian_tol = 0`` this is the
        exact Hessian; otherwise a positive semi-definite approximation, so the
        direction stays a descent direction, the gradient stays exact and so
        does the solution (an inexact Newton method).  For the same reason the
        kept sum has the stack's precision: float32 for a float32 stack, whose
        memory it then adds a quarter of a kernel's float64 bytes to, not half."""
        N = self.rho.shape[0]
        assert not isinstance(self.K, FactorKernels)  # stacks only: factors take the low-rank system
        if self._weighted_sum is None:
            self._weighted_sum = (array_backend.zeros(self.K, (N, N)) if self.on_device
                                  else np.zeros((N, N), dtype=self.K.dtype))
        scale = self.host_scale
        change = scale - self._weights
        stale = np.abs(change) > self.hessian_tol * np.maximum(scale, self._weights)
        if self.on_device:  # by batches of kernels, on the device
            array_backend.add_kernels(self._weighted_sum, self.K, self.kernels[stale], change[stale])
        else:
            for j in np.flatnonzero(stale):  # in place, one read of each K_m whose weight moved
                add_kernel(self._weighted_sum, self.K, int(self.kernels[j]), float(change[j]))
        self._weights[stale] = scale[stale]
        self.passes += np.count_nonzero(stale) / self.K.shape[0]
        K_v, weight = self.K_v(), self._rank_one_weights()
        if self.on_device:
            return array_backend.hessian(self._weighted_sum, K_v, weight, self.gamma)
        H = (K_v.T * weight) @ K_v  # built in place: one N x N array beside the kept sum
        H += self._weighted_sum
        H *= self.gamma
        return H

    def newton_system(self, diagonal: Any, constant: float) -> NewtonSystem:
        """Newton's matrix ``H = (the Hessian) + diag(diagonal) + constant 11'`` by the kind of ``K``.

        From a stack, the matrix itself (:meth:`hessian`, lazy); from factors,
        ``diag(diagonal) + U diag(c) U'`` with ``U = [Phi_m ..., K_m v_m ..., 1]``
        over the active kernels and ``c = gamma [s_m ..., w_m ...], constant``:
        the exact Hessian, reading the active factors once."""
        if self.on_device:
            return DeviceSystem(self.hessian(), diagonal, constant)
        if not isinstance(self.K, FactorKernels):
            H = self.hessian()
            H += constant
            np.einsum("ii->i", H)[:] += diagonal  # the diagonal as a writeable view
            return DenseSystem(H)
        active = np.flatnonzero(self.scale > 0)
        factors = [self.K.factors[m] for m in self.kernels[active]]
        self.passes += active.size / self.K.shape[0]
        columns = np.hstack([*factors, self.K_v()[active].T, np.ones((self.rho.size, 1))])
        weights = np.concatenate([np.repeat(self.gamma * self.scale[active], [F.shape[1] for F in factors]),
                                  self.gamma * self._rank_one_weights()[active], [constant]])
        return LowRankSystem(diagonal, columns, weights)

    def direction(self, d: Any) -> tuple[Any, Any, Any, Any]:
        """``K_m d`` over the working set and the coefficients of
        ``r_m(t)^2 = r_m^2 - 2 t b_m + t^2 c_m`` along ``d``."""
        if self.on_device:  # on the device, from the working set's index arrays
            K_d = self._subset.times(d[:, None])[:, :, 0]
        elif self._everything:  # one product over the whole stack
            K_d = kernel_times(self.K, d)
        else:  # kernel by kernel over the working set (K_m symmetric)
            K_d = kernels_times(self.K, d, self.kernels)
        self.passes += self.kernels.size / self.K.shape[0]
        g = self.gamma
        b = g * (self.K_alpha @ d - g * (self.K_rho @ d))
        c = g * g * (K_d @ d)
        return K_d, self.norms**2, b, c

    def move(self, d: Any, K_d: Any, t: Any) -> None:
        """``rho += t d`` with ``K_rho`` updated from ``K_d`` (no pass)."""
        self.rho = self.rho + t * d
        self.K_rho = self.K_rho + t * K_d
        self._refresh()
