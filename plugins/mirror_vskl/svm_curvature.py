"""The curvature of an SVM's optimum in the kernel weights.

With ``K(w) = sum_m w_m K_m``, ``beta = alpha * y`` and the SVM optimum
``G(w) = max_{alpha in S} 1'alpha - 0.5 sum_m w_m beta'K_m beta``
(:mod:`kernelfuse.parts.svm_solver`), Danskin gives ``dG/dw_m = -0.5 beta'K_m beta``.
While the sets of the dual solution hold (``F`` the margin support vectors,
``0 < alpha_i < C``; the others fixed at 0 or C), ``beta_F`` and the intercept
``b`` solve

    ``K_FF(w) beta_F + b 1 = rhs``,   ``1'beta_F = const``,

so ``dbeta_F / dw_l = -P (K_l beta)_F`` with ``P`` the inverse of ``K_FF``
on ``{1'd = 0}`` (``P = K_FF^-1`` without an intercept), and the Hessian is

    ``d^2 G / dw_k dw_l = (K_k beta)_F' P (K_l beta)_F = (R'R)_kl``,
    ``R = (I - u u') L^-1 V``,

``L`` the Cholesky factor of ``K_FF``, ``V`` the columns ``(K_m beta)_F``
and ``u = L^-1 1 / ||L^-1 1||`` (the intercept's direction; left out
without one).  ``R`` has ``|F|`` rows: the Hessian's rank is at most the
number of margin support vectors.  Kernel weights that are a fixed
multiple of the outer variables (``w_m = c_m lam_m``, VSKL's
``gamma_j^(-t)``) scale the columns: ``R diag(c)``.

The second-order model is exact while no example changes set; a step
crossing a set change is caught by the outer line search.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

#: Relative margin deciding ``0 < alpha_i < C`` (in units of C).
FREE_TOL = 1e-9


def margin_support_vectors(alpha: np.ndarray, C: float) -> np.ndarray:
    """Indices of ``0 < alpha_i < C`` (up to ``FREE_TOL * C``)."""
    return np.flatnonzero((alpha > FREE_TOL * C) & (alpha < C * (1.0 - FREE_TOL)))


def svm_curvature_factor(K_free: np.ndarray, products_free: np.ndarray, *,
                         intercept: bool = True, scale: np.ndarray | None = None) -> np.ndarray:
    """``R`` (|F|, M) with ``R'R`` the Hessian of the SVM optimum in the weights.

    ``K_free``: ``K(w)`` on the margin support vectors (|F|, |F|);
    ``products_free``: ``(K_m beta)_F`` for every kernel (M, |F|); ``scale``:
    the ``c_m`` of ``w_m = c_m lam_m`` (None: 1).  A singular ``K_FF``
    (duplicate points, low-rank kernels) is factorised with a diagonal shift
    raised from 1e-12 of its mean diagonal until the factor exists.
    """
    n = K_free.shape[0]
    M = products_free.shape[0]
    if n == 0:
        return np.zeros((0, M))
    L = _cholesky(K_free)
    R = scipy.linalg.solve_triangular(L, products_free.T, lower=True, check_finite=False)
    if intercept:
        u = scipy.linalg.solve_triangular(L, np.ones(n), lower=True, check_finite=False)
        u /= np.linalg.norm(u)
        R -= np.outer(u, u @ R)
    if scale is not None:
        R *= scale[None, :]
    return R


def _cholesky(A: np.ndarray) -> np.ndarray:
    shift = 0.0
    base = max(float(np.mean(np.diag(A))), np.finfo(float).tiny)
    while True:
        try:
            return np.linalg.cholesky(A + shift * np.eye(A.shape[0]) if shift else A)
        except np.linalg.LinAlgError:
            shift = 1e-12 * base if shift == 0.0 else 100.0 * shift
            if shift > base:
                raise
