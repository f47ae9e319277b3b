"""The ``OuterOptimizer`` interface: an iteration rule with explicit state.

Shaped like an optax transformation: ``init(point) -> state`` and
``update(answer, state) -> (point, state)``, the state holding everything
the rule carries (step sizes, penalties, averages), so runs can be warm
started, checkpointed and tested step by step.  Examples: mirror descent,
augmented Lagrangian / proximal point, forward-backward (+ FISTA),
stochastic proximal sub-gradient, stochastic mirror-prox, reduced gradient.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from kernelfuse.oracle import OracleAnswer


class OuterOptimizer(ABC):
    """An iteration rule over the outer variables."""

    name: ClassVar[str]

    @abstractmethod
    def init(self, point: np.ndarray) -> Any:
        """Initial state at ``point``."""

    @abstractmethod
    def update(self, answer: OracleAnswer, state: Any) -> tuple[np.ndarray, Any]:
        """Next point from the oracle's answer at the current one, and the new state."""
