"""The ``MirrorMap`` interface: the Bregman geometry of mirror descent.

A mirror map is a strongly convex function h on a convex set X with
``grad_h: X -> dual space`` and its inverse ``grad_h_conjugate`` (the
gradient of the convex conjugate h*), so that a mirror-descent step is
``x+ = grad_h_conjugate(grad_h(x) - step * g)`` followed, where needed, by
a Bregman projection.  ``divergence(x, z) = h(x) - h(z) - <grad_h(z), x - z>``.
Examples: the entropic map on a product of simplices (mirrorVSKL,
ML-MKL-SA), the (2,p) group-norm map (OBSCURE).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np


class MirrorMap(ABC):
    """h, grad h, grad h* and the Bregman divergence of h."""

    name: ClassVar[str]

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
