"""The geometry of one kernel matrix: alignment with a target, the enclosing ball, the class hulls.

For a kernel ``K`` (n, n), PSD, with feature map ``phi``:

* :func:`alignment`: ``A(K, T) = <K, T>_F / (||K||_F ||T||_F)`` (Cristianini et al., "On
  kernel-target alignment", NIPS 2001), ``T = y y'`` the ideal kernel of +-1 labels;
* :func:`centered`: ``K^c = H K H``, ``H = I - 11'/n``, the kernel of the features centred on
  their mean; :func:`alignment` of two centred kernels is the *centred alignment*
  ``rho(K, T)`` of Cortes, Mohri and Rostamizadeh ("Algorithms for learning kernels based on
  centered alignment", JMLR 13, 2012, definition 1);
* :func:`enclosing_ball`: the minimum enclosing ball of the points ``phi(x_i)``, by its dual
  ``R^2 = max_{g in simplex} sum_i g_i K_ii - g'Kg`` (centre ``c = sum_i g_i phi(x_i)``);
* :func:`hull_distance`: the distance between the convex hulls of the two classes,
  ``D^2 = min ||sum_i g_i y_i phi(x_i)||^2`` over ``g >= 0`` with ``g`` summing to 1 on each
  class; the hard-margin SVM's geometric margin is ``D / 2``.

The two quadratic programs are convex QPs over one or two simplices, solved by the primal
active-set method of :mod:`kernelfuse.numerics.simplex_qp` on ``K`` itself (on a factor ``K = L
L'`` of its PSD part where a block of ``K`` is not positive definite) with a ridge of ``1e-8``
times the mean diagonal (a unique solution ``g`` near the exact one's set, whose
objective ``value`` is then exact to second order), and each answer comes with a certified
interval of the exact program computed from the solution alone: any ``g``
gives a lower bound on ``R^2`` and a ball of centre ``c`` enclosing every point; any ``g``
gives a vector ``w = sum_i g_i y_i phi(x_i)`` whose projections separate the hulls by at least
``(min_{y_i = 1} (Kv)_i - max_{y_j = -1} (Kv)_j) / ||w||`` (``v = g * y``).
"""

from __future__ import annotations

import attrs
import numpy as np


def centered(K: np.ndarray) -> np.ndarray:
    """``H K H`` with ``H = I - 11'/n``: ``K_ij - mean_i - mean_j + mean`` (rows and columns)."""
    K = np.asarray(K, dtype=float)
    rows = K.mean(axis=1, keepdims=True)
    cols = K.mean(axis=0, keepdims=True)
    return K - rows - cols + K.mean()


def alignment(K: np.ndarray, T: np.ndarray) -> float:
    """``<K, T>_F / (||K||_F ||T||_F)``; 0 where either matrix is zero."""
    norms = float(np.linalg.norm(K)) * float(np.linalg.norm(T))
    return float(np.vdot(K, T)) / norms if norms > 0 else 0.0


def psd_factor(K: np.ndarray) -> np.ndarray:
    """``L`` (n, r) with ``L L' = K`` on its positive eigenvalues (the negative ones, rounding
    errors of a PSD matrix, dropped)."""
    eigenvalues, vectors = np.linalg.eigh((K + K.T) / 2)
    keep = eigenvalues > eigenvalues[-1] * 1e-14 if eigenvalues[-1] > 0 else eigenvalues > 0
    return vectors[:, keep] * np.sqrt(eigenvalues[keep])


@attrs.frozen
class QPAnswer:
    """The solution ``g`` of one of the programs, its objective ``value`` there, and the certified
    interval ``[lower, upper]`` of the optimum (``value`` is one of its ends)."""

    g: np.ndarray
    value: float
    lower: float
    upper: float


def _simplex_qp(K: np.ndarray, scale: np.ndarray, theta: np.ndarray, groups: np.ndarray,
                start: np.ndarray | None) -> np.ndarray:
    """``argmin 0.5 x'(2 D K D + mu I)x - theta'x`` over the simplices of ``groups``, ``D = diag(scale)``,
    from ``start`` (a point of the simplices) where given."""
    from kernelfuse.numerics.simplex_qp import KernelSimplexQP, SimplexQP

    mu = 1e-8 * max(float(np.mean(np.diagonal(K))), 1e-300)
    warm = start is not None
    if start is None:
        start = np.zeros(K.shape[0])
        for j in range(int(groups.max()) + 1):
            start[groups == j] = 1.0 / np.sum(groups == j)
    try:  # on the kernel itself: an |S|-sized factor a step, no eigendecomposition of K
        qp: SimplexQP = KernelSimplexQP(np.zeros((0, K.shape[0])), mu, groups, K=K, scale=scale)
        return np.maximum(qp.solve(theta, start, warm=warm).x, 0.0)
    except np.linalg.LinAlgError:  # a block not positive definite (rounding of an indefinite K): on its PSD part
        L = psd_factor(K)
        R = np.sqrt(2.0) * L.T * scale if L.shape[1] else np.zeros((1, K.shape[0]))
        return np.maximum(SimplexQP(R, mu, groups).solve(theta, start, warm=warm).x, 0.0)


def enclosing_ball(K: np.ndarray, start: np.ndarray | None = None) -> QPAnswer:
    """The squared radius of the minimum enclosing ball of the points in feature space.

    ``value = lower = sum_i g_i K_ii - g'Kg`` (the dual's value at ``g``) and ``upper = max_i
    ||phi(x_i) - c||^2`` with ``c = sum_i g_i phi(x_i)``: ``lower <= R^2 <= upper``.  ``start``:
    a previous ``g`` (of a nearby kernel) to start from.
    """
    K = np.asarray(K, dtype=float)
    n = K.shape[0]
    diag = np.diagonal(K).copy()
    x = _simplex_qp(K, np.ones(n), diag, np.zeros(n, dtype=int), start)
    x /= x.sum()
    Kx = K @ x
    centre_norm = float(x @ Kx)
    lower = max(float(diag @ x) - centre_norm, 0.0)
    return QPAnswer(x, lower, lower, max(float(np.max(diag - 2 * Kx)) + centre_norm, lower))


def hull_distance(K: np.ndarray, signs: np.ndarray, start: np.ndarray | None = None) -> QPAnswer:
    """The squared distance between the convex hulls of the classes ``signs = +1`` and ``-1``.

    ``value = upper = ||w||^2`` at the solution's ``w = sum_i g_i y_i phi(x_i)`` (two points of
    the hulls); ``lower = max(0, sep)^2`` with ``sep = (min_{+} (Kv)_i - max_{-} (Kv)_j) / ||w||``,
    ``v = g * y``, the gap the hulls' projections on ``w`` leave.  ``start``: a previous ``g``.
    """
    K = np.asarray(K, dtype=float)
    positive = signs > 0
    x = _simplex_qp(K, signs, np.zeros(signs.size), positive.astype(int), start)
    x[positive] /= x[positive].sum()
    x[~positive] /= x[~positive].sum()
    Kv = K @ (x * signs)
    upper = max(float((x * signs) @ Kv), 0.0)
    if upper == 0.0:
        return QPAnswer(x, 0.0, 0.0, 0.0)
    separation = (float(Kv[positive].min()) - float(Kv[~positive].max())) / np.sqrt(upper)
    return QPAnswer(x, upper, min(max(separation, 0.0) ** 2, upper), upper)
