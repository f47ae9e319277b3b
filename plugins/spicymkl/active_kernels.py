"""SpicyMKL's kernel bookkeeping: the kernel terms of ``phi_gamma`` from cached products (Remark 1, section 3.4).

At a centre ``alpha`` with penalty ``gamma``, kernel ``m`` enters the inner dual through
``r_m = ||alpha_m - gamma rho||_{K_m}`` and its block soft-threshold ``r'_m``.
:class:`KernelTerms` keeps ``K_m alpha_m`` and ``K_m rho``, so that along a Newton direction the
norms are quadratics in the step (every line-search trial is free, section 3.4), and the
gradient and Hessian involve only the active kernels ``r_m > gamma C`` (Remark 1), the Hessian
re-reading a kernel only when its weight moved (:meth:`KernelTerms.hessian`).
:meth:`KernelTerms.newton_system` hands the system to :mod:`.newton_system` (a matrix from a
stack, low-rank factors from :class:`~kernelfuse.kernels.factors.FactorKernels`).  Products go
through :mod:`kernelfuse.kernels.products`; a device stack keeps the Hessian on its device.
The formulas: docs/methods/spicymkl.md, the inner problem.
"""

from __future__ import annotations

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
    stack (float64 or float32) or :class:`~kernelfuse.kernels.factors.FactorKernels`.
    """

    K: np.ndarray | FactorKernels
    kernels: np.ndarray
    K_alpha: np.ndarray
    a_K_a: np.ndarray
    gamma: float
    #: The problem's penalty of the kernel norms (its radial prox: ``l1_mkl``'s block soft-thresholding).
    penalty: SeparablePenalty
    rho: np.ndarray
    K_rho: np.ndarray
    #: Relative change of ``s_m`` below which the Hessian keeps the kernel's old weight.
    hessian_tol: float = 0.0
    passes: float = 0.0

    def __attrs_post_init__(self) -> None:
        self._everything = self.kernels.size == self.K.shape[0]
        self._on_device = array_backend.is_device_array(self.K)
        self._weighted_sum: np.ndarray | None = None  # sum_m w_m K_m (N x N, stacks only), from hessian()
        self._weights = np.zeros(self.kernels.size)  # the w_m it holds
        self._refresh()

    def _refresh(self) -> None:
        g = self.gamma
        self.a_K_r = np.einsum("mi,i->m", self.K_alpha, self.rho)
        self.r_K_r = self.K_rho @ self.rho
        self.norms = np.sqrt(np.maximum(self.a_K_a - 2 * g * self.a_K_r + g * g * self.r_K_r, 0.0))
        self.shrunk, self.slope = self.penalty.radial_prox(self.norms, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.scale = np.where(self.norms > 0, self.shrunk / self.norms, 0.0)

    def value(self, norms: np.ndarray | None = None) -> float:
        """The kernel terms of ``phi`` at the current ``rho`` (or at the given norms ``r_m``)."""
        r = self.norms if norms is None else norms
        shrunk = self.shrunk if norms is None else self.penalty.radial_prox(r, self.gamma)[0]
        return float(np.sum((2 * r - shrunk) * shrunk) / (2 * self.gamma)
                     - self.penalty.value(shrunk))

    def K_v(self) -> np.ndarray:
        """``K_m v_m`` for every kernel."""
        return self.K_alpha - self.gamma * self.K_rho

    def model_products(self) -> np.ndarray:
        """``K_m alpha^+_m = s_m K_m v_m``: the next model's kernel products (zero off the active set)."""
        return self.scale[:, None] * self.K_v()

    def gradient(self) -> np.ndarray:
        """``-sum_m s_m K_m v_m``."""
        return -self.model_products().sum(axis=0)

    def _rank_one_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The active kernels (indices in the working set), their ``K_m v_m`` and weights
        ``(dr'_m/dr_m - s_m) / r_m^2``."""
        active = np.flatnonzero(self.scale > 0)
        weight = (self.slope[active] - self.scale[active]) / self.norms[active] ** 2
        return active, self.K_v()[active], weight

    def hessian(self) -> np.ndarray:
        """The Hessian over the active kernels as an ``N x N`` matrix (stacks), ``sum_m s_m K_m`` updated lazily.

        The sum is kept from the previous Newton step as ``sum_m w_m K_m`` and
        ``K_m`` is read only where ``|s_m - w_m| > hessian_tol * max(s_m, w_m)``:
        a kernel leaving the active set is always read (to remove it), one
        inactive throughout never is.  With ``hessian_tol = 0`` this is the
        exact Hessian; otherwise a positive semi-definite approximation, so the
        direction stays a descent direction, the gradient stays exact and so
        does the solution (an inexact Newton method).  For the same reason the
        kept sum has the stack's precision: float32 for a float32 stack, whose
        memory it then adds a quarter of a kernel's float64 bytes to, not half."""
        N = self.rho.size
        assert not isinstance(self.K, FactorKernels)  # stacks only: factors take the low-rank system
        if self._weighted_sum is None:
            self._weighted_sum = (array_backend.zeros(self.K, (N, N)) if self._on_device
                                  else np.zeros((N, N), dtype=self.K.dtype))
        change = self.scale - self._weights
        stale = np.abs(change) > self.hessian_tol * np.maximum(self.scale, self._weights)
        if self._on_device:  # by batches of kernels, on the device
            array_backend.add_kernels(self._weighted_sum, self.K, self.kernels[stale], change[stale])
        else:
            for j in np.flatnonzero(stale):  # in place, one read of each K_m whose weight moved
                add_kernel(self._weighted_sum, self.K, int(self.kernels[j]), float(change[j]))
        self._weights[stale] = self.scale[stale]
        self.passes += np.count_nonzero(stale) / self.K.shape[0]
        _, K_v, weight = self._rank_one_terms()
        if self._on_device:
            return array_backend.hessian(self._weighted_sum, K_v, weight, self.gamma)
        H = (K_v.T * weight) @ K_v  # built in place: one N x N array beside the kept sum
        H += self._weighted_sum
        H *= self.gamma
        return H

    def newton_system(self, diagonal: np.ndarray, constant: float) -> NewtonSystem:
        """Newton's matrix ``H = (the Hessian) + diag(diagonal) + constant 11'`` by the kind of ``K``.

        From a stack, the matrix itself (:meth:`hessian`, lazy); from factors,
        ``diag(diagonal) + U diag(c) U'`` with ``U = [Phi_m ..., K_m v_m ..., 1]``
        over the active kernels and ``c = gamma [s_m ..., w_m ...], constant``:
        the exact Hessian, reading the active factors once."""
        if self._on_device:
            return DeviceSystem(self.hessian(), diagonal, constant)
        if not isinstance(self.K, FactorKernels):
            H = self.hessian()
            H += constant
            np.einsum("ii->i", H)[:] += diagonal  # the diagonal as a writeable view
            return DenseSystem(H)
        active, K_v, weight = self._rank_one_terms()
        factors = [self.K.factors[m] for m in self.kernels[active]]
        self.passes += active.size / self.K.shape[0]
        columns = np.hstack([*factors, K_v.T, np.ones((self.rho.size, 1))])
        weights = np.concatenate([np.repeat(self.gamma * self.scale[active], [F.shape[1] for F in factors]),
                                  self.gamma * weight, [constant]])
        return LowRankSystem(diagonal, columns, weights)

    def direction(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``K_m d`` over the working set and the coefficients of
        ``r_m(t)^2 = r_m^2 - 2 t b_m + t^2 c_m`` along ``d``."""
        if self._everything:  # one product over the whole stack
            K_d = kernel_times(self.K, d)
        else:  # kernel by kernel over the working set (K_m symmetric)
            K_d = kernels_times(self.K, d, self.kernels)
        self.passes += self.kernels.size / self.K.shape[0]
        g = self.gamma
        b = g * (self.K_alpha @ d - g * (self.K_rho @ d))
        c = g * g * (K_d @ d)
        return K_d, self.norms**2, b, c

    def move(self, d: np.ndarray, K_d: np.ndarray, t: float) -> None:
        """``rho += t d`` with ``K_rho`` updated from ``K_d`` (no pass)."""
        self.rho = self.rho + t * d
        self.K_rho = self.K_rho + t * K_d
        self._refresh()

