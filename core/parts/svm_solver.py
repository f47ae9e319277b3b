"""The ``SVMSolver`` interface: the SVM dual on one (combined) kernel.

Every kernel-weight method calls an SVM on ``K(d) = sum_m d_m K_m``.  An
SVM solver solves the dual

    ``max_a  1'a - 0.5 (a * y)' K (a * y)``  s.t.  ``0 <= a <= C``
    (and ``y'a = 0`` with an intercept),

whose optimum equals the primal ``min_f 0.5 ||f||_K^2 + C sum_i hinge(y_i,
f(x_i) + b)``, and returns ``a`` and the intercept ``b``.  Solvers that can
start from a previous solution take ``warm_start`` (MKL calls the SVM on a
slowly changing kernel hundreds of times).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import attrs
import numpy as np


@attrs.frozen(eq=False)
class SVMSolution:
    """Dual variables ``alpha``, intercept ``b``, the work it took, and whether the solver
    met its own optimality test (False: its iteration bound or the solve's deadline,
    :mod:`kernelfuse.runtime.deadline`, stopped it first; ``alpha`` is feasible but not optimal)."""

    alpha: np.ndarray
    intercept: float
    n_iter: int = 0
    converged: bool = True


class SVMSolver(ABC):
    """Solves the SVM dual on a precomputed kernel."""

    name: ClassVar[str]

    @abstractmethod
    def solve(
        self,
        K: np.ndarray,
        y: np.ndarray,
        C: float,
        *,
        intercept: bool = True,
        warm_start: SVMSolution | None = None,
    ) -> SVMSolution:
        """Solve the dual on kernel ``K`` (N, N) with labels ``y`` in {-1, +1}."""


def __getattr__(name: str) -> object:
    """The SVM dual's numerics, moved to :mod:`kernelfuse.numerics.svm_dual`: deprecated aliases."""
    if name in _MOVED:
        import warnings

        from kernelfuse.numerics import svm_dual

        warnings.warn(f"kernelfuse.parts.svm_solver.{name} moved to kernelfuse.numerics.svm_dual.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(svm_dual, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_MOVED = frozenset({"svm_dual_value", "svm_primal_value", "CONSTANT_DOMINANCE", "centred_kernel", "margins",
                    "intercept_from_alpha"})
