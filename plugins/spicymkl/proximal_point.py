"""The point of proximal-point methods: a centre and its penalties.

The proximal-point method (the augmented Lagrangian seen from the primal; Rockafellar 1976,
SpicyMKL eqs. 3-6) moves a centre by ``x^{t+1} = argmin_x P(x) + ||x - x^t||^2 / (2 gamma_t)``,
a gradient step of length ``gamma_t`` on the Moreau envelope, whose gradient is
``(x - x^{t+1}) / gamma``.  A proximal oracle answers at a :class:`ProximalPoint` with the
envelope's value and gradient (each kernel's RKHS norm for the coefficients); an optimiser such
as ``augmented-lagrangian`` takes the step.  ``gamma = 0`` evaluates the centre itself.  The
centre is ``(coef, intercept)`` and, for losses smoothed by slack variables (section 3.3), the
slack centre, laid out as one vector by :meth:`ProximalPoint.envelope_gradient`.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen(eq=False)
class ProximalPoint:
    """A proximal centre ``(coef, intercept, slack)`` with penalties ``gamma`` (kernels, slack) and ``gamma_b``."""

    coef: np.ndarray
    intercept: float = 0.0
    slack: np.ndarray | None = None
    gamma: float = 0.0
    gamma_b: float = 0.0

    def envelope_gradient(self, coef: np.ndarray, intercept: float,
                          slack: np.ndarray | None) -> np.ndarray:
        """``(centre - proximal point) / penalty`` laid out as ``[coef.ravel(), intercept, slack]``
        (zero at ``gamma = 0``, where the proximal point is the centre)."""
        size = self.coef.size + 1 + (0 if self.slack is None else self.slack.size)
        if self.gamma == 0:
            return np.zeros(size)
        step_b = (self.intercept - intercept) / self.gamma_b if self.gamma_b > 0 else 0.0
        step_z = np.zeros(0) if self.slack is None or slack is None else self.slack - slack
        return np.concatenate([(self.coef - coef).ravel() / self.gamma, [step_b], step_z / self.gamma])

    def advanced(self, coef: np.ndarray, intercept: float, gradient: np.ndarray) -> ProximalPoint:
        """The next centre: the proximal point ``(coef, intercept)`` (the oracle's model, exactly, so
        that zeroed kernels stay zero) and the slack centre moved by ``-gamma * gradient``."""
        slack = None if self.slack is None else self.slack - self.gamma * gradient[self.coef.size + 1:]
        return attrs.evolve(self, coef=coef, intercept=intercept, slack=slack)
