"""The ``MirrorMap`` interface: the Bregman geometry of mirror descent.

A mirror map is a strongly convex function h on a convex set with ``grad_h`` and its inverse
``grad_h_conjugate``, so that a mirror-descent step is
``x+ = grad_h_conjugate(grad_h(x) - step * g)``, and the divergence
``h(x) - h(z) - <grad_h(z), x - z>``: the entropic map on a product of simplices (mirrorVSKL,
ML-MKL-SA), the (2,p) group-norm map (OBSCURE).  A map may be local (a variable metric):
:meth:`MirrorMap.at` returns the map for one step, built from the oracle's answer (the
``local-quadratic`` map makes the step a projected Newton step); a fixed map returns itself.
:meth:`MirrorMap.initial_step` and :attr:`MirrorMap.max_step` give step rules the map's scale.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

import numpy as np

if TYPE_CHECKING:
    from kernelfuse.parts.oracle import OracleAnswer


def simplex_initial_step(gradient: np.ndarray, groups: np.ndarray) -> float:
    """``1 / max_j (max_{k in j} g_k - min_{k in j} g_k)`` (1 / max |g| if no spread, else 1):
    a first step on a product of simplices that moves the weights by factors of order e."""
    n = int(groups.max()) + 1
    hi = np.full(n, -np.inf)
    lo = np.full(n, np.inf)
    np.maximum.at(hi, groups, gradient)
    np.minimum.at(lo, groups, gradient)
    spread = float(np.max(hi - lo))
    if spread > 0:
        return 1.0 / spread
    top = float(np.max(np.abs(gradient)))
    return 1.0 / top if top > 0 else 1.0


class MirrorMap(ABC):
    """h, grad h, grad h* and the Bregman divergence of h."""

    name: ClassVar[str]
    #: The largest step a step rule should try (the map's own scale).
    max_step: ClassVar[float] = math.inf
    #: Whether :meth:`at` builds the map from the oracle's answer (a variable metric).
    local: ClassVar[bool] = False

    def at(self, point: np.ndarray, answer: OracleAnswer) -> MirrorMap:
        """The map for a step from ``point``, where the oracle answered ``answer`` (a fixed map: itself)."""
        return self

    def initial_step(self, gradient: np.ndarray, groups: np.ndarray) -> float:
        """A first step for a rule that adapts it (1 unless the map knows its scale)."""
        return 1.0

    @abstractmethod
    def grad_h(self, x: np.ndarray) -> np.ndarray:
        """Primal point to dual point."""

    @abstractmethod
    def grad_h_conjugate(self, theta: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Dual point to primal point: the inverse of :meth:`grad_h` on the set.

        ``groups`` (one int per coordinate) describes the set's product
        structure (one simplex, or one norm block, per group).
        """

    @abstractmethod
    def divergence(self, x: np.ndarray, z: np.ndarray) -> float:
        """Bregman divergence D_h(x, z) >= 0."""
