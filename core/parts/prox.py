"""The ``ProxOperator`` interface: proximal maps (pyproximal's shape).

``prox(x, step) = argmin_z g(z) + ||z - x||^2 / (2 step)``.  An operator
implements ``prox`` and gets the proximal map of the convex conjugate g*
through the Moreau identity

    ``x = prox_{step g}(x) + step * prox_{g*/step}(x / step)``,

or implements ``prox_conjugate`` and gets ``prox`` the same way.  Each
operator documents its closed form; the tests check the
identity, optimality and non-expansiveness for every registered operator.
Projections onto convex sets are proximal maps of indicator functions and
implement ``prox`` ignoring ``step``.
"""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

import numpy as np


class ProxOperator(ABC):
    """Proximal map of a convex function g and, by Moreau, of its conjugate."""

    name: ClassVar[str]

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        """``argmin_z g(z) + ||z - x||^2 / (2 step)``."""
        if type(self).prox_conjugate is ProxOperator.prox_conjugate:
            raise NotImplementedError(f"{type(self).__name__} implements neither prox nor prox_conjugate")
        return x - step * self.prox_conjugate(x / step, 1.0 / step)

    def prox_conjugate(self, x: np.ndarray, step: float) -> np.ndarray:
        """``argmin_z g*(z) + ||z - x||^2 / (2 step)``."""
        if type(self).prox is ProxOperator.prox:
            raise NotImplementedError(f"{type(self).__name__} implements neither prox nor prox_conjugate")
        return x - step * self.prox(x / step, 1.0 / step)
