"""SpicyMKL's outer optimiser: proximal minimisation, the dual augmented Lagrangian (eqs. 3-6, 10-11).

Each step moves the centre to the proximal point the oracle computed,
``argmin P(alpha, b) + sum_m ||alpha_m - alpha^t_m||^2_{K_m} / (2 gamma_t) + (b - b^t)^2 / (2 gamma_b,t)``
(a gradient step of length ``gamma_t`` on the Moreau envelope), then raises the penalties:
``gamma_t = (gamma0 / max_m tr(K_m)) * growth^t`` up to ``gamma_max / C``, ``gamma_b,t =
intercept_ratio * gamma_t``.  Non-decreasing penalties give Theorem 1's super-linear
convergence; the cap on the soft-threshold ``gamma C`` is ours, as its kept norms are
differences of numbers of that size (why, and the defaults measured: docs/methods/spicymkl.md).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.rows import kernel_diagonal
from kernelfuse.parts.optimizer import Evaluate, OuterOptimizer
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.parts.regularizer import SeparablePenalty
from kernelfuse.plugins.spicymkl.proximal_point import ProximalPoint
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import growth_factor, positive


@attrs.define
class AugmentedLagrangian(OuterOptimizer):
    """Proximal-point steps with a geometric, non-decreasing penalty schedule."""

    name: ClassVar[str] = "augmented-lagrangian"
    #: It reads no kernel (the oracle does): works with any storage the oracle reads.
    reads_kernel_factors: ClassVar[bool] = True
    reads_device_arrays: ClassVar[bool] = True
    #: The first penalty: a first step far from the zero centre has few active kernels (1000
    #: measured best over the benchmark's settings: docs/methods/spicymkl.md).
    gamma0: float = positive.field(1000.0)
    growth: float = growth_factor.field(10.0)
    #: Bound on ``gamma * C``, the soft-threshold level (see the module docstring): 1e5 was
    #: faster than 1e6 at the same gaps, 1e4 too small (docs/methods/spicymkl.md).
    gamma_max: float = positive.field(1e5)
    intercept_ratio: float = positive.field(1.0)

    def init(self, problem: Problem, point: ProximalPoint, answer: OracleAnswer) -> tuple[float, float]:
        """The state: the first penalty, ``gamma0 / max_m tr(K_m)``, and the largest, ``gamma_max / C``.

        ``gamma`` multiplies the kernels in the inner dual (``gamma rho'K_m rho``
        against the loss conjugate's curvature), so ``gamma0`` is stated for
        kernels of unit trace and scaled to the kernels given: from the
        unnormalised linear and Gaussian kernels of a 40-point problem
        (traces 2,648 and 40), ``gamma0 = 1000`` unscaled made the first inner
        problem so stiff that Newton's system lost all precision and the
        solver never converged.  A centre away from zero without a slack centre (a warm start,
        loss with a smooth conjugate: logistic, squared) is near the optimum: its schedule
        starts one ``growth`` step up.  Reading the diagonals costs no pass."""
        trace = float(np.max(kernel_diagonal(problem.K).sum(axis=1)))
        first = self.gamma0 / trace if trace > 0 else self.gamma0
        if point.slack is None and np.any(point.coef != 0):
            first *= self.growth  # warm start, smooth conjugate: one step up (docs/methods/spicymkl.md)
        penalty = problem.regularizer
        assert isinstance(penalty, SeparablePenalty), "spicymkl's oracle refuses other penalties"
        largest = self.gamma_max / penalty.weight
        return min(first, largest), largest

    def step(self, point: ProximalPoint, answer: OracleAnswer, state: tuple[float, float],
             evaluate: Evaluate) -> tuple[ProximalPoint, OracleAnswer, tuple[float, float]]:
        first, largest = state
        gamma = first if point.gamma == 0 else min(point.gamma * self.growth, largest)
        assert answer.coef is not None  # the smoothed dual Newton oracle answers with its model
        new = attrs.evolve(point.advanced(answer.coef, answer.intercept, answer.gradient),
                           gamma=gamma, gamma_b=self.intercept_ratio * gamma)
        return new, evaluate(new), state
