"""The mixed norms of OBJECTIVES.md as :class:`~kernelfuse.parts.regularizer.Regularizer` objects, each written once.

Every penalty is ``Omega(x) = (weight / power) ||x||^power`` (power 1 or 2) of
one mixed norm, plus the elastic net of ``l1_mkl``:

* :class:`BlockL1`, ``||v||_1 = sum_m v_m`` of the kernel norms (``l1_mkl``:
  weight C, power 1, elastic C2; ``l1_mkl_sq``: weight 1, power 2);
* :class:`VSKLNorm`, ``||(sum_{k in j} v_k)_j||_{2q}`` (``vskl``: weight 1, power 2);
* :class:`BlockLp`, ``||v||_p`` (``pnorm_mkl``: weight lam, power 2);
* :class:`MixedLpq`, ``||alpha||_{pq;r}`` over ``alpha = coef.T`` (``mikl``: weight lam, power q).

From the dual norm follows the conjugate: ``Omega* = indicator(||u||_* <= weight)``
for power 1, ``||u||_*^2 / (2 weight)`` for power 2.  Norms are computed on
inputs scaled to largest entry 1 and values as ``||x / max |x|||^power`` with the
factor multiplied in one ``max |x|`` at a time, so both are finite whenever the
number is (see :mod:`kernelfuse.problem.scaling`).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import ArrayLike

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.array_backend import array_namespace, clip
from kernelfuse.parts.regularizer import Regularizer, SeparablePenalty
from kernelfuse.problem.conic import half_square, norm_of, sum_squares_cone
from kernelfuse.validation import Domain, nonnegative, one_or_two, positive

#: Norm exponents: at least 1 (inf allowed where a family allows it).
at_least_one = Domain(">= 1 (inf allowed)", lambda v: v >= 1)


def lp_norm(values: np.ndarray, exponent: float) -> float:
    """``(sum |v|^exponent)^(1/exponent)`` (``max |v|`` for inf, any exponent > 0), scaled by the
    largest entry so nothing overflows."""
    magnitude = np.abs(values)
    top = float(np.max(magnitude, initial=0.0))
    if top == 0.0 or not math.isfinite(top) or math.isinf(exponent):  # inf and nan pass through
        return top
    return top * float(np.sum((magnitude / top) ** exponent)) ** (1.0 / exponent)


def dual_exponent(p: float) -> float:
    """``p* = p / (p - 1)``: inf for 1, 1 for inf."""
    if p == 1:
        return math.inf
    return 1.0 if math.isinf(p) else p / (p - 1.0)


def _largest_first_threshold(rows: np.ndarray, t: float) -> np.ndarray:
    """Prox of ``(t/2) (sum_i |x_i|)^2`` on each row: ``sign(x) max(|x| - tau, 0)`` with
    ``tau = t S_k / (1 + t k)``, ``S_k`` the sum of the ``k`` largest ``|x_i|`` and ``k``
    the largest count with ``|x|_(k) > tau`` (the elitist lasso's sorting rule)."""
    magnitude = np.abs(rows)
    ordered = -np.sort(-magnitude, axis=1)
    k = np.arange(1, ordered.shape[1] + 1)
    taus = t * np.cumsum(ordered, axis=1) / (1.0 + t * k)
    count = np.sum(ordered > taus, axis=1)  # the rule holds for k = 1..count
    tau = np.where(count > 0, taus[np.arange(len(count)), np.maximum(count - 1, 0)], 0.0)
    return np.sign(rows) * np.maximum(magnitude - tau[:, None], 0.0)


@attrs.frozen
class ProxJacobian:
    """``diag(scale) - sum_g weights[g] v_g v_g'`` for arrays shaped like the prox's argument
    ``x``: ``v_g`` is ``vectors`` on group ``g``'s entries, and the group of entry ``x[i, j]`` is
    ``(i, j)[group_axis]`` (:meth:`MixedLpq.prox_jacobian`)."""

    scale: np.ndarray
    vectors: np.ndarray
    weights: np.ndarray
    group_axis: int


class NormPower(Regularizer):
    """``Omega(x) = (weight / power) ||x||^power``, power 1 or 2, from the norm, its dual and the
    norm's cvxpy form (``norm_expression``)."""

    weight: float
    power: float

    @abstractmethod
    def norm_expression(self, x: Any) -> Any:
        """``||x||`` of a cvxpy expression."""

    def value(self, x: np.ndarray) -> float:
        top = float(np.max(np.abs(x), initial=0.0))
        if not math.isfinite(top):  # an infinite norm is an infinite penalty (nan passes through)
            return top
        if top == 0.0:
            return 0.0
        value = self.weight / self.power * self.norm(x / top) ** self.power
        for _ in range(round(self.power)):  # never top ** power: overflows where the product does not
            value *= top
        return value

    def conjugate(self, u: np.ndarray) -> float:
        dual = self.dual_norm(u)
        if self.power == 1:
            return 0.0 if dual <= self.weight * (1 + 1e-12) else math.inf
        return dual * dual / (2.0 * self.weight)

    def expression(self, x: Any) -> tuple[Any, list[Any]]:
        norm = self.norm_expression(x)
        if self.power == 1:
            return self.weight * norm, []
        square, constraints = half_square(norm)
        return self.weight * square, constraints


@attrs.frozen
class BlockL1(NormPower, SeparablePenalty):
    """``(weight / power) (sum_m |v_m|)^power + (elastic / 2) sum_m v_m^2`` of the kernel norms ``v``
    (``l1_mkl``: weight C, elastic C2; ``l1_mkl_sq``: power 2)."""

    name: ClassVar[str] = "block-l1"
    array_api: ClassVar[bool] = True
    weight: float = positive.field(1.0)
    power: float = one_or_two.field(1.0)
    elastic: float = nonnegative.field(0.0)

    def __attrs_post_init__(self) -> None:
        if self.elastic > 0 and self.power != 1:
            raise ValidationError(f"elastic > 0 needs power 1, got power {self.power:g}: "
                                  "the elastic net is a term of l1_mkl only")

    def norm(self, x: np.ndarray) -> float:
        return float(np.sum(np.abs(x)))

    def dual_norm(self, u: np.ndarray) -> float:
        return float(np.max(np.abs(u), initial=0.0))

    def norm_expression(self, x: Any) -> Any:
        import cvxpy as cp

        return cp.sum(x)  # x the nonnegative norm epigraphs

    def value(self, x: np.ndarray) -> float:
        if self.elastic == 0.0:
            return super().value(x)
        return self.weight * float(np.sum(np.abs(x))) + 0.5 * self.elastic * float(np.sum(x * x))

    def conjugate(self, u: np.ndarray) -> float:
        """``sum_m (|u_m| - C)_+^2 / (2 C2)`` with an elastic term, else by the dual norm."""
        if self.elastic == 0.0:
            return super().conjugate(u)
        return float(np.sum(np.maximum(np.abs(u) - self.weight, 0.0) ** 2)) / (2.0 * self.elastic)

    def expression(self, x: Any) -> tuple[Any, list[Any]]:
        penalty, constraints = super().expression(x)
        if self.elastic == 0.0:
            return penalty, constraints
        square, cone = sum_squares_cone(x)
        return penalty + 0.5 * self.elastic * square, [*constraints, *cone]

    def combination_weights(self, norms: np.ndarray) -> np.ndarray:
        """``g_m = C + C2 ||f_m||`` (power 1), the same for every kernel (power 2): ``d`` on the simplex
        (the norm shares where there is no elastic term)."""
        d = norms / (self.weight + self.elastic * norms)
        return d / d.sum()

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        """Power 1: ``sign(x) max(|x| - s C, 0) / (1 + s C2)``; power 2: the largest-first threshold."""
        t = step * self.weight
        if self.power == 2:
            return _largest_first_threshold(x.reshape(1, -1), t).reshape(x.shape)
        xp = array_namespace(x)
        return xp.sign(x) * clip(xp.abs(x) - t, 0.0) / (1.0 + step * self.elastic)

    def radial_prox(self, norms: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        """Power 1, on block norms ``r >= 0``: the prox ``max(0, r - s C) / (1 + s C2)`` and its
        derivative in ``r``, ``1{r > s C} / (1 + s C2)``: block soft-thresholding in each block's
        own metric (``x_m -> prox(||x_m||) x_m / ||x_m||``; SpicyMKL, eq. 6)."""
        if self.power != 1:
            raise ValueError("the radial prox is separable for power 1 only")
        xp = array_namespace(norms)
        shrunk = clip(norms - step * self.weight, 0.0)  # the prox's sign(r) = 1 where it is not 0
        if self.elastic != 0.0:
            shrunk = shrunk / (1.0 + step * self.elastic)
        return shrunk, xp.astype(shrunk > 0, xp.float64) / (1.0 + step * self.elastic)

    def kernel_values(self, norms: np.ndarray) -> np.ndarray:
        """``h(v) = C v + (C2 / 2) v^2`` (power 1)."""
        return self.weight * norms + 0.5 * self.elastic * norms * norms

    @property
    def separable(self) -> bool:
        """Power 1 only: ``h(v) = C v + (C2 / 2) v^2``."""
        return self.power == 1

    def slope(self, norms: np.ndarray) -> np.ndarray:
        """``h'(v) = C + C2 v``."""
        return self.weight + self.elastic * norms

    @property
    def dual_radius(self) -> float:
        """``C`` (``h*`` the indicator of ``[0, C]``), ``inf`` with an elastic term."""
        return self.weight if self.elastic == 0.0 else math.inf


def _group_indices(groups: ArrayLike) -> np.ndarray:
    return np.asarray(groups, dtype=np.intp)


@attrs.frozen
class VSKLNorm(NormPower):
    """``(weight / power) ||(sum_{k in j} |v_k|)_j||_{2q}^power`` of the kernel norms ``v`` (``vskl``);
    ``q = inf`` is the largest group sum.  Dual: ``||(max_{k in j} |u_k|)_j||_{(2q)*}``."""

    name: ClassVar[str] = "vskl"
    groups: np.ndarray = attrs.field(eq=False, converter=_group_indices)
    q: float = at_least_one.field(1.0)
    weight: float = positive.field(1.0)
    power: float = one_or_two.field(2.0)

    @property
    def n_groups(self) -> int:
        return int(self.groups.max()) + 1 if self.groups.size else 0

    def norm(self, x: np.ndarray) -> float:
        return lp_norm(np.bincount(self.groups, weights=np.abs(x), minlength=self.n_groups), 2 * self.q)

    def dual_norm(self, u: np.ndarray) -> float:
        top = np.zeros(self.n_groups)
        np.maximum.at(top, self.groups, np.abs(u))
        return lp_norm(top, dual_exponent(2 * self.q))

    def combination_weights(self, norms: np.ndarray) -> np.ndarray:
        """``g_jk = s_j^(2q - 1)``, ``s_j = sum_{k in j} ||f_jk||`` (``q = inf``: ``s_j``, as for
        ``q = 1``: the norms do not fix the weights across groups there); ``d`` on the simplex."""
        sums = np.bincount(self.groups, weights=norms, minlength=self.n_groups)[self.groups]
        exponent = 1.0 if math.isinf(self.q) else 2.0 * self.q - 1.0
        used = norms > 0  # in logarithms: s_j^(2q - 1) overflows for large q
        log_d = np.log(norms[used]) - exponent * np.log(sums[used])
        d = np.zeros(norms.size)
        d[used] = np.exp(log_d - log_d.max())
        return d / d.sum()

    def norm_expression(self, x: Any) -> Any:
        import cvxpy as cp

        if self.n_groups <= 1:
            return cp.sum(x)  # x the nonnegative norm epigraphs
        membership = np.zeros((self.n_groups, self.groups.size))
        membership[self.groups, np.arange(self.groups.size)] = 1.0
        return norm_of(membership @ x, 2 * self.q)


@attrs.frozen
class BlockLp(NormPower):
    """``(weight / power) (sum_m |v_m|^p)^(power / p)`` of the kernel norms ``v`` (``pnorm_mkl``,
    the (2,p) group norm); dual ``||u||_{p*}``, ``p* = p / (p - 1)``."""

    name: ClassVar[str] = "block-lp"
    p: float = at_least_one.field(2.0)
    weight: float = positive.field(1.0)
    power: float = one_or_two.field(2.0)

    def norm(self, x: np.ndarray) -> float:
        return lp_norm(x, self.p)

    def dual_norm(self, u: np.ndarray) -> float:
        return lp_norm(u, dual_exponent(self.p))

    def norm_expression(self, x: Any) -> Any:
        return norm_of(x, self.p)

    def norm_derivatives(self, norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradient and Hessian of ``Omega(n) = (w / P) ||n||_p^P`` in the kernel norms ``n > 0``:
        ``w ||n||^(P-p) n^(p-1)`` and ``w [(P - p) ||n||^(P-2p) n^(p-1) (n^(p-1))' + (p - 1)
        ||n||^(P-p) diag(n^(p-2))]`` (a Newton step on the smooth ``pnorm_mkl`` objective,
        :mod:`kernelfuse.plugins.distributed_newton.smoothed_hinge_newton`)."""
        total = lp_norm(norms, self.p)
        rising = norms ** (self.p - 1.0)
        gradient = self.weight * total ** (self.power - self.p) * rising
        hessian = self.weight * (self.power - self.p) * total ** (self.power - 2.0 * self.p) * np.outer(rising, rising)
        hessian[np.diag_indices_from(hessian)] += (self.weight * (self.p - 1.0) * total ** (self.power - self.p)
                                                   * norms ** (self.p - 2.0))
        return gradient, hessian

    def combination_weights(self, norms: np.ndarray) -> np.ndarray:
        """``g_m = ||f_m||^(p - 1)``, so ``d_m = ||f_m||^(2 - p)`` scaled to ``||d||_(p/(2-p)) = 1``:
        the weights of Kloft et al. (JMLR 2011, eq. 14), whose exponent on ``d`` is
        ``p / (2 - p)`` (inf for ``p = 2``: every weight 1)."""
        d = norms ** (2.0 - self.p)
        return d / lp_norm(d, math.inf if self.p >= 2.0 else self.p / (2.0 - self.p))


@attrs.frozen
class MixedLpq(NormPower):
    """``(lam / q) ||alpha||_{pq;r}^q``, ``||alpha||_{pq;r} = (sum_g ||alpha_g||_p^q)^(1/q)`` over
    ``alpha`` (N, M), groups the rows (r = 1, samples) or columns (r = 2, kernels); p, q, r
    in {1, 2} (``mikl``; Kowalski, Szafranski and Ralaivola, Proposition 3).  Dual:
    ``||u||_{p*q*;r}``."""

    name: ClassVar[str] = "mixed-lpq"
    weight: float = positive.field(1.0)
    p: float = one_or_two.field(2.0)
    q: float = one_or_two.field(1.0)
    r: float = one_or_two.field(2.0)

    @property
    def power(self) -> float:  # type: ignore[override]
        return self.q

    def _groups(self, x: np.ndarray) -> np.ndarray:
        """``x`` with one group per row (a view)."""
        return x if self.r == 1 else x.T

    def _mixed(self, x: np.ndarray, inner: float, outer: float) -> float:
        """``(sum_g ||x_g||_inner^outer)^(1/outer)`` on ``x / max |x|``, times ``max |x|``."""
        grouped = np.abs(self._groups(x))
        top = float(np.max(grouped, initial=0.0))
        if top == 0.0 or not math.isfinite(top):
            return top
        grouped = grouped / top
        norms = grouped.sum(axis=1) if inner == 1 else (
            grouped.max(axis=1) if math.isinf(inner) else np.sqrt(np.sum(grouped**2, axis=1)))
        return top * lp_norm(norms, outer)

    def norm(self, x: np.ndarray) -> float:
        return self._mixed(x, self.p, self.q)

    def dual_norm(self, u: np.ndarray) -> float:
        return self._mixed(u, dual_exponent(self.p), dual_exponent(self.q))

    def norm_expression(self, x: Any) -> Any:
        return norm_of(norm_of(x, self.p, axis=1 if self.r == 1 else 0), self.q)

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        """Group by group: soft threshold (l1), ``x / (1 + s lam)`` (l2 squared), group soft
        threshold (p = 2, q = 1), the largest-first threshold (p = 1, q = 2, the elitist lasso)."""
        t = step * self.weight
        if self.p == 1 and self.q == 1:
            return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)
        if self.p == 2 and self.q == 2:
            return x / (1.0 + t)
        grouped = self._groups(x)
        if self.p == 2:
            norms = np.linalg.norm(grouped, axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                out = np.where(norms > t, 1.0 - t / norms, 0.0) * grouped
        else:
            out = _largest_first_threshold(grouped, t)
        return out if self.r == 1 else out.T

    def prox_jacobian(self, x: np.ndarray, step: float) -> ProxJacobian:
        """An element of the prox's generalised (Clarke) Jacobian at ``x``, per group ``g``
        ``diag(scale_g) - weight_g v_g v_g'``: ``1{|x| > t}`` (l1); ``I / (1 + t)`` (l2 squared);
        ``(1 - t/n) I + (t/n) u u'``, ``u = x_g / n``, where ``n = ||x_g|| > t``, else 0 (l21);
        ``diag(m) - t/(1 + t k) s s'``, ``m`` the ``k`` entries kept, ``s = sign(x) m`` (the
        elitist lasso).  ``t = step lam``; groups as in :meth:`prox`."""
        t = step * self.weight
        grouped = self._groups(x)
        vectors = np.zeros_like(grouped)
        weights = np.zeros(grouped.shape[0])
        if self.p == 1 and self.q == 1:
            scale = (np.abs(grouped) > t).astype(float)
        elif self.p == 2 and self.q == 2:
            scale = np.full(grouped.shape, 1.0 / (1.0 + t))
        elif self.p == 2:
            norms = np.linalg.norm(grouped, axis=1)
            kept = norms > t
            scale = np.where(kept, 1.0 - t / np.where(kept, norms, 1.0), 0.0)[:, None] * np.ones_like(grouped)
            vectors[kept] = grouped[kept] / norms[kept, None]
            weights[kept] = -t / norms[kept]
        else:
            kept = _largest_first_threshold(grouped, t) != 0
            scale = kept.astype(float)
            vectors = np.sign(grouped) * kept
            weights = t / (1.0 + t * kept.sum(axis=1))
        if self.r == 2:
            scale, vectors = scale.T, vectors.T
        return ProxJacobian(scale, vectors, weights, group_axis=0 if self.r == 1 else 1)
