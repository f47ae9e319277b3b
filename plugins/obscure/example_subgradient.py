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

from kernelfuse.loss import Loss
from kernelfuse.plugins.obscure.group_norm_map import lp_norm


@attrs.frozen
class ExampleSubgradient:
    """``(loss_i, g)``: the loss and its sub-gradient in ``f_i`` at one example."""

    name: ClassVar[str] = "example-subgradient"
    requires: ClassVar[dict[str, tuple[str, ...]]] = {"loss": ("derivative",)}

    def __call__(self, loss: Loss, y: np.ndarray, i: int, f_i: np.ndarray) -> tuple[float, np.ndarray]:
        target = y[i:i + 1]
        f = f_i if f_i.size == 1 else f_i[None, :]
        value = float(loss.value(target, f)[0])
        g = np.asarray(loss.derivative(target, f), dtype=float).reshape(-1)
        return value, g

    @staticmethod
    def dual_norm(g: np.ndarray, diagonal_i: np.ndarray, q: float) -> float:
        """``||g phi(x_i)||_{2,q} = ||g||_2 (sum_m K_m(x_i, x_i)^(q/2))^(1/q)``."""
        return float(np.linalg.norm(g)) * lp_norm(np.sqrt(np.maximum(diagonal_i, 0.0)), q)
