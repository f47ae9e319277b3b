"""The SVM dual as a quadratic program for OSQP (Stellato et al., 2020)."""

from __future__ import annotations

import ctypes
import functools
import math
import threading
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp

from kernelfuse.errors import SolverError
from kernelfuse.numerics.svm_dual import intercept_from_alpha
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.runtime.deadline import remaining
from kernelfuse.validation import positive, positive_count


@attrs.frozen
class OSQPSolver(SVMSolver):
    """OSQP (ADMM) on the SVM dual QP, warm-started, polished; with or without intercept.

    ``min 0.5 a' Q a - 1'a`` with ``Q = (y y') * K``, ``0 <= a <= C``, and
    ``y'a = 0`` with an intercept.  The intercept is recovered from the
    margin support vectors (:func:`~kernelfuse.numerics.svm_dual.intercept_from_alpha`).
    ``max_iter`` ADMM steps and the solve's deadline (:mod:`kernelfuse.runtime.deadline`,
    OSQP's ``time_limit``) bound it; a solve either stops is returned with
    ``converged=False``.  A SIGINT during the call raises ``KeyboardInterrupt`` when it returns
    (:func:`solve_passing_interrupts`).
    """

    name = "osqp"
    eps: float = positive.field(1e-10)
    max_iter: int = positive_count.field(200_000)

    def solve(self, K: np.ndarray, y: np.ndarray, C: float, *, intercept: bool = True,
              warm_start: SVMSolution | None = None) -> SVMSolution:
        import osqp

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
        res = solve_passing_interrupts(solver)
        if res.x is None or not np.isfinite(res.x).all():
            raise SolverError(f"OSQP did not solve the SVM dual: {res.info.status}")
        alpha = np.clip(np.asarray(res.x, dtype=float), 0.0, C)
        b = intercept_from_alpha(K, y, C, alpha) if intercept else 0.0
        return SVMSolution(alpha, b, int(res.info.iter), converged=res.info.status == "solved")


#: OSQP's SIGINT listener is process-wide state (the handler it saved, its flag): two solves
#: overlapping in threads would restore each other's saved handler, leaving OSQP's installed.
_LISTENER = threading.Lock()


def solve_passing_interrupts(solver: Any) -> Any:
    """``solver.solve()`` (an ``osqp.OSQP`` that is set up), raising ``KeyboardInterrupt`` after it
    returns where a SIGINT arrived during it.

    OSQP replaces the process's SIGINT handler for the solve and reads its own flag once per ADMM
    step: a signal after the last read (the last step, polishing, unscaling) sets a flag that OSQP
    no longer reads, and Python's handler never sees it.  The flag stays set until the next solve
    starts, so it is read here after the call (:func:`_interrupt_flag`); a signal outside OSQP's
    listener (during setup, or after it) reaches Python's handler and raises as usual.  One solve
    at a time (:data:`_LISTENER`); the others wait for it.
    """
    from osqp.interface import SolverStatus

    with _LISTENER:
        result = solver.solve(raise_error=False)
        if result.info.status_val == SolverStatus.OSQP_SIGINT or _interrupt_flag(solver.ext.__file__)():
            raise KeyboardInterrupt
    return result


@functools.cache
def _interrupt_flag(extension: str) -> Callable[[], int]:
    """OSQP's SIGINT flag, ``osqp_is_interrupted`` of its compiled extension (the path
    ``extension``, the library already loaded): non-zero once its handler caught a signal, cleared
    when a solve starts.  Where the extension does not export it, 0: OSQP's status alone tells."""
    try:
        return ctypes.CDLL(extension).osqp_is_interrupted
    except (OSError, AttributeError):
        return lambda: 0
