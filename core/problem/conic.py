"""Small cone-programming building blocks shared by cvxpy formulations.

cvxpy is imported lazily: importing kernelfuse must stay cheap.
"""

from __future__ import annotations

from typing import Any


def sum_squares_cone(x: Any) -> tuple[Any, list[Any]]:
    """``sum(x**2)`` as an epigraph variable ``t`` with one second-order cone.

    ``||x||^2 <= t``  iff  ``|| (2x, t - 1) || <= t + 1``.  Clarabel fails on
    the quadratic-objective form cvxpy would otherwise pass it
    (InsufficientProgress); the cone form solves reliably.
    """
    import cvxpy as cp

    t = cp.Variable(nonneg=True)
    constraint = cp.SOC(t + 1, cp.hstack([2 * x, cp.reshape(t - 1, (1,), order="C")]))
    return t, [constraint]
