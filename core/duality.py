"""Certified lower bounds from dual points, one function per family that has one.

``l1_mkl`` (OBJECTIVES.md family 1, C2 = 0): the dual is

    ``max_rho -sum_i loss*(y_i, rho_i)``  s.t.  ``sum_i rho_i = 0``,  ``||rho||_{K_m} <= C`` for every m,

(``rho = loss'(f)`` at the optimum).  Any ``rho`` is made feasible by
subtracting its mean, then scaling it by ``min(1, C / max_m ||rho||_{K_m})``
(in that order: scaling keeps the sum at zero, the other order can break the
norm constraint); the value at the feasible point is a lower bound on the
optimum, ``-inf`` when it falls outside the conjugate's domain.
"""

from __future__ import annotations

import numpy as np

from kernelfuse.problem import Problem


def l1_mkl_lower_bound(problem: Problem, rho: np.ndarray) -> tuple[float, int]:
    """Lower bound on the ``l1_mkl`` optimum from ``rho``, and the kernel passes it cost (1)."""
    if problem.params.get("C2", 0.0) != 0.0:
        raise ValueError("l1_mkl_lower_bound covers C2 = 0 only")
    M, N, _ = problem.K.shape
    rho = rho - rho.mean() if problem.family.has_intercept else rho
    norms = np.sqrt(np.maximum((problem.K.reshape(M * N, N) @ rho).reshape(M, N) @ rho, 0.0))
    top = float(norms.max())
    if top > problem.params["C"]:
        rho = rho * (problem.params["C"] / top)
    return float(-np.sum(problem.loss.conjugate(problem.y, rho))), 1
