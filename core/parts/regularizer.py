"""The ``Regularizer`` interface: a mixed norm over per-kernel norms or coefficients.

A regulariser is Omega(v) for a vector ``v`` of per-kernel RKHS norms
``||f_m||`` (block l1, elastic net, the VSKL norm ``l1`` inside groups and
``l_2q`` across, the (2,p) group norm), or of a coefficient matrix (the
``l_{pq;r}`` norms of MIKL), with an optional group of each kernel.

Optional capabilities a solver may require (see :mod:`kernelfuse.assembly.recipe`):

``dual_norm(u, groups)``
    The dual norm Omega_*(u), for duality gaps.
``prox(v, step, groups)``
    ``argmin_x Omega(x) + ||x - v||^2 / (2 step)``; usually delegated to a
    :class:`~kernelfuse.parts.prox.ProxOperator`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np


class Regularizer(ABC):
    """Omega(v) over per-kernel norms or coefficients, with optional groups."""

    name: ClassVar[str]

    @abstractmethod
    def value(self, v: np.ndarray, groups: np.ndarray | None = None) -> float:
        """Omega(v)."""
