"""A convex QP over a product of simplices with a low-rank-plus-ridge Hessian.

    ``min_x  0.5 x'(R'R + mu I) x - theta'x``   s.t.  ``x >= 0``, ``sum_{k in group j} x_k = 1`` for every j,

with ``R`` (r, n) and ``mu > 0`` (a unique solution), or ``R'R`` given as a matrix
(:class:`KernelSimplexQP`): the mirror step of mirrorVSKL's
``local-quadratic`` map (a projected Newton step on kernel weights), and the enclosing ball and
class hulls of :mod:`kernelfuse.numerics.geometry`.  Solved by the primal active-set method
(Nocedal and Wright, Algorithm 16.3) from the vertex of each simplex with the smallest gradient:
about as many steps as the solution has non-zero weights, each an ``|S|``-sized solve (direct, or
by the Woodbury identity when ``|S| > r``); past ``max_iter``, accelerated projected gradient
takes over (docs/methods/mirror-vskl.md).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
import scipy.linalg


@attrs.frozen
class SimplexQPSolution:
    """The minimiser ``x`` and the work it took (``iterations``; ``fallback`` if FISTA was needed)."""

    x: np.ndarray
    iterations: int
    fallback: bool = False


def project_simplices(v: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The Euclidean projection of ``v`` onto the product of simplices ``groups`` describes."""
    x = np.empty_like(v)
    for j in range(int(groups.max()) + 1):
        idx = np.flatnonzero(groups == j)
        u = np.sort(v[idx])[::-1]
        excess = np.cumsum(u) - 1.0
        k = np.flatnonzero(u - excess / np.arange(1, u.size + 1) > 0)[-1]
        x[idx] = np.maximum(v[idx] - excess[k] / (k + 1), 0.0)
    return x


@attrs.frozen(eq=False)
class SimplexQP:
    """``0.5 x'(R'R + mu I)x - theta'x`` over the product of simplices of ``groups``."""

    R: np.ndarray
    mu: float
    groups: np.ndarray
    max_iter: int = 1000
    fista_iter: int = 5000

    @property
    def n_groups(self) -> int:
        return int(self.groups.max()) + 1

    def hessian_times(self, v: np.ndarray) -> np.ndarray:
        """``(R'R + mu I) v``."""
        return self.R.T @ (self.R @ v) + self.mu * v

    def value(self, x: np.ndarray, theta: np.ndarray) -> float:
        return float(0.5 * x @ self.hessian_times(x) - theta @ x)

    def solve(self, theta: np.ndarray, start: np.ndarray, warm: bool = False) -> SimplexQPSolution:
        """The minimiser, from the vertices with the smallest gradient at ``start`` (a point of the
        set), or from ``start`` itself and its support where ``warm`` (a previous solution of a
        nearby problem: a few steps instead of one per support point)."""
        if warm:
            x = start.copy()
        else:
            gradient = self.hessian_times(start) - theta
            x = np.zeros(theta.size)
            for j in range(self.n_groups):
                idx = np.flatnonzero(self.groups == j)
                x[idx[np.argmin(gradient[idx])]] = 1.0
        support = x > 0
        scale = 1e-12 * (1.0 + float(np.max(np.abs(theta))))
        for step in range(1, self.max_iter + 1):
            target, nu = self._solve_on_support(theta, support)
            p = target - x
            if np.max(np.abs(p)) > 1e-13:
                falling = support & (p < 0)
                ratios = -x[falling] / p[falling]
                length = min(1.0, float(ratios.min())) if ratios.size else 1.0
                x = np.where(support, x + length * p, 0.0)
                if length < 1.0:
                    blocking = np.flatnonzero(falling)[ratios <= length]
                    x[blocking] = 0.0
                    support[blocking] = False
                    x = np.maximum(x, 0.0)
                    continue
                x = np.maximum(x, 0.0)
            # x minimises on the support (a full step reached it): the multipliers decide
            eta = self.hessian_times(x) - theta + nu[self.groups]
            eta[support] = 0.0
            k = int(np.argmin(eta))
            if eta[k] >= -scale:
                return SimplexQPSolution(x, step)
            support[k] = True
        x = self._fista(theta, x)
        return SimplexQPSolution(x, self.max_iter, fallback=True)

    def _solve_on_support(self, theta: np.ndarray, support: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``x`` zero off ``support`` and the group multipliers ``nu`` of the system on it."""
        S = np.flatnonzero(support)
        E = np.zeros((self.n_groups, S.size))
        E[self.groups[S], np.arange(S.size)] = 1.0
        inverse = self._inverse_on(S)
        A_theta, A_E = inverse(theta[S]), inverse(E.T)
        nu = np.linalg.lstsq(E @ A_E, E @ A_theta - 1.0, rcond=None)[0]
        x = np.zeros(theta.size)
        x[S] = A_theta - A_E @ nu
        # E_S x_S = 1 to rounding: the system is ill-conditioned for near-duplicate columns
        counts = np.bincount(self.groups[S], minlength=self.n_groups)
        residual = 1.0 - np.bincount(self.groups[S], weights=x[S], minlength=self.n_groups)
        x[S] += (residual / np.maximum(counts, 1))[self.groups[S]]
        return x, nu

    def _inverse_on(self, S: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``b -> (R_S'R_S + mu I)^-1 b`` by a Cholesky factor of the smaller of the two forms."""
        R_S = self.R[:, S]
        if S.size <= R_S.shape[0]:
            H = R_S.T @ R_S
            H[np.diag_indices_from(H)] += self.mu
            factor = scipy.linalg.cho_factor(H, check_finite=False)
            return lambda b: scipy.linalg.cho_solve(factor, b, check_finite=False)
        small = R_S @ R_S.T
        small[np.diag_indices_from(small)] += self.mu
        factor = scipy.linalg.cho_factor(small, check_finite=False)
        return lambda b: (b - R_S.T @ scipy.linalg.cho_solve(factor, R_S @ b, check_finite=False)) / self.mu

    def _lipschitz(self) -> float:
        """``||R'R + mu I||_2``."""
        return float(np.linalg.norm(self.R, 2) ** 2) + self.mu if self.R.size else self.mu

    def _fista(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Accelerated projected gradient with the step ``1 / ||R'R + mu I||_2``."""
        lipschitz = self._lipschitz()
        z, t = x.copy(), 1.0
        for _ in range(self.fista_iter):
            new = project_simplices(z - (self.hessian_times(z) - theta) / lipschitz, self.groups)
            if np.abs(new - x).sum() <= 1e-15:
                return new
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            z = new + ((t - 1.0) / t_new) * (new - x)
            x, t = new, t_new
        return x


@attrs.frozen(eq=False)
class KernelSimplexQP(SimplexQP):
    """The same QP with ``R'R = 2 D K D`` read from a kernel ``K`` (n, n), ``D = diag(scale)``,
    ``R`` unused: a QP on a full-rank kernel without factorising it first, each step an
    ``|S|``-sized Cholesky factor of ``(R'R)_SS + mu I``."""

    K: np.ndarray = attrs.field(kw_only=True)
    scale: np.ndarray = attrs.field(kw_only=True)

    def hessian_times(self, v: np.ndarray) -> np.ndarray:
        return 2.0 * self.scale * (self.K @ (self.scale * v)) + self.mu * v

    def _inverse_on(self, S: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        block = self.K[np.ix_(S, S)] * (2.0 * np.outer(self.scale[S], self.scale[S]))
        block[np.diag_indices_from(block)] += self.mu
        factor = scipy.linalg.cho_factor(block, check_finite=False)
        return lambda b: scipy.linalg.cho_solve(factor, b, check_finite=False)

    def _lipschitz(self) -> float:
        return 2.0 * float(np.linalg.eigvalsh(self.K * np.outer(self.scale, self.scale))[-1]) + self.mu
