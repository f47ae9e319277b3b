"""The Newton system of SpicyMKL's inner dual ``phi_gamma`` (eq. 12), solved by the kind of kernels.

Over the active kernels (Remark 1) the Hessian of ``phi`` is
``H = gamma [sum_m s_m K_m + sum_m w_m (K_m v_m)(K_m v_m)'] + diag(D) + gamma_b 11'``
(:mod:`.active_kernels`), and Newton's direction solves ``H d = -g``:
:class:`DenseSystem` forms ``H`` from a stack (``O(N^3)``); :class:`LowRankSystem` writes it as
``diag(D) + U diag(c) U'`` from kernel factors ``K_m = Phi_m Phi_m'`` and solves by the Woodbury
identity in ``O(N k^2 + k^3)``, ``k`` the active kernels' total rank, with no ``N x N`` array
(the core may be indefinite: solved as a general symmetric matrix); :class:`DeviceSystem`
forms and solves the dense system on a stack's device.  Details: docs/methods/spicymkl.md.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from kernelfuse.kernels import array_backend

#: ``D`` is raised to at least this times the largest diagonal entry of ``H`` in the low-rank
#: system: ``D`` is positive whenever the ridge is, but a zero ridge on a flat piece of the
#: loss (the hinge dual's interior) leaves zeros that ``U``, of rank ``k < N``, cannot fill.
DIAGONAL_FLOOR = 1e-12


class NewtonSystem(Protocol):
    """``H`` of Newton's step, by what it can do: solve ``H x = rhs``."""

    def solve(self, rhs: np.ndarray) -> np.ndarray: ...


@attrs.frozen
class DenseSystem:
    """``H`` as a symmetric ``N x N`` matrix, factorised in place by Cholesky (solved once: no
    ``N x N`` copy; LAPACK reads the C-ordered matrix as its transpose, the same matrix).

    ``H`` is positive definite for the block soft-threshold and its elastic-net form (every
    weight of the Hessian is non-negative, the ridge positive), and Cholesky costs about 60% of LU
    (docs/methods/spicymkl.md).  A matrix that is not
    positive definite (a prox part with negative weights) gives a NaN direction, which fails
    the Newton loop's descent test: it falls back to the gradient, as for any bad solve."""

    matrix: np.ndarray

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        # Not checked for finiteness (an N x N temporary): a NaN direction falls back likewise.
        _, x, info = scipy.linalg.lapack.dposv(self.matrix.T, rhs, overwrite_a=True, overwrite_b=False)
        return x if info == 0 else np.full_like(rhs, np.nan)


@attrs.frozen
class LowRankSystem:
    """``H = diag(diagonal) + columns diag(weights) columns'``, solved by the Woodbury identity."""

    diagonal: np.ndarray
    columns: np.ndarray
    weights: np.ndarray

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        keep = self.weights != 0
        weights = self.weights[keep]
        top = float(np.max(self.diagonal + np.einsum("ij,ij,j->i", self.columns, self.columns,
                                                     np.abs(self.weights))))
        floor = DIAGONAL_FLOOR * top if top > 0 else 1.0
        scale = 1.0 / np.sqrt(np.maximum(self.diagonal, floor))  # S
        V = (scale[:, None] * self.columns[:, keep]) * np.sqrt(np.abs(weights))
        core = V.T @ V
        core[np.diag_indices_from(core)] += np.sign(weights)
        scaled = scale * rhs
        inner = scipy.linalg.solve(core, V.T @ scaled, assume_a="sym")
        return scale * (scaled - V @ inner)


@attrs.frozen
class DeviceSystem:
    """``H = hessian + diag(diagonal) + constant 11'`` with ``hessian``, ``diagonal`` and the right-hand
    side on a device (:mod:`kernelfuse.kernels.array_backend`): formed, factorised (Cholesky where the
    library offers it) and solved there, nothing read back; a failed factorisation gives NaN, as
    :class:`DenseSystem`."""

    hessian: Any
    diagonal: Any
    constant: float

    def solve(self, rhs: Any) -> Any:
        return array_backend.solve_shifted(self.hessian, self.diagonal, self.constant, rhs)
