"""The ``StoppingRule`` interface: when an outer loop has finished.

After every outer iteration :class:`kernelfuse.assembly.outer_loop.OuterLoop` hands
the rule a :class:`Progress` record of where the run stands now and where it
stood one iteration before; the rule answers whether the run has reached
``tol``.  Rules are registered components (kind ``stopping``) and a solver
names its rule by ``stop=``: the certified relative gap (``gap``), the
relative change of the objective (``objective-change``, the criterion of the
SimpleMKL and VSKL papers' experiments), the relative change of the
optimiser's averaged estimate (``estimate-change``, ML-MKL-SA section 3).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import attrs
import numpy as np


@attrs.frozen(eq=False)
class Progress:
    """Where a run stands after an outer iteration.

    ``objective``: the lowest family objective of any model seen (nan while
    none); ``lower``: the highest certified lower bound (-inf while none);
    ``latest``: the objective of the latest answer (nan for a sampled one);
    ``estimate``: the optimiser's estimate of the outer point.
    """

    objective: float
    lower: float
    latest: float
    estimate: np.ndarray


class StoppingRule(ABC):
    """Decides from two consecutive :class:`Progress` records whether to stop."""

    name: ClassVar[str]
    #: Whether the rule needs a certified lower bound from the oracle.
    needs_lower_bound: ClassVar[bool] = False

    @abstractmethod
    def reached(self, tol: float, now: Progress, before: Progress | None) -> bool:
        """True when the run has reached ``tol`` (``before`` is None at the start)."""
