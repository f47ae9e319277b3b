"""The SVM dual as a quadratic program for OSQP (Stellato et al., 2020)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import scipy.sparse as sp

from kernelfuse.errors import SolverError
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver, intercept_from_alpha
from kernelfuse.runtime.deadline import remaining
from kernelfuse.validation import positive, positive_count


@attrs.frozen
class OSQPSolver(SVMSolver):
    """OSQP (ADMM) on the SVM dual QP, warm-started, polished; with or without intercept.

    ``min 0.5 a' Q a - 1'a`` with ``Q = (y y') * K``, ``0 <= a <= C``, and
    ``y'a = 0`` with an intercept.  The intercept is recovered from the
    margin support vectors (:func:`~kernelfuse.parts.svm_solver.intercept_from_alpha`).
    ``max_iter`` ADMM steps and the solve's deadline (:mod:`kernelfuse.runtime.deadline`,
    OSQP's ``time_limit``) bound it; a solve either stops is returned with
    ``converged=False``.
    """

    name = "osqp"
    supports_no_intercept = True
    warm_starts = True
    eps: float = positive.field(1e-10)
    max_iter: int = positive_count.field(200_000)

    def solve(self, K: np.ndarray, y: np.ndarray, C: float, *, intercept: bool = True,
              warm_start: SVMSolution | None = None) -> SVMSolution:
        import osqp
        from osqp.interface import SolverStatus

        n = y.shape[0]
        Q = sp.triu(sp.csc_matrix(K * np.outer(y, y)), format="csc")
        rows = [sp.identity(n, format="csc")]
        lower, upper = [np.zeros(n)], [np.full(n, float(C))]
        if intercept:
            rows.append(sp.csc_matrix(y[None, :]))
            lower.append(np.zeros(1))
            upper.append(np.zeros(1))
        left = remaining()
        limit = {"time_limit": max(left, 1e-3)} if math.isfinite(left) else {}
        solver = osqp.OSQP()
        solver.setup(
            Q, -np.ones(n), sp.vstack(rows, format="csc"), np.concatenate(lower),
            np.concatenate(upper), eps_abs=self.eps, eps_rel=self.eps, polishing=True,
            max_iter=self.max_iter, verbose=False, **limit,
        )
        if warm_start is not None:
            solver.warm_start(x=warm_start.alpha)
        res = solver.solve(raise_error=False)
        if res.info.status_val == SolverStatus.OSQP_SIGINT:  # OSQP caught Ctrl-C: pass it on
            raise KeyboardInterrupt
        if res.x is None or not np.isfinite(res.x).all():
            raise SolverError(f"OSQP did not solve the SVM dual: {res.info.status}")
        alpha = np.clip(np.asarray(res.x, dtype=float), 0.0, C)
        b = intercept_from_alpha(K, y, C, alpha) if intercept else 0.0
        return SVMSolution(alpha, b, int(res.info.iter), converged=res.info.status == "solved")
