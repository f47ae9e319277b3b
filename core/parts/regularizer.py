"""The ``Regularizer`` contract: a family's penalty ``Omega``, a function of one mixed norm.

A regulariser is one object per mixed norm ``||.||``, with its parameters (and
the kernels' groups) bound: ``Omega(x)`` in OBJECTIVES.md units, the norm and
its dual ``||u||_* = max_{||x|| <= 1} <u, x>`` (so ``<u, x> <= ||x|| ||u||_*``),
the convex conjugate ``Omega*`` that certificates subtract, and the cvxpy
expression of ``Omega`` for the exact reference.  ``x`` is in the
regulariser's own layout: the per-kernel norms ``||f_m||`` (M,) for the
kernel families, ``alpha = coef.T`` (N, M) for ``mikl``.  The concrete norms
are in :mod:`kernelfuse.problem.regularizers`.

Optional capability (checked by name, like a loss's):

``prox(x, step)``
    ``argmin_z Omega(z) + ||z - x||^2 / (2 step)``, where it has a closed form.

A penalty separable in the kernel norms, ``Omega(v) = sum_m h(v_m)`` with ``h`` convex,
nondecreasing on ``v >= 0``, is a :class:`SeparablePenalty`: what SpicyMKL's dual augmented
Lagrangian and the ``loss_conjugate`` certificate read (Suzuki & Tomioka 2011, section 2: any
such ``h``, block-l1 and the elastic net its examples).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class Regularizer(ABC):
    """``Omega(x)``, a function of a mixed norm ``||x||``, with its dual norm, conjugate and cvxpy form."""

    name: ClassVar[str]

    @abstractmethod
    def value(self, x: np.ndarray) -> float:
        """``Omega(x)``."""

    @abstractmethod
    def norm(self, x: np.ndarray) -> float:
        """The mixed norm ``||x||``."""

    @abstractmethod
    def dual_norm(self, u: np.ndarray) -> float:
        """``||u||_* = max_{||x|| <= 1} <u, x>``."""

    @abstractmethod
    def conjugate(self, u: np.ndarray) -> float:
        """``Omega*(u) = sup_x <u, x> - Omega(x)`` (``inf`` off its domain)."""

    @abstractmethod
    def expression(self, x: Any) -> tuple[Any, list[Any]]:
        """``Omega`` of the cvxpy expression ``x``: a convex expression and the constraints it needs."""

    def combination_weights(self, norms: np.ndarray) -> np.ndarray:
        """The kernel weights ``d`` of a model whose kernel norms ``||f_m||`` are ``norms`` (not all
        zero): ``d_m`` proportional to ``||f_m|| / g_m``, ``g_m = dOmega / d||f_m||``, on the
        regulariser's scale (default: ``||f_m|| / sum ||f||``, for penalties whose ``g_m`` is the
        same for every kernel, and any other penalty until it says otherwise)."""
        return norms / norms.sum()

    @property
    def separable(self) -> bool:
        """Whether ``Omega(v) = sum_m h(v_m)`` of the kernel norms, with the methods of
        :class:`SeparablePenalty` (False unless the regulariser says so)."""
        return False


class SeparablePenalty(Regularizer):
    """``Omega(v) = sum_m h(v_m)`` of the kernel norms ``v >= 0``, ``h`` convex and nondecreasing:
    its radial prox, its slope ``h'`` and the radius of ``dom h*`` (Suzuki & Tomioka 2011, eq. 6)."""

    #: The penalty's scale (``C``): SpicyMKL caps its proximal penalty at ``gamma_max / weight``.
    weight: float
    #: Whether :meth:`radial_prox` and :meth:`kernel_values` compute in the namespace of their
    #: array argument (the Python array API standard): then SpicyMKL's Newton steps on a device
    #: stack call them there.  False: they are called with NumPy copies.
    array_api: ClassVar[bool] = False

    @property
    def separable(self) -> bool:
        return True

    @abstractmethod
    def radial_prox(self, norms: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        """``z_m = argmin_z step h(z) + (z - r_m)^2 / 2`` at ``r = norms >= 0``, and ``dz_m / dr_m``:
        the block prox ``x_m -> z_m x_m / ||x_m||`` in each block's own metric."""

    def kernel_values(self, norms: np.ndarray) -> np.ndarray:
        """``h(v)`` at each entry of ``norms >= 0`` (any shape), so that ``value(v) = sum_m h(v_m)``.
        This default evaluates :meth:`value` entry by entry; a penalty with a closed form gives it."""
        values = np.asarray(norms, dtype=np.float64)
        return np.reshape([self.value(np.array([v])) for v in values.ravel()], values.shape)

    @abstractmethod
    def slope(self, norms: np.ndarray) -> np.ndarray:
        """``h'(v_m)``, the right derivative (``h'(0+)`` at 0): the dual radius at a model of these
        norms, and at 0 the threshold below which a kernel's block prox is zero."""

    @property
    def threshold(self) -> float:
        """``h'(0+)``: a kernel whose block norm is at most ``step`` times this has a zero radial prox."""
        return float(self.slope(np.zeros(1))[0])

    @property
    @abstractmethod
    def dual_radius(self) -> float:
        """``sup {s : h*(s) < inf}``: ``inf`` where ``h`` grows faster than linearly."""
