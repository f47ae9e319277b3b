"""A primal-dual active-set (semismooth Newton) SVM solver, warm-startable, in double precision.

The SVM dual's KKT conditions (:mod:`kernelfuse.parts.svm_solver`), written as
``a = P_[0,C](a - c G)`` with ``G_i = y_i f(x_i) - 1``, are a semismooth equation; one Newton
step guesses which ``a_i`` sit at 0, at C or in between, and solves the equality-constrained
system on the free set (Hintermueller, Ito and Kunisch, SIAM J. Optim. 13(3), 2002).  The sets
stop changing exactly when the KKT conditions hold: a few steps from a warm start on a nearby
kernel.  Dense double precision makes weights spread over many orders of magnitude harmless.
From a warm start the first sets are read off the stale duals on the new kernel; where those
steps cycle (far apart kernels: the sets flip between all at 0 and all at C), the steps start once
more from the stale duals' own sets.  A step pattern that repeats, or runs past ``max_iter``,
restarts from libsvm's solution
polished by the same steps, and where that fails a globally convergent solver answers: libsvm
with an intercept; without one, projected Newton steps with a line search (Bertsekas, SIAM J.
Control Optim. 20(2), 1982) that the same steps take over from, and OSQP only where those run out.  With
an intercept the steps work on the centred kernel; without one the free block is a kernel's,
solved by Cholesky, one factor reused while the free set moves little (:class:`KernelBlockFactor`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import attrs
import numpy as np
import scipy.linalg

from kernelfuse.numerics.svm_dual import centred_kernel, intercept_from_alpha, margins
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.runtime.deadline import expired
from kernelfuse.validation import positive, positive_count


@attrs.define
class ActiveSetSVM(SVMSolver):
    """Primal-dual active-set Newton on the SVM dual: exact, warm-started, falls back when it cycles."""

    name = "active-set"
    max_iter: int = positive_count.field(60)
    #: Steps a warm start may take before the cold start takes over: a warm start that
    #: converges does so in a few (docs/methods/mirror-vskl.md, SVM solvers).
    warm_max_iter: int = positive_count.field(12)
    #: Relative tolerance deciding set membership (in units of C).
    set_tol: float = positive.field(1e-10)
    #: Largest KKT violation accepted, in margin units (``|y_i f_i - 1|``).
    kkt_tol: float = positive.field(1e-8)
    #: How many solves needed the fallback (for reports and tests).
    fallbacks: int = attrs.field(default=0, init=False)

    def solve(self, K: np.ndarray, y: np.ndarray, C: float, *, intercept: bool = True,
              warm_start: SVMSolution | None = None) -> SVMSolution:
        if not intercept:
            return self._solve(K, y, C, False, warm_start)
        # With y'a = 0 the centred kernel is the same dual, without a constant part to round.
        centred, rows = centred_kernel(K)
        if warm_start is not None:
            warm_start = attrs.evolve(
                warm_start, intercept=warm_start.intercept + float(rows @ (warm_start.alpha * y)))
        solution = self._solve(centred, y, C, True, warm_start)
        return attrs.evolve(solution, intercept=solution.intercept - float(rows @ (solution.alpha * y)))

    def _solve(self, K: np.ndarray, y: np.ndarray, C: float, intercept: bool,
               warm_start: SVMSolution | None) -> SVMSolution:
        if warm_start is None:
            return self._cold_start(K, y, C, intercept)
        result = self._newton(K, y, C, intercept, warm_start.alpha, warm_start.intercept,
                              self.warm_max_iter)
        if result is not None:
            return result
        self.fallbacks += 1
        result = self._newton(K, y, C, intercept, warm_start.alpha, warm_start.intercept,
                              self.warm_max_iter, own_sets=True)
        if result is not None:
            return result
        return self._cold_start(K, y, C, intercept)

    def _cold_start(self, K: np.ndarray, y: np.ndarray, C: float, intercept: bool) -> SVMSolution:
        """libsvm's solution (with an intercept), polished by the active-set steps.

        Without an intercept the polish drops ``y'a = 0``: from libsvm's
        sets it takes a few steps, far faster than OSQP (docs/methods/mirror-vskl.md),
        which remains the fallback.  With an
        intercept libsvm's own answer is the fallback (``converged=False``
        where its iteration bound stopped it).
        """
        from kernelfuse.plugins.svm.libsvm import LibSVM

        start = LibSVM().solve(K, y, C)
        polished = self._newton(K, y, C, intercept, start.alpha, start.intercept)
        if polished is not None:
            return attrs.evolve(polished, n_iter=polished.n_iter + start.n_iter)
        if intercept:
            return start
        descended = self._projected_newton(K, y, C, start.alpha)
        if descended is not None:
            return attrs.evolve(descended, n_iter=descended.n_iter + start.n_iter)
        solution = self._fallback(K, y, C)
        polished = self._newton(K, y, C, intercept, solution.alpha, solution.intercept)
        return polished if polished is not None else solution

    def _projected_newton(self, K: np.ndarray, y: np.ndarray, C: float,
                          alpha: np.ndarray) -> SVMSolution | None:
        """``min 0.5 a'Qa - 1'a`` over ``[0, C]^N`` (``Q = Y K Y``, no intercept) from ``alpha`` by
        projected Newton steps (Bertsekas 1982): Newton on the coordinates not held at a bound, a
        scaled gradient step on those held (within ``eps`` of a bound, pushed outward), the step
        backtracked along the projection arc until Armijo's decrease holds.  Globally convergent
        where the active-set steps cycle (their start, libsvm's, solves the problem with an
        intercept).  Every ``POLISH_EVERY`` steps the active-set steps try from the iterate (up
        to ``warm_max_iter``): they finish as soon as its sets are near the optimum's, long before
        the projected steps would (measured in docs/methods/ml-mkl-sa.md).  The polished
        solution; None after ``max_iter`` steps; past the solve's deadline the iterate, with
        ``converged=False``."""
        a = np.clip(alpha, 0.0, C)
        Qa = y * (K @ (a * y))
        value = 0.5 * a @ Qa - a.sum()
        diagonal = np.maximum(np.diag(K), np.finfo(float).tiny)
        for step in range(self.max_iter):
            if expired():
                return SVMSolution(a, 0.0, step, converged=False)
            g = Qa - 1.0
            width = float(np.linalg.norm(a - np.clip(a - g, 0.0, C)))
            settled = width <= self.kkt_tol * max(1.0, float(np.abs(g).max()))
            if settled or (step and step % POLISH_EVERY == 0):
                polished = self._newton(K, y, C, False, a, 0.0, None if settled else self.warm_max_iter)
                if polished is not None:
                    return attrs.evolve(polished, n_iter=polished.n_iter + step)
                if settled:
                    return None  # the projected steps settled where the sets do not polish
            eps = min(1e-3 * C, width)
            held = ((a <= eps) & (g > 0)) | ((a >= C - eps) & (g < 0))
            free = np.flatnonzero(~held)
            d = -g / diagonal
            if free.size:
                newton = solve_free_system(K[np.ix_(free, free)], y[free] * g[free], free.size, "pos")
                d[free] = -y[free] * newton
            t = 1.0
            for _ in range(MAX_BACKTRACKS):
                trial = np.clip(a + t * d, 0.0, C)
                Q_trial = y * (K @ (trial * y))
                trial_value = 0.5 * trial @ Q_trial - trial.sum()
                decrease = -t * (g[free] @ d[free]) + g[held] @ (a[held] - trial[held])
                if value - trial_value >= ARMIJO * decrease:
                    break
                t *= 0.5
            else:
                return None  # no decrease along the arc: numerically stuck
            a, Qa, value = trial, Q_trial, trial_value
        return None

    def _fallback(self, K: np.ndarray, y: np.ndarray, C: float) -> SVMSolution:
        """The globally convergent solver without an intercept, where libsvm's start does not polish."""
        from kernelfuse.plugins.svm.osqp_qp import OSQPSolver

        return OSQPSolver().solve(K, y, C, intercept=False)

    def _sets(self, alpha: np.ndarray, G: np.ndarray, C: float) -> tuple[np.ndarray, np.ndarray]:
        z = alpha - C * G
        return z <= self.set_tol * C, z >= C * (1.0 - self.set_tol)

    def _newton(
        self, K: np.ndarray, y: np.ndarray, C: float, intercept: bool,
        alpha: np.ndarray, b: float, max_iter: int | None = None, own_sets: bool = False,
    ) -> SVMSolution | None:
        """Active-set steps from ``(alpha, b)``; None when they cycle or run out
        (``max_iter`` steps, :attr:`max_iter` unless given)."""
        # own_sets: the duals' own sets (the rule at zero margins), not those read on this kernel
        G = np.zeros_like(alpha) if own_sets else margins(K, y, alpha, b if intercept else 0.0)
        lower, upper = self._sets(alpha, G, C)
        seen: set[bytes] = set()
        blocks = None if intercept else KernelBlockFactor(K)
        for step in range(1, (max_iter or self.max_iter) + 1):
            try:
                alpha, b = self._solve_on_sets(K, y, C, lower, upper, blocks)
                G = margins(K, y, alpha, b)
                if blocks is not None and blocks.approximate:
                    alpha, G = blocks.refine(y, alpha, G, lower, upper)
            except np.linalg.LinAlgError:
                return None  # a numerically broken system: hand over to the fallback
            new_lower, new_upper = self._sets(alpha, G, C)
            if np.array_equal(new_lower, lower) and np.array_equal(new_upper, upper):
                if self._kkt_violation(y, C, alpha, G, lower, upper, intercept) > self.kkt_tol:
                    return None  # an inconsistent (singular) system: not a solution
                return SVMSolution(np.clip(alpha, 0.0, C), b, step)
            key = np.packbits(lower).tobytes() + np.packbits(upper).tobytes()
            if key in seen:
                return None
            seen.add(key)
            lower, upper = new_lower, new_upper
        return None

    @staticmethod
    def _kkt_violation(
        y: np.ndarray, C: float, alpha: np.ndarray, G: np.ndarray,
        lower: np.ndarray, upper: np.ndarray, intercept: bool,
    ) -> float:
        free = ~(lower | upper)
        parts = [
            np.abs(G[free]).max(initial=0.0),
            (-G[lower]).max(initial=0.0),
            G[upper].max(initial=0.0),
            abs(float(alpha @ y)) / max(C, 1.0) if intercept else 0.0,
        ]
        return float(max(parts))

    @staticmethod
    def _solve_on_sets(
        K: np.ndarray, y: np.ndarray, C: float, lower: np.ndarray, upper: np.ndarray,
        blocks: KernelBlockFactor | None,
    ) -> tuple[np.ndarray, float]:
        """The duals and intercept on the sets: without an intercept (``blocks``, the kernel
        blocks' factor) ``K_FF beta_F = rhs``; with one (``blocks`` None) that system bordered by
        ``y'a = 0``, by the Schur complement of a Cholesky factor of ``K_FF`` (``K_FF [u, v] =
        [rhs, 1]``, ``b = (1'u - 1'beta_F) / 1'v``, ``beta_F = u - b v``) where ``K_FF`` is well
        conditioned, else the bordered system (:func:`solve_free_system`)."""
        free = np.flatnonzero(~(lower | upper))
        at_c = np.flatnonzero(upper)
        alpha = np.zeros(y.shape[0])
        alpha[at_c] = C
        if free.size == 0:
            return alpha, (0.0 if blocks is not None else intercept_from_alpha(K, y, C, alpha))
        rhs = y[free] - C * (K[np.ix_(free, at_c)] @ y[at_c])
        if blocks is not None:
            alpha[free] = blocks.solve(free, rhs) * y[free]
            return alpha, 0.0
        n = free.size
        block = K[np.ix_(free, free)]
        total = -C * y[at_c].sum()  # 1'beta_F: y'a = 0
        factor = _cholesky_factor(block)
        if factor is not None:  # the border by its Schur complement: K_FF [u, v] = [rhs, 1]
            u, v = scipy.linalg.lapack.dpotrs(factor, np.c_[rhs, np.ones(n)], lower=True)[0].T
            b = (u.sum() - total) / v.sum()
            alpha[free] = (u - b * v) * y[free]
            return alpha, float(b)
        system = np.block([[block, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
        solution = solve_free_system(system, np.r_[rhs, total], n, "sym")
        alpha[free] = solution[:n] * y[free]
        return alpha, float(solution[-1])


#: Armijo's sufficient decrease and the halvings of a projected Newton step (:meth:`ActiveSetSVM._projected_newton`).
ARMIJO = 1e-4
MAX_BACKTRACKS = 40
#: Projected Newton steps between the active-set steps' tries (:meth:`ActiveSetSVM._projected_newton`).
POLISH_EVERY = 5


def solve_free_system(system: np.ndarray, rhs: np.ndarray, n_kernel: int, assume_a: str) -> np.ndarray:
    """``system x = rhs`` for a step on the free set (its leading ``n_kernel`` block a kernel
    block; ``assume_a`` LAPACK's structure, "pos" or "sym"); :func:`singular_solve` where LAPACK
    finds it singular or ill-conditioned."""
    if assume_a == "pos":
        solution = _positive_definite_solve(system, rhs)
        return solution if solution is not None else singular_solve(system, rhs, n_kernel)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(system, rhs, assume_a=assume_a, check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        return singular_solve(system, rhs, n_kernel)


def _positive_definite_solve(system: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """``system^-1 rhs`` by LAPACK's Cholesky (``potrf``, ``pocon``, ``potrs``); None where the
    factor fails or the reciprocal condition is below machine epsilon (scipy's ill-conditioning
    rule).  scipy's ``solve(assume_a="pos")`` does the same in about 1.3x the time (600 x 600)."""
    factor = _cholesky_factor(system)
    return None if factor is None else scipy.linalg.lapack.dpotrs(factor, rhs, lower=True)[0]


#: Ridge on a singular kernel block, relative to its largest diagonal entry (:func:`singular_solve`).
RIDGE = 1e-10
#: Refinement steps against the exact system: one reached roundoff on every scene block measured.
REFINEMENTS = 3


def singular_solve(system: np.ndarray, rhs: np.ndarray, n_kernel: int) -> np.ndarray:
    """A solution of ``system x = rhs`` whose leading ``n_kernel`` block is a singular kernel
    block (duplicate points): the ridge system (``RIDGE`` times its largest diagonal entry on
    that block), refined against the exact one (iterated Tikhonov).  On a consistent system it
    reaches roundoff in a step, within ``RIDGE / lambda_min + eps / RIDGE`` (relative; the
    smallest nonzero eigenvalue, the roundoff of the null-space part) of the minimum-norm
    solution, and about 5x faster than the SVD least squares (scene's free blocks,
    docs/methods/ml-mkl-sa.md).  A component along the null space (duplicate points' share of
    their weight) leaves the objective unchanged.  Where it does not reach roundoff (an
    inconsistent system) the least-squares solution answers (QR with column pivoting, ``gelsy``)."""
    ridged = _ridged(system, n_kernel)
    scale = float(np.abs(system).sum(axis=1).max())
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        solve = _factorised(ridged, positive=n_kernel == system.shape[0])
        x = np.zeros_like(rhs)
        residual = rhs
        for _ in range(REFINEMENTS):
            x = x + solve(residual)
            residual = rhs - system @ x
            if np.abs(residual).max() <= 1e-12 * (scale * np.abs(x).max() + np.abs(rhs).max()):
                return x
    return scipy.linalg.lstsq(system, rhs, lapack_driver="gelsy", check_finite=False)[0]


def _ridged(system: np.ndarray, n_kernel: int) -> np.ndarray:
    """A copy of ``system`` with :data:`RIDGE` times the largest diagonal entry of its leading
    ``n_kernel`` (kernel) block added to that block's diagonal."""
    ridged = system.copy()
    diagonal = np.arange(n_kernel)
    largest = float(np.abs(system[diagonal, diagonal]).max(initial=0.0))
    ridged[diagonal, diagonal] += RIDGE * max(largest, np.finfo(float).tiny)
    return ridged


def _factorised(matrix: np.ndarray, positive: bool) -> Callable[[np.ndarray], np.ndarray]:
    """``b -> matrix^-1 b`` from one factorisation: Cholesky where ``positive`` (a ridged kernel
    block) and it exists, else LU."""
    factor = _cholesky_factor(matrix) if positive else None
    if factor is not None:
        return lambda b: scipy.linalg.lapack.dpotrs(factor, b, lower=True)[0]
    lu = scipy.linalg.lu_factor(matrix, check_finite=False)
    return lambda b: scipy.linalg.lu_solve(lu, b, check_finite=False)


#: A factor is updated while the free set differs from its block by at most this share of the
#: block's points (each differing point costs two triangular solves with the old factor, a new
#: factor a third of n of them); past it the block is factorised anew.
UPDATE_SHARE = 1.0 / 8.0
#: Blocks smaller than this are factorised anew at every step: cheaper than the update's
#: bookkeeping and its refinement's extra margins.
UPDATE_MIN = 500
#: A solve from an updated or ridged factor is refined (up to :data:`REFINEMENTS` times) while a
#: free point's margin residual exceeds this.
REFINE_TOL = 1e-10


class KernelBlockFactor:
    """Solves ``K[F, F] x = b`` for the free sets ``F`` of successive active-set steps on one
    kernel (no intercept), reusing one Cholesky factor ``K[F0, F0] = L L'`` while ``F`` stays
    near ``F0``: the points removed (``R``) and added (``A``) enter by block elimination,
    ``S u = B'K0^-1 b0 - [b_A; 0]``, ``B = [K[F0, A], E_R]``, ``S = B'K0^-1 B - diag(K_AA, 0)``,
    ``x_F0 = K0^-1 (b0 - B u)`` (``x_R = 0`` by the multipliers on ``E_R``): ``2 n0^2 (|A| + |R|)``
    operations against ``n^3 / 3``.  The late steps of a warm start move a few points, each a
    full factorisation before (measured in docs/methods/ml-mkl-sa.md)."""

    def __init__(self, K: np.ndarray) -> None:
        self.K = K
        self.free = np.zeros(0, dtype=int)
        self.factor: np.ndarray | None = None
        self.approximate = False  # the last solve came from an update or a ridged factor: refine it
        self.singular = False

    def solve(self, free: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """``K[free, free]^-1 rhs`` (``free`` sorted)."""
        if self.factor is not None:
            removed = np.setdiff1d(self.free, free, assume_unique=True)
            added = np.setdiff1d(free, self.free, assume_unique=True)
            if self.free.size >= UPDATE_MIN and removed.size + added.size <= UPDATE_SHARE * self.free.size:
                solution = self._updated_solve(free, removed, added, rhs)
                if solution is not None:
                    self.approximate = True
                    return solution
        block = self.K[np.ix_(free, free)]
        # once a block was singular (duplicate points), the next ones likely are: ridged at once
        factor = None if self.singular else _cholesky_factor(block)
        self.approximate = self.singular = factor is None
        if factor is None:  # singular: the ridged block's factor, refined
            factor = _cholesky_factor(_ridged(block, free.size))
            if factor is None:
                self.factor = None
                return singular_solve(block, rhs, free.size)
        self.free, self.factor = free, factor
        return scipy.linalg.lapack.dpotrs(factor, rhs, lower=True)[0]

    def refine(self, y: np.ndarray, alpha: np.ndarray, G: np.ndarray,
               lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Iterative refinement on the free set while its margins' residual (``K[F, F] beta_F``
        should give ``y_F f_F = 1``: the residual is ``-y_F G_F``) exceeds :data:`REFINE_TOL`, up
        to :data:`REFINEMENTS` steps, then the block's own :func:`singular_solve` of the residual."""
        free = np.flatnonzero(~(lower | upper))
        alpha = alpha.copy()
        for _ in range(REFINEMENTS):
            if free.size == 0 or np.abs(G[free]).max() <= REFINE_TOL:
                return alpha, G
            alpha[free] -= self.solve(free, y[free] * G[free]) * y[free]
            G = margins(self.K, y, alpha, 0.0)
        if free.size and np.abs(G[free]).max() > REFINE_TOL:
            # not converging (an inconsistent block): the correction by the block's own solve
            alpha[free] -= singular_solve(self.K[np.ix_(free, free)], y[free] * G[free], free.size) * y[free]
            G = margins(self.K, y, alpha, 0.0)
        return alpha, G

    def _updated_solve(self, free: np.ndarray, removed: np.ndarray, added: np.ndarray,
                       rhs: np.ndarray) -> np.ndarray | None:
        assert self.factor is not None
        base = self.free
        kept = ~np.isin(base, removed, assume_unique=True)
        b0 = np.zeros(base.size)
        b0[kept] = rhs[np.searchsorted(free, base[kept])]
        at_added = np.searchsorted(free, added)
        B = np.zeros((base.size, added.size + removed.size))
        B[:, : added.size] = self.K[np.ix_(base, added)]
        B[np.searchsorted(base, removed), added.size + np.arange(removed.size)] = 1.0
        solved = scipy.linalg.lapack.dpotrs(self.factor, np.c_[b0, B], lower=True)[0]
        z, W = solved[:, 0], solved[:, 1:]
        x = np.zeros(free.size)
        if B.shape[1]:
            S = B.T @ W
            S[: added.size, : added.size] -= self.K[np.ix_(added, added)]
            small = B.T @ z
            small[: added.size] -= rhs[at_added]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
                    u = scipy.linalg.solve(S, small, assume_a="sym", check_finite=False)
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
                return None
            z = z - W @ u
            x[at_added] = u[: added.size]
        x[np.searchsorted(free, base[kept])] = z[kept]
        return x


def _cholesky_factor(block: np.ndarray) -> np.ndarray | None:
    """The lower Cholesky factor of a kernel block; None where it fails or the reciprocal
    condition is below machine epsilon (scipy's ill-conditioning rule)."""
    lapack = scipy.linalg.lapack
    norm = float(np.abs(block).sum(axis=0).max())
    factor, info = lapack.dpotrf(block.T, lower=True, clean=False)  # symmetric: .T is Fortran order
    if info != 0:
        return None
    rcond, info = lapack.dpocon(factor, norm, uplo="L")
    return factor if info == 0 and rcond >= np.finfo(float).eps else None
