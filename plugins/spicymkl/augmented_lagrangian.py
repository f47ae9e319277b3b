"""SpicyMKL's outer optimiser: proximal minimisation, the dual augmented Lagrangian (eqs. 3-6, 10-11).

Each step moves the centre to the proximal point the oracle computed,

    ``(alpha, b)^{t+1} = argmin P(alpha, b) + sum_m ||alpha_m - alpha^t_m||^2_{K_m} / (2 gamma_t)
                                             + (b - b^t)^2 / (2 gamma_b,t)``

(a gradient step of length ``gamma_t`` on the Moreau envelope; see
:mod:`kernelfuse.proximal_point`), then raises the penalties: ``gamma_t =
gamma0 * growth^t`` up to ``gamma_max / C``, ``gamma_b,t = intercept_ratio *
gamma_t``.  The cap keeps the soft-threshold ``gamma C`` within ``gamma_max``:
the kept norms ``||alpha_m|| = r_m - gamma C`` are differences of numbers of
size ``gamma C``, and measured on Ringnorm with the hinge loss, penalties
with ``gamma C`` near 1e10 stalled the certified gap near 1e-6 where a cap
of 1e6 converged (``benchmarks/spicymkl_scaling.py``).  Non-decreasing penalties give the super-linear convergence of
SpicyMKL's Theorem 1 (eqs. 10-11); the inner problems get harder (more
kernels active, a stiffer Hessian) as ``gamma`` grows, the price of fewer
outer steps.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from kernelfuse.errors import ValidationError
from kernelfuse.optimizer import Evaluate, OuterOptimizer
from kernelfuse.oracle import OracleAnswer
from kernelfuse.problem import Problem
from kernelfuse.proximal_point import ProximalPoint
from kernelfuse.validation import positive


def _check_growth(instance: Any, attribute: Any, value: float) -> None:
    if not value >= 1:
        raise ValidationError(f"growth must be >= 1 (a non-decreasing schedule), got {value!r}")


@attrs.define
class AugmentedLagrangian(OuterOptimizer):
    """Proximal-point steps with a geometric, non-decreasing penalty schedule."""

    name: ClassVar[str] = "augmented-lagrangian"
    #: It reads no kernel (the oracle does): works with any storage the oracle reads.
    reads_kernel_factors: ClassVar[bool] = True
    gamma0: float = attrs.field(default=10.0, converter=float, validator=positive)
    growth: float = attrs.field(default=10.0, converter=float, validator=_check_growth)
    #: Bound on ``gamma * C``, the soft-threshold level (see the module docstring).
    gamma_max: float = attrs.field(default=1e6, converter=float, validator=positive)
    intercept_ratio: float = attrs.field(default=1.0, converter=float, validator=positive)

    def init(self, problem: Problem, point: ProximalPoint, answer: OracleAnswer) -> float:
        """The state: the largest penalty, ``gamma_max / C``."""
        return self.gamma_max / problem.params["C"]

    def step(self, point: ProximalPoint, answer: OracleAnswer, state: float,
             evaluate: Evaluate) -> tuple[ProximalPoint, OracleAnswer, float]:
        gamma = self.gamma0 if point.gamma == 0 else min(point.gamma * self.growth, state)
        new = attrs.evolve(point.advanced(answer.coef, answer.intercept, answer.gradient),
                           gamma=gamma, gamma_b=self.intercept_ratio * gamma)
        return new, evaluate(new), state
