"""A certified lower bound on a family's optimum from one dual point, every family of OBJECTIVES.md.

The dual point ``u`` has the shape of the decision values ``f`` and is read in the units of the
loss's sub-gradient (the multiplier of ``z = f`` in a program ``min reg(f) + loss(z)``); any
``u``, made feasible, gives a valid bound (weak duality), tight at the optimum's multipliers.
Each family gets the bound its methods certify with: SpicyMKL's (``l1_mkl``, section 5.1),
mirrorVSKL's ``H(alpha)`` (``l1_mkl_sq``, ``vskl``, section 3), Fenchel's dual at the best
multiple of ``u`` (``pnorm_mkl``), MIKL's (``mikl``) and ML-MKL's (``mlmkl_sum``,
``mlmkl_max``).  How ``u`` is made feasible, family by family: docs/reliability.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.kernels.products import kernel_times
from kernelfuse.problem.duality import (
    feasible_dual_point,
    max_family_lower_bound,
    mikl_lower_bound,
    mikl_penalty,
    pnorm_mkl_lower_bound,
    separable_lower_bound,
    weighted_lower_bound,
)
from kernelfuse.problem.instance import Problem


def lower_bound(problem: Problem, u: np.ndarray) -> float:
    """A lower bound on ``problem``'s optimum (OBJECTIVES.md units) from the dual point ``u``;
    ``-inf`` where ``u`` cannot be made feasible or is not finite.  The bound is the value of
    the family's form of dual (:attr:`~kernelfuse.problem.families.Family.dual`)."""
    u = np.asarray(u, dtype=float)
    if not np.isfinite(u).all():
        return -math.inf
    return _BOUNDS[problem.family.dual](problem, u)


def _loss_conjugate_bound(problem: Problem, u: np.ndarray) -> float:
    return separable_lower_bound(problem, u)[0]


def _mean_loss_bound(problem: Problem, u: np.ndarray) -> float:
    # u holds the multipliers of z = f: duality's tau is -u ((N,) or, transposed, (C, N)).
    return pnorm_mkl_lower_bound(problem, -u.T)[0]


def _coef_fenchel_bound(problem: Problem, u: np.ndarray) -> float:
    point = feasible_dual_point(problem, u)[0]  # type: ignore[index]  # no intercept: a clip
    return mikl_lower_bound(problem, mikl_penalty(problem), point, kernel_times(problem.K, point))


def _svm_box_bound(problem: Problem, u: np.ndarray) -> float:
    feasible = feasible_dual_point(problem, u)
    if feasible is None:
        return -math.inf
    C = problem.params["C"]
    alpha = -C * problem.y * feasible[0]
    forms = quadratic_forms(problem.K, alpha * problem.y)
    return float(alpha.sum() - problem.regularizer.conjugate(np.sqrt(np.maximum(forms, 0.0))))


def _multilabel_bound(problem: Problem, u: np.ndarray) -> float:
    C = problem.params["C"]
    alpha = np.clip(-C * problem.y * u, 0.0, C)
    forms = quadratic_forms(problem.K, alpha * problem.y)
    sums = alpha.sum(axis=0)
    if problem.family.label_aggregate == "sum":
        return weighted_lower_bound(sums, forms, np.ones(sums.size))
    return max_family_lower_bound(sums, forms)


#: The bound of each form of dual (:data:`kernelfuse.problem.families.DUALS`).
_BOUNDS: dict[str, Callable[[Problem, np.ndarray], float]] = {
    "loss_conjugate": _loss_conjugate_bound,
    "svm_box": _svm_box_bound,
    "mean_loss": _mean_loss_bound,
    "coef_fenchel": _coef_fenchel_bound,
    "label_svms": _multilabel_bound,
}
