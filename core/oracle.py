"""The ``Oracle`` interface: the inner problem at the current outer point.

An outer optimiser moves some variables (kernel weights, dual multipliers,
primal coefficients); at each point it asks an oracle, which solves or
samples the inner problem there and answers with a value, a (sub)gradient
with respect to the outer variables, and, where it has one, a certified
lower bound.  Oracle state (warm starts, caches) is explicit, as in optax:
``init`` creates it and ``query`` returns the new state.

Examples: an SVM on the combined kernel (mirrorVSKL, SimpleMKL), Newton on
the smoothed dual (SpicyMKL), one sampled example (OBSCURE), one sampled
label (ML-MKL-SA).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.problem import Problem


@attrs.frozen
class OracleAnswer:
    """What an oracle returns at a point."""

    value: float
    gradient: np.ndarray
    lower_bound: float = math.nan
    solution: Any = None
    #: Cost in passes over the kernel stack (for benchmarks).
    kernel_passes: float = 0.0


class Oracle(ABC):
    """Solves or samples the inner problem at an outer point."""

    name: ClassVar[str]

    @abstractmethod
    def init(self, problem: Problem) -> Any:
        """Initial oracle state for ``problem``."""

    @abstractmethod
    def query(self, point: np.ndarray, state: Any) -> tuple[OracleAnswer, Any]:
        """Answer at ``point``, and the updated state."""
