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

The two quadratic programs are solved by cvxpy (Clarabel) on a factor ``K = L L'`` and each
answer comes with a certified interval computed from the solution alone (numpy): any ``g``
gives a lower bound on ``R^2`` and a ball of centre ``c`` enclosing every point; any ``g``
gives a vector ``w = sum_i g_i y_i phi(x_i)`` whose projections separate the hulls by at least
``(min_{y_i = 1} (Kv)_i - max_{y_j = -1} (Kv)_j) / ||w||`` (``v = g * y``).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.errors import SolverError


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
    """The solution ``g`` of one of the programs, and the certified interval of its value."""

    g: np.ndarray
    lower: float
    upper: float


def _solve(problem: object, variable: object, what: str) -> np.ndarray:
    """The variable's value at the solution; an inaccurate one (Clarabel's "almost solved") is
    taken silently: the answer's interval is certified from it whatever its accuracy."""
    import warnings

    import cvxpy as cp

    assert isinstance(problem, cp.Problem) and isinstance(variable, cp.Variable)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            problem.solve(solver=cp.CLARABEL)
    except cp.SolverError as exc:
        raise SolverError(f"{what}: the QP solver failed: {exc}") from exc
    if variable.value is None:
        raise SolverError(f"{what}: the QP solver ended with status {problem.status!r}")
    return np.asarray(variable.value, dtype=float)


def enclosing_ball(K: np.ndarray) -> QPAnswer:
    """The squared radius of the minimum enclosing ball of the points in feature space.

    ``lower = sum_i g_i K_ii - g'Kg`` (the dual's value at ``g``) and ``upper = max_i ||phi(x_i)
    - c||^2`` with ``c = sum_i g_i phi(x_i)``: ``lower <= R^2 <= upper``.
    """
    import cvxpy as cp

    n = K.shape[0]
    diag = np.diagonal(K).astype(float)
    g = cp.Variable(n, nonneg=True)
    program = cp.Problem(cp.Maximize(diag @ g - cp.sum_squares(psd_factor(K).T @ g)), [cp.sum(g) == 1])
    x = np.maximum(_solve(program, g, "minimum enclosing ball"), 0.0)
    x /= x.sum()
    Kx = K @ x
    centre_norm = float(x @ Kx)
    return QPAnswer(x, max(float(diag @ x) - centre_norm, 0.0),
                    max(float(np.max(diag - 2 * Kx)) + centre_norm, 0.0))


def hull_distance(K: np.ndarray, signs: np.ndarray) -> QPAnswer:
    """The squared distance between the convex hulls of the classes ``signs = +1`` and ``-1``.

    ``upper = ||w||^2`` at the solution's ``w = sum_i g_i y_i phi(x_i)`` (two points of the
    hulls); ``lower = max(0, sep)^2`` with ``sep = (min_{+} (Kv)_i - max_{-} (Kv)_j) / ||w||``,
    ``v = g * y``, the gap the hulls' projections on ``w`` leave.
    """
    import cvxpy as cp

    positive = signs > 0
    g = cp.Variable(signs.size, nonneg=True)
    A = psd_factor(K).T * signs
    program = cp.Problem(cp.Minimize(cp.sum_squares(A @ g)),
                         [cp.sum(g[np.flatnonzero(positive)]) == 1, cp.sum(g[np.flatnonzero(~positive)]) == 1])
    x = np.maximum(_solve(program, g, "distance between the class hulls"), 0.0)
    x[positive] /= x[positive].sum()
    x[~positive] /= x[~positive].sum()
    Kv = K @ (x * signs)
    upper = max(float((x * signs) @ Kv), 0.0)
    if upper == 0.0:
        return QPAnswer(x, 0.0, 0.0)
    separation = (float(Kv[positive].min()) - float(Kv[~positive].max())) / np.sqrt(upper)
    return QPAnswer(x, max(separation, 0.0) ** 2, upper)
