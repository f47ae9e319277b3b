"""The objective of every family of OBJECTIVES.md, evaluated in one place.

Every solver reports ``objective = evaluate(problem, coef, intercept,
kernel_weights)`` at the model it returns, so solvers of one family compare
number for number.  Notation (OBJECTIVES.md): ``K`` (M, N, N), ``coef``
(M, N) or (M, n_outputs, N), ``f_m = K[m].T @ coef[m]`` on the training
points, ``||f_m||^2 = coef[m] @ K[m] @ coef[m]`` (summed over outputs).

One pass over the kernel stack (a batched matrix-vector product,
:func:`kernel_products` of :mod:`kernelfuse.kernels.products`, whatever the
stack's storage) gives both the decision values and the RKHS norms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.products import kernel_products

if TYPE_CHECKING:  # the families name these objectives; instance imports the families
    from kernelfuse.problem.instance import Problem

#: Simplex tolerance for kernel weights: d >= -tol and |sum(d) - 1| <= tol.
SIMPLEX_TOL = 1e-8


def sparse_kernel_products(K: np.ndarray, coef: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`kernel_products` reading only the kernels whose coefficients are not all zero.

    Returns the products and the fraction of a pass over the stack it cost;
    sparse l1-MKL models touch a few kernels of thousands.
    """
    active = np.flatnonzero(np.any(coef.reshape(coef.shape[0], -1) != 0, axis=1))
    return kernel_products(K, coef, active), active.size / K.shape[0]


def squared_norms(coef: np.ndarray, products: np.ndarray) -> np.ndarray:
    """``coef[m] @ K[m] @ coef[m]``, shape (M,) or (M, n_outputs); clipped at 0.

    Clipping removes the rounding noise of PSD kernels (a negative value of
    order 1e-16 ||K|| ||coef||^2), never a real negative curvature: families
    that need PSD kernels are validated on input.
    """
    return np.maximum(0.0, np.sum(coef * products, axis=-1))


def rkhs_norms(K: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``||f_m||`` per kernel (summed over outputs when coef is 3-D), shape (M,)."""
    return norms_of_squares(squared_norms(coef, kernel_products(K, coef)))


def norms_of_squares(sq: np.ndarray) -> np.ndarray:
    """``||f_m||`` from :func:`squared_norms` (summed over outputs where it is 2-D), shape (M,)."""
    return np.sqrt(sq if sq.ndim == 1 else sq.sum(axis=1))


def decision_values(products: np.ndarray, intercept: float | np.ndarray = 0.0) -> np.ndarray:
    """``f = sum_m K[m].T @ coef[m] + b``: (N,), or (N, n_outputs) for 3-D coef."""
    f = products.sum(axis=0)
    return (f if f.ndim == 1 else f.T) + intercept


def norm_shares(norms: np.ndarray) -> np.ndarray:
    """Each kernel's share of the norm, ``||f_m|| / sum_k ||f_k||`` (uniform when all are 0).

    Reported with every PSD family's model as ``Result.norm_shares``; at an optimum of
    ``l1_mkl`` or ``l1_mkl_sq`` they are the combination weights
    (:func:`combination_weights`, OBJECTIVES.md family 2).
    """
    total = norms.sum()
    if total <= 0:
        return np.full(norms.shape, 1.0 / norms.size)
    return norms / total


def combination_weights(problem: Problem, norms: np.ndarray) -> np.ndarray | None:
    """The combination weights ``d`` of a model given by its norms ``||f_m||``; None where the
    family has none (``mikl``, whose kernels may be indefinite; the multi-label families, whose
    models are the weights themselves).

    ``d`` is what other MKL libraries report: ``f = sum_m d_m K_m alpha`` with one ``alpha``.
    At an optimum of ``w sum_i loss_i + Omega(||f_1||, ..., ||f_M||)`` the optimality
    conditions give ``f_m = (||f_m|| / g_m) K_m alpha`` with ``g_m = dOmega / d||f_m||``, so
    ``d_m`` is proportional to ``||f_m|| / g_m``; each regulariser's ``combination_weights``
    gives it, on its scale (:mod:`kernelfuse.problem.regularizers`).  The zero model gets
    uniform weights.

    A solver whose model is the weights themselves (average, SimpleMKL, mirrorVSKL, the
    multi-label solvers) reports its own ``d`` instead; the two agree at an optimum.
    """
    if not problem.family.requires_psd or problem.family.regularizer is None:
        return None
    norms = np.asarray(norms, dtype=np.float64)
    if not norms.any():
        return np.full(norms.shape, 1.0 / norms.size)
    return problem.regularizer.combination_weights(norms)


def norm_penalised(p: Problem, coef: np.ndarray, f: np.ndarray, sq: np.ndarray, d: np.ndarray | None) -> float:
    """Families 1-4: ``w sum_i loss(y_i, f_i) + Omega(||f_1||, ..., ||f_M||)`` (norms summed over
    outputs), ``w`` the family's loss weight and ``Omega`` its regulariser."""
    if sq.ndim == 2:
        sq = sq.sum(axis=1)
    return p.family.loss_weight(p.params, p.n_samples) * p.loss.total(p.y, f) + p.regularizer.value(np.sqrt(sq))


def coef_penalised(p: Problem, coef: np.ndarray, f: np.ndarray, sq: np.ndarray, d: np.ndarray | None) -> float:
    """Family 5: ``w sum_i loss(y_i, f_i) + Omega(alpha)``, ``alpha = coef.T`` (``mikl``: w = 1,
    ``Omega = (lam/q) ||alpha||_{pq;r}^q``)."""
    return p.family.loss_weight(p.params, p.n_samples) * p.loss.total(p.y, f) + p.regularizer.value(coef.T)


def label_objectives(p: Problem, coef: np.ndarray, f: np.ndarray, sq: np.ndarray, d: np.ndarray | None) -> np.ndarray:
    """P_k = 0.5 sum_m ||f_mk||^2 / d_m + C sum_i hinge(Y_ik, f_k(x_i)) per label.

    The primal of SVM_k(d) (OBJECTIVES.md family 6) at the returned expansion:
    an upper bound on SVM_k(d), equal to it when coef solves the label's SVM.
    A kernel with d_m = 0 must carry f_mk = 0 (else P_k = inf).
    """
    assert d is not None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d[:, None] > 0, sq / d[:, None], np.where(sq > 0, np.inf, 0.0))
    hinge = p.loss.value(p.y, f).sum(axis=0)
    return 0.5 * ratio.sum(axis=0) + p.params["C"] * hinge


def mlmkl_sum(p: Problem, coef: np.ndarray, f: np.ndarray, sq: np.ndarray, d: np.ndarray | None) -> float:
    """Family 6, sum: sum_k P_k(d, coef)."""
    return float(label_objectives(p, coef, f, sq, d).sum())


def mlmkl_max(p: Problem, coef: np.ndarray, f: np.ndarray, sq: np.ndarray, d: np.ndarray | None) -> float:
    """Family 6, worst label: max_k P_k(d, coef)."""
    return float(label_objectives(p, coef, f, sq, d).max())


def check_model(
    problem: Problem, coef: object, intercept: object, kernel_weights: object
) -> tuple[np.ndarray, float, np.ndarray | None]:
    """Model arrays checked against the problem's shapes and constraints."""
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != problem.coef_shape:
        raise ValidationError(
            f"coef must have shape {problem.coef_shape} for this problem, got {coef.shape}"
        )
    if not np.isfinite(coef).all():
        raise ValidationError("coef contains NaN or inf")
    b = float(np.asarray(intercept, dtype=np.float64))
    if not problem.family.has_intercept and b != 0.0:
        raise ValidationError(f"family {problem.family.name} has no intercept, got {b}")
    d = None
    if problem.family.target == "multilabel":
        if kernel_weights is None:
            raise ValidationError(f"family {problem.family.name} needs kernel_weights")
        d = np.asarray(kernel_weights, dtype=np.float64)
        if d.shape != (problem.n_kernels,):
            raise ValidationError(
                f"kernel_weights must have shape ({problem.n_kernels},), got {d.shape}"
            )
        if not (np.isfinite(d).all() and d.min() >= -SIMPLEX_TOL
                and abs(d.sum() - 1.0) <= SIMPLEX_TOL):
            raise ValidationError("kernel_weights must be >= 0 and sum to 1")
        d = np.maximum(d, 0.0)
    return coef, b, d


def evaluate_parts(
    problem: Problem,
    coef: np.ndarray,
    f: np.ndarray,
    sq: np.ndarray,
    kernel_weights: np.ndarray | None = None,
) -> float:
    """P from parts a solver already has, without a pass over the kernels.

    ``f`` the decision values (intercept included) and ``sq`` the squared
    norms ``coef[m] @ K[m] @ coef[m]`` (per output where coef is 3-D), as
    :func:`kernel_products` and :func:`squared_norms` would give.  For the
    per-iteration history of iterative solvers; the reported objective is
    always :func:`evaluate` at the returned model.
    """
    return float(problem.family.objective(problem, coef, f, sq, kernel_weights))


def evaluate(
    problem: Problem,
    coef: object,
    intercept: object = 0.0,
    kernel_weights: object = None,
) -> float:
    """The family objective P of OBJECTIVES.md at the model (coef, intercept, d)."""
    return score(problem, coef, intercept, kernel_weights)[0]


def score(
    problem: Problem,
    coef: object,
    intercept: object = 0.0,
    kernel_weights: object = None,
) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """:func:`evaluate` at the model, the combination weights reported with it
    (``kernel_weights``, the model's own, else :func:`combination_weights`) and its
    :func:`norm_shares` (None for ``mikl``), from one pass over the kernels."""
    coef, b, d = check_model(problem, coef, intercept, kernel_weights)
    products = kernel_products(problem.K, coef)
    sq = squared_norms(coef, products)
    objective = evaluate_parts(problem, coef, decision_values(products, b), sq, d)
    if not problem.family.requires_psd:
        return objective, None, None
    norms = norms_of_squares(sq)
    if kernel_weights is None:
        kernel_weights = combination_weights(problem, norms)
    return objective, kernel_weights, norm_shares(norms)  # type: ignore[return-value]


def model_kernel_weights(problem: Problem, coef: np.ndarray) -> np.ndarray | None:
    """:func:`combination_weights` of a model from its coefficients (None for ``mikl``)."""
    if not problem.family.requires_psd:
        return None
    return combination_weights(problem, rkhs_norms(problem.K, coef))
