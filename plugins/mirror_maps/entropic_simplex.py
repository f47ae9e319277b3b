"""The entropic mirror map on a product of simplices (mirrorVSKL section 3.2; ML-MKL-SA eq. 7).

``h(x) = sum_i x_i log x_i`` on ``{x >= 0, sum_{i in group j} x_i = 1 for every j}``:
``grad h(x) = 1 + log x``; ``grad h*(theta)`` is a softmax within each group,
computed in log space (the group maximum subtracted first) so that no
exponential overflows; the Bregman divergence is the Kullback-Leibler
divergence ``sum_i x_i log(x_i / z_i)`` (the linear terms cancel on the set).
A mirror-descent step is ``x+ = softmax_groups(log x - s g)``.
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.special import xlogy

from kernelfuse.parts.mirror_map import MirrorMap, simplex_initial_step


def group_log_softmax(theta: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``theta_i - log sum_{k in group(i)} exp(theta_k)``, stably (log-sum-exp after the group maximum).

    With ``t_j = max_{k in j} theta_k`` this is ``(theta_i - t_j) - log sum_k exp(theta_k - t_j)``:
    every exponent is ``<= 0`` and the sum is ``>= 1``, so nothing overflows and the log is
    finite.  A difference below ``-max float`` (finite dual values of opposite signs near
    ``1e308``) rounds to ``-inf``: its softmax weight is then the exact 0, no overflow to report.
    """
    n_groups = int(groups.max()) + 1
    top = np.full(n_groups, -np.inf)
    np.maximum.at(top, groups, theta)
    with np.errstate(over="ignore"):
        shifted = theta - top[groups]
    sums = np.bincount(groups, weights=np.exp(shifted), minlength=n_groups)
    return shifted - np.log(sums)[groups]


@attrs.frozen
class EntropicSimplices(MirrorMap):
    """Negative entropy on a product of simplices: grad h* is a per-group softmax, D_h is KL."""

    name = "entropic"

    def initial_step(self, gradient: np.ndarray, groups: np.ndarray) -> float:
        return simplex_initial_step(gradient, groups)

    def grad_h(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return 1.0 + np.log(x)

    def grad_h_conjugate(self, theta: np.ndarray, groups: np.ndarray) -> np.ndarray:
        return np.exp(group_log_softmax(theta, groups))

    def divergence(self, x: np.ndarray, z: np.ndarray) -> float:
        return float(np.sum(xlogy(x, x) - xlogy(x, z)))
