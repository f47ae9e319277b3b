"""Products with a kernel stack in float64 arithmetic, whatever the stack is stored as.

Every solver reads the stack through a few products: ``K_m @ V`` for every kernel
(:func:`kernel_times`), ``K_m' @ coef_m`` kernel by kernel (:func:`kernel_products`) and
``sum_m w_m K_m`` (:func:`weighted_sum`).  A float64 stack or memory map is read directly; a
float32 stack by cache-sized blocks of rows cast to float64 (:data:`BLOCK_ENTRIES`), never
copied whole, so the arithmetic is float64 on the stored kernels;
:class:`~kernelfuse.kernels.factors.FactorKernels` from the factors (``O(N r)`` a kernel); other
:class:`~kernelfuse.kernels.rows.KernelRows` from the rows of non-zero coefficients; a CuPy or
PyTorch stack on its device (:mod:`kernelfuse.kernels.array_backend`), with NumPy results.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kernelfuse.kernels import array_backend
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.rows import KernelRows

#: Entries of one float64 block cast from a float32 stack (2 MiB).
BLOCK_ENTRIES = 2**18


def is_float64(K: np.ndarray) -> bool:
    """Whether products read ``K`` directly (float64), rather than by blocks cast to float64."""
    return K.dtype == np.float64


def float64_blocks(A: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """The rows of a 2-D array by blocks of at most :data:`BLOCK_ENTRIES` entries, each cast to
    float64: ``(rows, A[rows] as float64)``."""
    step = max(1, BLOCK_ENTRIES // max(1, A.shape[1]))
    for start in range(0, A.shape[0], step):
        rows = slice(start, min(A.shape[0], start + step))
        yield rows, A[rows].astype(np.float64)


def product(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A @ x`` for a 2-D ``A`` in a stack's dtype (a copy of some of its entries), float64."""
    if is_float64(A):
        return A @ x
    out = np.empty((A.shape[0],) + x.shape[1:])
    for rows, block in float64_blocks(A):
        out[rows] = block @ x
    return out


def transpose_product(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A' @ x`` for a 2-D ``A`` in a stack's dtype, float64."""
    if is_float64(A):
        return A.T @ x
    out = np.zeros((A.shape[1],) + x.shape[1:])
    for rows, block in float64_blocks(A):
        out += block.T @ x[rows]
    return out


def gram(A: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``A' diag(weights) A`` (``A' A`` without weights) for a 2-D ``A`` in a stack's dtype, float64."""
    if is_float64(A):
        return A.T @ (A if weights is None else A * weights[:, None])
    out = np.zeros((A.shape[1], A.shape[1]))
    for rows, block in float64_blocks(A):
        out += block.T @ (block if weights is None else block * weights[rows, None])
    return out


def kernel_times(K: np.ndarray | FactorKernels, V: np.ndarray) -> np.ndarray:
    """``K_m @ V`` for every kernel: shape ``(M, N) + V.shape[1:]``, float64; one pass over the stack."""
    if isinstance(K, FactorKernels):
        return K.times(V)
    if array_backend.is_device_array(K):
        return array_backend.kernel_times(K, V)
    M, N, _ = K.shape
    flat = K.reshape(M * N, N)
    if is_float64(K):
        return (flat @ V).reshape((M, N) + V.shape[1:])
    out = np.empty((M * N,) + V.shape[1:])
    for rows, block in float64_blocks(flat):
        np.matmul(block, V, out=out[rows])
    return out.reshape((M, N) + V.shape[1:])


def kernel_product(K: np.ndarray, m: int, v: np.ndarray) -> np.ndarray:
    """``K_m' @ v`` for one kernel, float64 (``v`` of shape (N,) or (N, C))."""
    return transpose_product(K[m], v)


def kernel_products(K: np.ndarray | KernelRows, coef: np.ndarray,
                    kernels: np.ndarray | None = None) -> np.ndarray:
    """``K[m].T @ coef[m]`` for every kernel (and output); same shape as coef, float64.

    ``kernels``: compute only those (the others are 0).  From
    :class:`~kernelfuse.kernels.rows.KernelRows`, the rows of non-zero
    coefficients (exact products from factors).  A kernel whose coefficients
    are all zero is not read: its product is zero (a sparse model of 16 of
    3,000 kernels reads 16)."""
    if isinstance(K, FactorKernels):
        return K.products(coef, kernels)
    if isinstance(K, KernelRows):
        return K.products(coef)
    if kernels is None:
        used = np.flatnonzero(coef.reshape(coef.shape[0], -1).any(axis=1))
        kernels = None if used.size == coef.shape[0] else used
    if array_backend.is_device_array(K):
        return array_backend.kernel_products(K, coef, np.arange(K.shape[0]) if kernels is None else kernels)
    if kernels is None and is_float64(K):
        if coef.ndim == 2:
            return np.einsum("mji,mj->mi", K, coef, optimize=True)
        return np.einsum("mji,mcj->mci", K, coef, optimize=True)
    out = np.zeros(coef.shape)
    for m in range(K.shape[0]) if kernels is None else kernels:
        out[m] = kernel_product(K, int(m), coef[m].T).T
    return out


def kernels_times(K: np.ndarray | FactorKernels, v: np.ndarray, kernels: np.ndarray) -> np.ndarray:
    """``K_m @ v`` (``K_m`` symmetric) for the ``kernels`` only: shape ``(len(kernels), N)``, float64.

    One read of each of those kernels; no output row for the others (at M = 3000 a full
    ``(M, N)`` output would be allocated and zeroed for a working set of a few kernels)."""
    if isinstance(K, FactorKernels):
        return K.times(v, kernels) if len(kernels) else np.empty((0, v.size))
    if array_backend.is_device_array(K):
        return array_backend.kernel_times(K, v, kernels)
    out = np.empty((len(kernels), v.size))
    if is_float64(K):
        for row, m in enumerate(kernels):
            np.matmul(K[m], v, out=out[row])
    else:
        for row, m in enumerate(kernels):
            out[row] = kernel_product(K, int(m), v)
    return out


def add_kernel(out: np.ndarray, K: np.ndarray, m: int, weight: float) -> None:
    """``out += weight * K_m`` in place (``out`` C-contiguous (N, N), float64 or of the stack's dtype).

    Of one dtype: BLAS ``axpy`` in place (no ``N x N`` temporary: half the
    time of ``out += w * K_m``); a float64 ``out`` from a float32 stack: by
    float64 blocks.  A stack on a device: ``out`` on that device."""
    if array_backend.is_device_array(K):
        array_backend.add_kernel(out, K, m, weight)
        return
    if out.dtype == K.dtype:
        from scipy.linalg.blas import get_blas_funcs  # scipy.linalg imported on use

        axpy = get_blas_funcs("axpy", (out,))
        axpy(np.ascontiguousarray(K[m]).reshape(-1), out.reshape(-1), a=weight)
        return
    for rows, block in float64_blocks(K[m]):
        out[rows] += weight * block


def weighted_sum(K: np.ndarray, weights: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
    """``sum_m w_m K_m`` over ``kernels`` (default: all), float64 of shape (N, N) (on the
    stack's device for a device stack)."""
    if array_backend.is_device_array(K):
        return array_backend.weighted_sum(K, weights, kernels)
    if kernels is None and is_float64(K):
        return np.tensordot(weights, K, axes=1)
    out = np.zeros(K.shape[1:])
    for m in range(K.shape[0]) if kernels is None else kernels:
        add_kernel(out, K, int(m), float(weights[m]))
    return out
