"""The (2,p) group-norm mirror map of OBSCURE (Orabona, Jie and Caputo, section 3; Lemma 1).

``h(w) = (q / 2) ||w||_{2,p}^2`` with ``q = p / (p - 1)``, so ``h*(theta) = ||theta||_{2,q}^2 / (2 q)``
and ``grad h*(theta)_m = omega_m theta_m``, ``omega_m = (||theta_m|| / ||theta||_{2,q})^(q-2) / q``;
the ``pnorm_mkl`` regulariser is ``(lam / q) h``.  The Bregman projection onto
``||w||_{2,p} <= R`` scales ``theta`` to ``||theta||_{2,q} <= q R`` (Lemma 1).  Kernelised
(section 3.1) the map is the per-kernel factors ``omega`` (:meth:`GroupNormMirrorMap.weights`).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.parts.mirror_map import MirrorMap
from kernelfuse.problem.regularizers import BlockLp
from kernelfuse.validation import exponent_in_one_two


@attrs.frozen
class GroupNormMirrorMap(MirrorMap):
    """``h(w) = (q/2) ||w||_{2,p}^2`` over kernel blocks: grad h* scales each block by ``omega_m``."""

    name = "group-norm"
    p: float = exponent_in_one_two.field(1.5)

    #: ``h`` as a function of the block norms: ``(q/2) ||.||_p^2``, dual norm ``||.||_q``.
    regularizer: BlockLp = attrs.field(init=False, repr=False, eq=False)

    @regularizer.default
    def _regularizer(self) -> BlockLp:
        return BlockLp(p=self.p, weight=self.q)

    @property
    def q(self) -> float:
        """The dual exponent ``p / (p - 1)`` (``inf`` never: ``p > 1``)."""
        return self.p / (self.p - 1.0)

    def weights(self, block_norms: np.ndarray) -> np.ndarray:
        """``omega_m = (||theta_m|| / ||theta||_{2,q})^(q-2) / q`` from the block norms ``||theta_m||``."""
        total = self.dual_norm(block_norms)
        if total == 0.0:
            return np.zeros_like(block_norms, dtype=float)
        return (block_norms / total) ** (self.q - 2.0) / self.q

    def dual_norm(self, block_norms: np.ndarray) -> float:
        """``||theta||_{2,q}`` from the block norms."""
        return self.regularizer.dual_norm(block_norms)

    def projection_factor(self, dual_norm: float, radius: float) -> float:
        """The scaling of ``theta`` (of norm ``||theta||_{2,q} = dual_norm``) that projects
        ``grad h*(theta)`` onto ``||w||_{2,p} <= radius`` (Lemma 1)."""
        return 1.0 if dual_norm <= self.q * radius else self.q * radius / dual_norm

    def h(self, x: np.ndarray) -> float:
        """``(q/2) ||x||_{2,p}^2`` for blocks in the rows of ``x``."""
        return self.regularizer.value(np.linalg.norm(x, axis=1))

    def grad_h(self, x: np.ndarray) -> np.ndarray:
        """``q (||x_m|| / ||x||_{2,p})^(p-2) x_m`` (blocks in rows; 0 where ``x_m = 0``)."""
        norms = np.linalg.norm(x, axis=1)
        total = self.regularizer.norm(norms)
        if total == 0.0:
            return np.zeros_like(x, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(norms > 0, (norms / total) ** (self.p - 2.0), 0.0)
        return self.q * factor[:, None] * x

    def grad_h_conjugate(self, theta: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
        """``omega_m theta_m`` (blocks in rows; ``groups`` is not used: every row is a block)."""
        return self.weights(np.linalg.norm(theta, axis=1))[:, None] * theta

    def divergence(self, x: np.ndarray, z: np.ndarray) -> float:
        return float(self.h(x) - self.h(z) - np.sum(self.grad_h(z) * (x - z)))
