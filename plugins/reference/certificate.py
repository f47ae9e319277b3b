"""A certified lower bound on a family's optimum from one dual point, every family of OBJECTIVES.md.

The dual point ``u`` has the shape of the decision values ``f`` ((N,), or
(N, n_outputs) for Crammer-Singer and the multi-label families) and is read
in the units of the loss's sub-gradient: at the optimum ``u = dloss(y, f*)``
(the multiplier of ``z = f`` in a program ``min reg(f) + loss(z)``, scaled
by the loss's weight in the objective).  Any ``u`` gives a valid bound
after it is made feasible (weak duality); the bound is tight at the
optimum's multipliers.  Per family (section numbers of the papers the
solvers cite):

* ``l1_mkl``: :func:`kernelfuse.problem.duality.l1_mkl_lower_bound` at ``rho = u``
  (SpicyMKL, section 5.1).
* ``l1_mkl_sq``, ``vskl`` (hinge): ``rho = u`` projected onto the hinge
  conjugate's domain and ``sum = 0`` (:func:`kernelfuse.problem.duality.feasible_dual_point`),
  ``alpha = -C y rho`` in ``[0, C]^N`` with ``y'alpha = 0``, then
  ``H(alpha) = 1'alpha - 0.5 ||(max_{k in j} a_k)_j||_r`` with
  ``a_k = (alpha y)' K_k (alpha y)`` (mirrorVSKL, section 3; one group for
  ``l1_mkl_sq``, SimpleMKL's dual).
* ``pnorm_mkl``: Fenchel's dual of ``(lam/2) ||w||_{2,p}^2 + (1/N) sum_i loss_i``
  at ``v = c u / N``: ``D = -(1/N) sum_i loss*(c u_i) - (c^2 / (2 lam N^2))
  ||(||u||_{K_m})_m||_{p*}^2``, ``p* = p / (p - 1)``, where ``||u||_{K_m}^2``
  sums over classes.  Both losses have a conjugate ``-c s_i`` linear on its
  domain: hinge ``s_i = -y_i u_i`` in ``[0, 1]``, Crammer-Singer ``s_i =
  sum_{c != y_i} u_ic`` over ``u_ic >= 0`` (``u_{i y_i} = -s_i``), with
  ``c s_i <= 1``; the best ``c`` is the maximiser of that quadratic.
* ``mikl``: Fenchel's dual at ``u`` (clipped to ``y u <= 0``) scaled by its best factor
  (:func:`kernelfuse.problem.duality.mikl_lower_bound`, the penalty the registered prox ``mixed-norm``).
* ``mlmkl_sum`` / ``mlmkl_max``: ``alpha_k = clip(-C Y_k u_k, 0, C)`` per
  label and :func:`~kernelfuse.problem.duality.weighted_lower_bound`
  with ``gamma = 1`` (sum), or the best ``gamma``
  (:func:`~kernelfuse.problem.duality.max_family_lower_bound`, max).
"""

from __future__ import annotations

import math

import numpy as np

from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.kernels.products import kernel_times
from kernelfuse.parts.registry import get_registry
from kernelfuse.problem.duality import (
    feasible_dual_point,
    l1_mkl_lower_bound,
    max_family_lower_bound,
    mikl_lower_bound,
    pnorm_mkl_lower_bound,
    vskl_lower_bound,
    weighted_lower_bound,
)
from kernelfuse.problem.instance import Problem


def lower_bound(problem: Problem, u: np.ndarray) -> float:
    """A lower bound on ``problem``'s optimum (OBJECTIVES.md units) from the dual point ``u``;
    ``-inf`` where ``u`` cannot be made feasible or is not finite."""
    u = np.asarray(u, dtype=float)
    if not np.isfinite(u).all():
        return -math.inf
    family = problem.family.name
    if family == "l1_mkl":
        return l1_mkl_lower_bound(problem, u)[0]
    if family in ("l1_mkl_sq", "vskl"):
        return _group_bound(problem, u)
    if family == "pnorm_mkl":
        # u holds the multipliers of z = f: duality's tau is -u ((N,) or, transposed, (C, N)).
        return pnorm_mkl_lower_bound(problem, -u.T)[0]
    if family == "mikl":
        point = feasible_dual_point(problem, u)[0]  # type: ignore[index]  # no intercept: a clip
        params = {name: problem.params[name] for name in ("lam", "p", "q", "r")}
        penalty = get_registry().create("prox", "mixed-norm", **params)
        return mikl_lower_bound(problem, penalty, point, kernel_times(problem.K, point))
    return _multilabel_bound(problem, u)


def _group_bound(problem: Problem, u: np.ndarray) -> float:
    feasible = feasible_dual_point(problem, u)
    if feasible is None:
        return -math.inf
    C = problem.params["C"]
    alpha = -C * problem.y * feasible[0]
    forms = quadratic_forms(problem.K, alpha * problem.y)
    if problem.family.name == "l1_mkl_sq":
        return vskl_lower_bound(alpha, forms, np.zeros(problem.n_kernels, dtype=int), 1.0)
    assert problem.groups is not None
    return vskl_lower_bound(alpha, forms, problem.groups, problem.params["q"])


def _multilabel_bound(problem: Problem, u: np.ndarray) -> float:
    C = problem.params["C"]
    alpha = np.clip(-C * problem.y * u, 0.0, C)
    forms = quadratic_forms(problem.K, alpha * problem.y)
    sums = alpha.sum(axis=0)
    if problem.family.name == "mlmkl_sum":
        return weighted_lower_bound(sums, forms, np.ones(sums.size))
    return max_family_lower_bound(sums, forms)
