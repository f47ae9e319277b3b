"""The point of proximal-point methods: a centre and its penalties.

The proximal-point method (the augmented Lagrangian seen from the primal;
Rockafellar 1976, SpicyMKL eqs. 3-6) moves a centre ``x^t`` by

    ``x^{t+1} = argmin_x P(x) + ||x - x^t||^2 / (2 gamma_t)``,

that is, a gradient step of length ``gamma_t`` on the Moreau envelope
``M_gamma(x) = min_u P(u) + ||u - x||^2 / (2 gamma)``, whose gradient is
``(x - x^{t+1}) / gamma``.  A proximal oracle answers at a
:class:`ProximalPoint` with that envelope's value and gradient (in the
metric of the proximal term: each kernel's RKHS norm for the
coefficients); an optimiser such as ``augmented-lagrangian`` takes the step
and sets the next penalties.  ``gamma = 0`` is the identity map: the
oracle evaluates the centre itself (the starting model).

The centre is the model ``(coef, intercept)`` and, for losses smoothed by
slack variables (SpicyMKL section 3.3), the centre ``slack`` of the loss
arguments.  :meth:`ProximalPoint.flat` lays it out as one vector in that
order, the layout of the envelope's gradient.
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

    def flat(self) -> np.ndarray:
        """``[coef.ravel(), intercept, slack]``: the layout of an envelope gradient."""
        slack = np.zeros(0) if self.slack is None else self.slack
        return np.concatenate([self.coef.ravel(), [self.intercept], slack])

    def advanced(self, coef: np.ndarray, intercept: float, gradient: np.ndarray) -> ProximalPoint:
        """The next centre: the proximal point ``(coef, intercept)`` (the oracle's model, exactly, so
        that zeroed kernels stay zero) and the slack centre moved by ``-gamma * gradient``."""
        slack = None if self.slack is None else self.slack - self.gamma * gradient[self.coef.size + 1:]
        return attrs.evolve(self, coef=coef, intercept=intercept, slack=slack)
