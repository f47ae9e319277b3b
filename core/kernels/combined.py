"""The two passes over a kernel stack that every SVM-based MKL oracle makes.

* :func:`combined_kernel`: ``K(w) = sum_m w_m K_m``, the kernel the SVM sees;
* :func:`quadratic_forms`: ``a_m = beta' K_m beta`` for every kernel (and
  :func:`expansion_products`: the products ``K_m beta`` of the same pass), where
  ``beta = alpha * y`` is the SVM's expansion.  ``-0.5 a_m`` is the gradient
  of the SVM optimum with respect to ``w_m`` (Danskin); SimpleMKL,
  mirrorVSKL, the average-kernel baseline and ML-MKL all read it.
"""

from __future__ import annotations

import numpy as np

from kernelfuse.kernels.products import kernel_times, weighted_sum

#: Kernels whose weight is below this fraction of the largest are left out of
#: ``K(w)``: their contribution is under 1e-13 relative, far below what the
#: SVM resolves, and skipping them makes that pass cost the active kernels only.
NEGLIGIBLE_WEIGHT = 1e-13


def included_kernels(weights: np.ndarray) -> np.ndarray:
    """Indices of the weights :func:`combined_kernel` sums (the non-negligible ones).

    A model built from the SVM on ``K(w)`` uses these kernels only: with weights
    spread over many orders of magnitude (VSKL, q = inf) a kernel left out can
    still matter beside a huge weight on a kernel with no signal, and a model
    that kept it would not be the one whose objective the oracle computed.
    """
    return np.flatnonzero(weights > NEGLIGIBLE_WEIGHT * weights.max())


def combined_kernel(K: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
    """``sum_m w_m K_m`` (float64) over the non-negligible weights, and the fraction of a pass it read."""
    active = included_kernels(weights)
    if active.size > K.shape[0] // 2:
        return weighted_sum(K, weights), 1.0
    # one axpy per kernel: memory traffic in proportion to the active ones
    return weighted_sum(K, weights, active), active.size / K.shape[0]


def quadratic_forms(K: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``beta' K_m beta`` for every kernel: one pass over the stack.

    ``beta`` of shape (N,) gives (M,); of shape (N, L) (one expansion per
    label) gives (M, L), still one pass.
    """
    return expansion_products(K, beta)[1]


def expansion_products(K: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K_m beta`` for every kernel (M, N, ...) and the forms ``beta' K_m beta``: the same one pass."""
    products = kernel_times(K, beta)
    return products, np.einsum("mi...,i...->m...", products, beta)
