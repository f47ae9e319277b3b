"""OBSCURE's per-example sub-gradient oracle (section 3): the loss's sub-gradient at one example.

At example ``i`` with decision values ``f_i`` (one per output), a
sub-gradient of ``loss(y_i, f_i)`` in ``w`` is ``g_c phi_m(x_i)`` in block
``(m, c)``, ``g = d loss / d f_i`` from the loss's ``derivative``: for the
hinge ``-y_i`` on a margin error, for the Crammer-Singer loss ``+1`` at the
most violating class and ``-1`` at ``y_i``.  Its dual norm is
``||g||_2 (sum_m K_m(x_i, x_i)^(q/2))^(1/q)``, which the adaptive steps of
the stochastic stage use.  Any loss with a ``derivative`` works.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.parts.loss import Loss


@attrs.frozen
class ExampleSubgradient:
    """``g = d loss(y_i, f_i) / d f_i``: the loss's sub-gradient at one example (0 where the loss is flat)."""

    name: ClassVar[str] = "example-subgradient"
    requires: ClassVar[dict[str, tuple[str, ...]]] = {"loss": ("derivative",)}

    def __call__(self, loss: Loss, y: np.ndarray, i: int, f_i: np.ndarray) -> np.ndarray:
        f = f_i if f_i.size == 1 else f_i[None, :]
        return np.asarray(loss.derivative(y[i:i + 1], f), dtype=float).reshape(-1)

    @staticmethod
    def nonzero(loss: Loss, y: np.ndarray, indices: np.ndarray, f: np.ndarray) -> np.ndarray:
        """Which examples of ``indices`` have a non-zero sub-gradient at decision values ``f`` (B, C)."""
        g = loss.derivative(y[indices], f[:, 0] if f.shape[1] == 1 else f)
        return np.any(np.asarray(g).reshape(len(indices), -1) != 0.0, axis=1)

    @staticmethod
    def kernel_norms(diagonal: np.ndarray, q: float) -> np.ndarray:
        """``||phi(x_i)||_{2,q} = (sum_m K_m(x_i, x_i)^(q/2))^(1/q)`` per example (``diagonal`` (N, M))."""
        return np.sum(np.maximum(diagonal, 0.0) ** (0.5 * q), axis=1) ** (1.0 / q)

    @staticmethod
    def dual_norm(g: np.ndarray, kernel_norm: float) -> float:
        """``||g phi(x_i)||_{2,q} = ||g||_2 ||phi(x_i)||_{2,q}``."""
        return float(np.linalg.norm(g)) * kernel_norm
