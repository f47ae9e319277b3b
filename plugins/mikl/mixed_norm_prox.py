"""MIKL's proximal part: the prox of its mixed-norm penalty (Kowalski, Szafranski, Ralaivola, Proposition 3).

For ``alpha`` of shape (N, M) (``alpha = coef.T``, OBJECTIVES.md family 5),
``g(alpha) = (lam / q) ||alpha||_{pq;r}^q``, p, q, r in {1, 2}: the
:class:`~kernelfuse.problem.regularizers.MixedLpq` regulariser of the problem,
whose value, conjugate (for the duality gap) and closed-form prox this
operator exposes as a registered ``prox`` part.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.parts.prox import ProxOperator
from kernelfuse.problem.regularizers import MixedLpq
from kernelfuse.validation import one_or_two, positive


@attrs.frozen
class MixedNormProx(ProxOperator):
    """Prox of ``(lam/q) ||alpha||_{pq;r}^q`` for ``alpha`` (N, M); p, q, r in {1, 2}."""

    name = "mixed-norm"
    lam: float = positive.field(1.0)
    p: float = one_or_two.field(2.0)
    q: float = one_or_two.field(1.0)
    r: float = one_or_two.field(2.0)

    #: ``g`` as a :class:`~kernelfuse.parts.regularizer.Regularizer`.
    regularizer: MixedLpq = attrs.field(init=False, repr=False, eq=False)

    @regularizer.default
    def _regularizer(self) -> MixedLpq:
        return MixedLpq(weight=self.lam, p=self.p, q=self.q, r=self.r)

    def value(self, x: np.ndarray) -> float:
        """``g(x) = (lam / q) ||x||_{pq;r}^q``."""
        return self.regularizer.value(x)

    def conjugate(self, v: np.ndarray) -> float:
        """``g*(v)``: ``0``/``inf`` for q = 1, ``||v||_{p*q*;r}^2 / (2 lam)`` for q = 2."""
        return self.regularizer.conjugate(v)

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        return self.regularizer.prox(x, step)
