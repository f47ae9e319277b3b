"""The curvature of an SVM's optimum in the kernel weights.

For ``G(w) = max_{alpha in S} 1'alpha - 0.5 sum_m w_m beta'K_m beta`` (``beta = alpha * y``),
Danskin gives ``dG/dw_m = -0.5 beta'K_m beta``.  While the sets of the dual solution hold
(``F`` the margin support vectors), ``beta_F`` and the intercept solve a linear system in
``K_FF(w)``, which gives the Hessian as a factor: ``d^2 G / dw_k dw_l = (R'R)_kl`` with
``R = (I - u u') L^-1 V`` (``L`` the Cholesky factor of ``K_FF``, ``V`` the columns
``(K_m beta)_F``, ``u`` the intercept's direction), of rank at most ``|F|``.  Weights that are
a fixed multiple of the outer variables scale the columns.  The model is exact while no example
changes set; the outer line search catches a step that crosses one.  The derivation:
docs/methods/mirror-vskl.md.  Read by mirror-vskl's oracle and by ML-MKL's label SVMs (a sum of
SVMs: the labels' factors stacked).
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
