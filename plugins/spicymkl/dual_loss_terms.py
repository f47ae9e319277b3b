"""The loss's share of SpicyMKL's smoothed dual ``phi_gamma(rho)`` (eq. 7 and section 3.3).

The inner dual is ``phi(rho) = D(rho) + (kernel terms)``; ``D`` is the loss's part, in one of
two forms chosen by what the loss offers.  :class:`ConjugateTerm` (eq. 7), for a conjugate
smooth on an open domain holding the optimum (logistic, squared): ``D(rho) = sum_i
loss*(y_i, rho_i)``.  :class:`SlackTerm` (section 3.3), for conjugates with kinks or a domain
the optimum touches (hinge, squared hinge, epsilon-insensitive): slack variables ``z = f`` with
their own proximal term, so ``D`` goes through the conjugate's prox, once differentiable with a
generalised Hessian (semismooth Newton), and every ``rho`` is feasible.  Each gives the value,
gradient, diagonal Hessian and, after the inner solve, the next slack centre (None for
:class:`ConjugateTerm`).  The formulas: docs/methods/spicymkl.md.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np


@attrs.define
class ConjugateTerm:
    """``D(rho) = sum_i loss*(y_i, rho_i)`` (SpicyMKL eq. 7)."""

    loss: Any
    y: np.ndarray

    def value(self, rho: np.ndarray) -> float:
        return float(np.sum(self.loss.conjugate(self.y, rho)))

    def gradient(self, rho: np.ndarray) -> np.ndarray:
        return self.loss.conjugate_derivative(self.y, rho)

    def hessian(self, rho: np.ndarray) -> np.ndarray:
        return self.loss.conjugate_second_derivative(self.y, rho)

    def next_slack(self, rho: np.ndarray) -> None:
        return None


@attrs.define
class SlackTerm:
    """The conjugate of ``loss + ||. - slack||^2 / (2 gamma)`` (SpicyMKL section 3.3)."""

    loss: Any
    y: np.ndarray
    slack: np.ndarray
    gamma: float

    def _prox(self, rho: np.ndarray) -> np.ndarray:
        return self.loss.conjugate_prox(self.y, rho + self.slack / self.gamma, 1.0 / self.gamma)

    def value(self, rho: np.ndarray) -> float:
        w = self._prox(rho)
        gap = rho - w
        return float(np.sum(self.loss.conjugate(self.y, w)) + gap @ self.slack
                     + 0.5 * self.gamma * gap @ gap)

    def gradient(self, rho: np.ndarray) -> np.ndarray:
        return self.slack + self.gamma * (rho - self._prox(rho))

    def hessian(self, rho: np.ndarray) -> np.ndarray:
        slope = self.loss.conjugate_prox_derivative(self.y, rho + self.slack / self.gamma,
                                                    1.0 / self.gamma)
        return self.gamma * (1.0 - slope)

    def next_slack(self, rho: np.ndarray) -> np.ndarray:
        return self.gradient(rho)


SMOOTH_CONJUGATE = ("conjugate", "conjugate_derivative", "conjugate_second_derivative")
PROX_CONJUGATE = ("conjugate", "conjugate_prox", "conjugate_prox_derivative")


def uses_slack(loss: Any) -> bool:
    """Section 3.3's slack form for every loss with a conjugate prox, eq. 7 otherwise."""
    return all(callable(getattr(loss, m, None)) for m in PROX_CONJUGATE)
