"""The mixed-norm penalties of MIKL and their proximal maps (Kowalski, Szafranski, Ralaivola, Proposition 3).

For ``alpha`` of shape (N, M) (``alpha = coef.T``, OBJECTIVES.md family 5),
groups along ``r``: ``r = 1`` the rows (one group per sample), ``r = 2``
the columns (one group per kernel), and

    ``g(alpha) = (lam / q) ||alpha||_{pq;r}^q``,  ``||alpha||_{pq;r} = (sum_g ||alpha_g||_p^q)^(1/q)``,  p, q in {1, 2}.

``prox_{s g}(v)`` in closed form, group by group:

* ``l1`` (p = q = 1): soft threshold ``sign(v) max(|v| - s lam, 0)`` (r plays no role);
* ``l2`` squared (p = q = 2): ``v / (1 + s lam)`` (r plays no role);
* ``l21`` (p = 2, q = 1): group soft threshold ``max(0, 1 - s lam / ||v_g||_2) v_g``;
* ``l12`` (p = 1, q = 2, the elitist lasso): ``sign(v) max(|v| - tau_g, 0)`` with
  ``tau_g = s lam S_k / (1 + s lam k)``, ``S_k`` the sum of the ``k`` largest ``|v_i|``
  of the group and ``k`` the largest count with ``|v|_(k) > tau`` (the sorting rule).

The conjugate (for the duality gap): ``p* = inf`` for ``p = 1``, 2 for ``p = 2``;
``q = 1``: the indicator of ``max_g ||v_g||_{p*} <= lam``; ``q = 2``:
``sum_g ||v_g||_{p*}^2 / (2 lam)``.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.parts.prox import ProxOperator
from kernelfuse.problem import objectives
from kernelfuse.validation import one_or_two, positive


@attrs.frozen
class MixedNormProx(ProxOperator):
    """Prox of ``(lam/q) ||alpha||_{pq;r}^q`` for ``alpha`` (N, M); p, q, r in {1, 2}."""

    name = "mixed-norm"
    lam: float = positive.field(1.0)
    p: float = one_or_two.field(2.0)
    q: float = one_or_two.field(1.0)
    r: float = one_or_two.field(2.0)

    def _groups(self, x: np.ndarray) -> np.ndarray:
        """``x`` with one group per row (a view)."""
        return x if self.r == 1.0 else x.T

    def dual_group_norms(self, v: np.ndarray) -> np.ndarray:
        """``||v_g||_{p*}`` per group: l-inf for p = 1, l2 for p = 2."""
        grouped = self._groups(v)
        if self.p == 2.0:
            return np.linalg.norm(grouped, axis=1)
        return np.abs(grouped).max(axis=1, initial=0.0)

    def value(self, x: np.ndarray) -> float:
        """``g(x) = (lam / q) sum_g ||x_g||_p^q`` (the norm of
        :func:`kernelfuse.problem.objectives.mixed_norm_power`)."""
        return objectives.mixed_norm_power(x, self.p, self.q, self.r, self.lam / self.q)

    def conjugate(self, v: np.ndarray) -> float:
        """``g*(v)``: ``0``/``inf`` for q = 1, ``sum_g ||v_g||_{p*}^2 / (2 lam)`` for q = 2."""
        dual = self.dual_group_norms(v)
        if self.q == 1.0:
            return 0.0 if dual.max(initial=0.0) <= self.lam * (1 + 1e-12) else np.inf
        return float(np.sum(dual**2) / (2.0 * self.lam))

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        t = step * self.lam
        if self.p == 1.0 and self.q == 1.0:
            return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)
        if self.p == 2.0 and self.q == 2.0:
            return x / (1.0 + t)
        grouped = self._groups(x)
        if self.p == 2.0:  # l21: group soft threshold
            norms = np.linalg.norm(grouped, axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(norms > t, 1.0 - t / norms, 0.0)
            out = factor * grouped
        else:  # l12: the elitist lasso, by the sorting rule
            magnitude = np.abs(grouped)
            ordered = -np.sort(-magnitude, axis=1)
            k = np.arange(1, ordered.shape[1] + 1)
            taus = t * np.cumsum(ordered, axis=1) / (1.0 + t * k)
            count = np.sum(ordered > taus, axis=1)  # the rule holds for k = 1..count
            tau = np.where(count > 0, taus[np.arange(len(count)), np.maximum(count - 1, 0)], 0.0)
            out = np.sign(grouped) * np.maximum(magnitude - tau[:, None], 0.0)
        return out if self.r == 1.0 else out.T
