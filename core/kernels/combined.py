"""The two passes over a kernel stack that every SVM-based MKL oracle makes.

* :func:`combined_kernel`: ``K(w) = sum_m w_m K_m``, the kernel the SVM sees;
* :func:`quadratic_forms`: ``a_m = beta' K_m beta`` for every kernel (and
  :func:`expansion_products`: the products ``K_m beta`` of the same pass), where
  ``beta = alpha * y`` is the SVM's expansion.  ``-0.5 a_m`` is the gradient
  of the SVM optimum with respect to ``w_m`` (Danskin); SimpleMKL,
  mirrorVSKL, the average-kernel baseline and ML-MKL all read it.  A sparse
  ``beta`` (support vectors ``S``) needs only the rows ``K_m[S, :]``:
  ``a_m = beta_S' (K_m[S, :] beta)``.

:class:`HeldKernels`: ``K(w)`` is linear in ``w``, so on the line through two weight vectors
whose kernels are held, give or take a few kernels, it is their combination: two passes over
one ``N x N`` matrix, not one per kernel of ``w`` (the trials of a line search).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.kernels.products import add_kernel, kernel_times, weighted_sum

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


#: A ``beta`` whose support is at most this share of ``N`` has its forms read from the rows
#: of its support (:func:`quadratic_forms`).
SPARSE_SHARE = 0.5


def quadratic_forms(K: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``beta' K_m beta`` for every kernel: one pass over the stack.

    ``beta`` of shape (N,) gives (M,); of shape (N, L) (one expansion per
    label) gives (M, L), still one pass.  A 1-D ``beta`` on an in-memory (NumPy) stack
    with at most :data:`SPARSE_SHARE` of its entries non-zero reads only the rows of its
    support ``S``: ``a_m = beta_S' (K_m[S, :] beta)``, ``|S| / N`` of a pass.
    """
    support = forms_support(K, beta)
    if support is not None:
        beta_S = beta[support]
        return np.array([beta_S @ (K[m][support] @ beta) for m in range(K.shape[0])])
    return expansion_products(K, beta)[1]


def forms_support(K: np.ndarray, beta: np.ndarray) -> np.ndarray | None:
    """The support of ``beta`` where :func:`quadratic_forms` reads only its rows (a 1-D ``beta``
    on a NumPy stack, non-zero on at most :data:`SPARSE_SHARE` of the points); None where it
    reads the whole stack."""
    if beta.ndim != 1 or not isinstance(K, np.ndarray):
        return None
    support = np.flatnonzero(beta)
    return support if support.size <= SPARSE_SHARE * beta.size else None


def forms_passes(K: np.ndarray, beta: np.ndarray) -> float:
    """The fraction of a pass over the stack :func:`quadratic_forms` reads for ``beta``."""
    support = forms_support(K, beta)
    return 1.0 if support is None else support.size / beta.size


def expansion_products(K: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K_m beta`` for every kernel (M, N, ...) and the forms ``beta' K_m beta``: the same one pass."""
    products = kernel_times(K, beta)
    return products, np.einsum("mi...,i...->m...", products, beta)


@attrs.frozen(eq=False)
class Formed:
    """``sum_m w_m K_m`` for weights ``w`` of any sign, and a bound on its entries' rounding error."""

    weights: np.ndarray
    kernel: np.ndarray
    error: float


#: A kernel combined from held ones is formed from the stack instead where the bound on its
#: rounding error would exceed this share of its scale ``sum_m |w_m| max_i K_m[i, i]``.
COMBINED_ERROR = 1e-10
_EPS = float(np.finfo(float).eps)


def _scale(weights: np.ndarray, scales: np.ndarray) -> float:
    """``sum_m |w_m| s_m``: a bound on the entries of ``sum_m w_m K_m`` (``s_m = max_i K_m[i, i]``)."""
    return float(np.abs(weights) @ scales)


#: An entry of ``r`` in ``v = c u + r`` (:func:`_along`) at most this share of the weights it was
#: computed from is rounding (set to 0, its size added to the error bound): the weights of
#: successive steps are each rounded, and the held directions drift from them by that much.
ROUNDING_SHARE = 1e-12
#: How far outside ``[0, 1]`` a trial's ``c`` may be by rounding and still lie between ``o`` and ``o + u``.
ON_LINE = 1e-12


def _along(u: np.ndarray, v: np.ndarray, at: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``v = c u + r``: ``c`` the ratio most entries share (their median) and ``r`` with the
    entries within rounding (:data:`ROUNDING_SHARE`) of ``at`` (the weights they were computed
    from) set to 0; and the size of the entries so set (for the error bound)."""
    moving = np.flatnonzero(u)
    c = float(np.median(v[moving] / u[moving])) if moving.size else 0.0
    r = v - c * u
    rounding = np.abs(r) <= ROUNDING_SHARE * (np.abs(at) + np.abs(v) + abs(c) * np.abs(u))
    dropped = np.where(rounding, np.abs(r), 0.0)
    r[rounding] = 0.0
    return c, r, dropped


#: Held kernels (two ``N x N`` float64 matrices) are worth their memory where they weigh at most
#: this share of the stack's bytes (:func:`worth_holding`).
HELD_SHARE = 0.25


def worth_holding(K: np.ndarray) -> bool:
    """Whether :class:`HeldKernels` for the stack ``K`` weigh at most :data:`HELD_SHARE` of it: a
    stack of few kernels is itself read in few passes (8 float64 or 16 float32 kernels at least)."""
    if not isinstance(K, np.ndarray):
        return False
    return 2 * 8 <= HELD_SHARE * K.shape[0] * K.dtype.itemsize


@attrs.frozen(eq=False)
class HeldKernels:
    """The kernel at an ``origin`` ``o`` and along a ``direction`` ``u`` (the last step from it),
    from which ``K(w)`` for ``w = o + c u + r``, ``r`` non-zero on a few kernels, is formed in a
    few passes over one ``N x N`` matrix (``K(w)`` is linear in ``w``) where forming it from the
    stack reads every kernel of ``w``.

    * A line search's trials between ``o`` and ``o + u`` (``0 <= c <= 1``, ``r = 0``):
      ``K(o) + c K(u)``, the held kernels unchanged.
    * A step beyond (SimpleMKL's steps to the boundary of the simplex go on along the last
      direction with two of its entries changed): the step ``s = w - (o + u) = (c - 1) u + r``
      from the far end, ``K(s) = (c - 1) K(u) + sum_i r_i K_i``, then ``o + u`` and ``s`` held.
    * Any other ``w``: the step from the latest kernel (``o + u``, else ``o``) formed from the
      stack (then held as the direction from there) where it has at most twice as many kernels
      as ``w``, else ``K(w)`` itself (the new origin).

    Each held kernel carries a bound on its rounding error (``scales``: ``max_i K_m[i, i]``, the
    largest entry of a PSD kernel); a kernel whose bound would pass :data:`COMBINED_ERROR` of
    its scale is formed from the stack.  A direction formed from the stack (not as the
    difference of two kernels) keeps its error relative to its own size, however short.  Holds
    two ``N x N`` float64 matrices (three while a step beyond is formed).
    """

    origin: Formed | None = None
    direction: Formed | None = None

    def kernel(self, K: np.ndarray, weights: np.ndarray,
               scales: np.ndarray) -> tuple[np.ndarray, float, HeldKernels]:
        """``K(weights)``, the fraction of a pass over the stack it read, and the kernels held after it."""
        o, u, M = self.origin, self.direction, K.shape[0]
        if o is None:
            return self._from_stack(K, weights, scales)
        if np.array_equal(o.weights, weights):
            return o.kernel, 0.0, self
        size, limit = included_kernels(weights).size, COMBINED_ERROR * _scale(weights, scales)
        far_weights, far_error = o.weights, o.error
        if u is not None:
            c, r, dropped = _along(u.weights, weights - o.weights, weights)
            corrections = np.flatnonzero(r)
            if corrections.size == 0 and -ON_LINE <= c <= 1.0 + ON_LINE:  # a trial of the line search
                return _plus(o.kernel, min(max(c, 0.0), 1.0), u.kernel), 1.0 / M, self
            far_weights = o.weights + u.weights
            far_error = o.error + u.error + _EPS * (_scale(o.weights, scales) + _scale(u.weights, scales))
            step_weights = (c - 1.0) * u.weights + r
            step_error = (abs(c - 1.0) * u.error + float(dropped @ scales)
                          + _EPS * (1 + corrections.size) * _scale(step_weights, scales))
            if 3 + corrections.size < size and far_error + step_error <= limit:  # a step beyond o + u
                step_kernel = (c - 1.0) * u.kernel
                for m in corrections:
                    add_kernel(step_kernel, K, int(m), float(r[m]))
                far = Formed(far_weights, _plus(o.kernel, 1.0, u.kernel), far_error)
                step = Formed(step_weights, step_kernel, step_error)
                return _plus(far.kernel, 1.0, step.kernel), (3.0 + corrections.size) / M, HeldKernels(far, step)
        # the step from the latest kernel (o + u, else o), from the stack: the next trials combine
        step_weights = weights - far_weights
        moving = np.flatnonzero(step_weights)
        if moving.size <= 2 * size and far_error <= 0.5 * limit:
            far = o if u is None else Formed(far_weights, _plus(o.kernel, 1.0, u.kernel), far_error)
            step = Formed(step_weights, weighted_sum(K, step_weights, moving),
                          _EPS * moving.size * _scale(step_weights, scales))
            reads = (moving.size + 1.0 + (u is not None)) / M
            return _plus(far.kernel, 1.0, step.kernel), reads, HeldKernels(far, step)
        return self._from_stack(K, weights, scales)

    def anchored(self, weights: np.ndarray, scales: np.ndarray) -> HeldKernels:
        """Only ``K(weights)`` held (the origin of the next line search) where ``weights`` is
        the origin or between it and ``o + u``; nothing held otherwise."""
        o, u = self.origin, self.direction
        if o is None:
            return self
        if np.array_equal(o.weights, weights):
            return HeldKernels(o)
        if u is None:
            return HeldKernels()
        c, r, dropped = _along(u.weights, weights - o.weights, weights)
        if np.any(r) or not -ON_LINE <= c <= 1.0 + ON_LINE:
            return HeldKernels()
        c = min(max(c, 0.0), 1.0)
        error = o.error + c * u.error + float(dropped @ scales) + _EPS * _scale(weights, scales)
        return HeldKernels(Formed(np.array(weights, copy=True), _plus(o.kernel, c, u.kernel), error))

    @staticmethod
    def _from_stack(K: np.ndarray, weights: np.ndarray,
                    scales: np.ndarray) -> tuple[np.ndarray, float, HeldKernels]:
        kernel, fraction = combined_kernel(K, weights)
        error = _EPS * included_kernels(weights).size * _scale(weights, scales)
        return kernel, fraction, HeldKernels(Formed(np.array(weights, copy=True), kernel, error))


def _plus(A: np.ndarray, c: float, B: np.ndarray) -> np.ndarray:
    """``A + c B``, a new matrix (operators: a stack on a device keeps its kernels there)."""
    out = c * B
    out += A
    return out
