"""Small cone-programming building blocks shared by cvxpy formulations.

cvxpy is imported lazily: importing kernelfuse must stay cheap.
"""

from __future__ import annotations

import math
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


def half_square(w: Any) -> tuple[Any, list[Any]]:
    """``0.5 * w^2`` for a nonnegative scalar expression ``w`` (through an epigraph)."""
    import cvxpy as cp

    bound = cp.Variable(nonneg=True)
    square, constraints = sum_squares_cone(cp.reshape(bound, (1,), order="C"))
    return 0.5 * square, [w <= bound, *constraints]


def norm_of(x: Any, p: float, axis: int | None = None) -> Any:
    """``||x||_p`` exactly (along ``axis``): 1, 2, inf as such, other ``p`` as power cones."""
    import cvxpy as cp

    if p == 1:
        return cp.norm1(x, axis=axis)
    if p == 2:
        return cp.norm(x, 2, axis=axis)
    if math.isinf(p):
        return cp.norm_inf(x, axis=axis)
    return cp.pnorm(x, p, axis=axis, approx=False)  # type: ignore[arg-type]  # a float p: exact power cones
