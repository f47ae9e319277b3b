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

from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import (
    HostCalls,
    all_like_stack,
    array_namespace,
    is_device_array,
    like_stack,
)


def _examples(a: Any, like: Any) -> Any:
    """The per-example ``a`` (N,) shaped to ``like``: (N,), or (N, 1) against the (N, T) trial
    points of a line search (examples on the first axis, as a loss reads them)."""
    return a if like.ndim == 1 else a[:, None]


def device_loss(loss: Any, like: Any) -> Any:
    """``loss`` for a Newton loop on ``like``'s device: itself on NumPy; with its arrays moved
    there where its conjugate computes in any namespace (``Loss.array_api``); else called on the
    host (:class:`~kernelfuse.kernels.array_backend.HostCalls`)."""
    if not is_device_array(like):
        return loss
    if not loss.array_api:
        return HostCalls(loss, like)
    return loss.like(like) if callable(getattr(loss, "like", None)) else loss


@attrs.define
class ConjugateTerm:
    """``D(rho) = sum_i loss*(y_i, rho_i)`` (SpicyMKL eq. 7)."""

    loss: Any
    y: np.ndarray
    #: The loss's conjugate may be finite on a domain only, which the line search must stay in.
    bounded: ClassVar[bool] = True

    def like(self, array: Any) -> ConjugateTerm:
        """The term with its arrays where ``array`` is (a device stack's Newton loop)."""
        return ConjugateTerm(device_loss(self.loss, array), like_stack(self.y, array))

    def value(self, rho: np.ndarray) -> Any:
        """``D`` at ``rho`` (N,), or at each column of the trial points (N, T)."""
        return array_namespace(rho).sum(self.loss.conjugate(_examples(self.y, rho), rho), axis=0)

    def gradient(self, rho: np.ndarray) -> np.ndarray:
        return self.loss.conjugate_derivative(_examples(self.y, rho), rho)

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
    #: Finite everywhere: the prox form has no domain to stay in.
    bounded: ClassVar[bool] = False

    def like(self, array: Any) -> SlackTerm:
        """The term with its arrays where ``array`` is (a device stack's Newton loop)."""
        y, slack = all_like_stack((self.y, self.slack), array)
        return SlackTerm(device_loss(self.loss, array), y, slack, self.gamma)

    def _prox(self, rho: np.ndarray) -> np.ndarray:
        return self.loss.conjugate_prox(_examples(self.y, rho), rho + _examples(self.slack, rho) / self.gamma,
                                        1.0 / self.gamma)

    def value(self, rho: np.ndarray) -> Any:
        """``D`` at ``rho`` (N,), or at each column of the trial points (N, T)."""
        w = self._prox(rho)
        gap = rho - w
        return array_namespace(rho).sum(self.loss.conjugate(_examples(self.y, rho), w)
                                         + gap * (_examples(self.slack, rho) + 0.5 * self.gamma * gap), axis=0)

    def gradient(self, rho: np.ndarray) -> np.ndarray:
        return _examples(self.slack, rho) + self.gamma * (rho - self._prox(rho))

    def hessian(self, rho: np.ndarray) -> np.ndarray:
        slope = self.loss.conjugate_prox_derivative(self.y, rho + self.slack / self.gamma, 1.0 / self.gamma)
        return self.gamma * (1.0 - slope)

    def next_slack(self, rho: np.ndarray) -> np.ndarray:
        return self.gradient(rho)


SMOOTH_CONJUGATE = ("conjugate", "conjugate_derivative", "conjugate_second_derivative")
PROX_CONJUGATE = ("conjugate", "conjugate_prox", "conjugate_prox_derivative")


def uses_slack(loss: Any) -> bool:
    """Section 3.3's slack form for every loss with a conjugate prox, eq. 7 otherwise."""
    return all(callable(getattr(loss, m, None)) for m in PROX_CONJUGATE)
