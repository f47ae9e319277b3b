"""The ``Loss`` interface: a data-fitting term ``sum_i loss(y_i, f_i)``, evaluated per example.

Besides :meth:`Loss.value`, which every loss has, a loss may offer capabilities that some
solvers need (the skglm datafit idea): its derivative, its conjugate with the conjugate's
derivatives, domain and proximal map, and a cvxpy form.  A solver names the methods it calls
and :func:`kernelfuse.assembly.recipe.check_requirements` reports every one that is missing
before any work starts.  The contract of each method: :class:`Loss`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np


class Loss(ABC):
    """A per-example loss ``loss(y, f)``: :meth:`value`, and optional capabilities.

    Optional methods, with their contracts (``y`` targets, ``f`` decision values,
    arrays over examples; multiclass losses take ``f`` of shape (N, n_classes)
    and integer class indices ``y``):

    ``derivative(y, f)``
        A (sub)gradient of ``value`` with respect to ``f``, per example.
    ``conjugate(y, rho)``
        The Fenchel conjugate in its second argument, per example:
        ``loss*(y, rho) = sup_z rho z - loss(y, z)`` (``inf`` outside its domain).
    ``conjugate_derivative(y, rho)``, ``conjugate_second_derivative(y, rho)``
        First and second derivatives of the conjugate on its domain (nan
        outside), for Newton methods on the dual (SpicyMKL's inner solver).
    ``conjugate_domain(y)``
        ``(lower, upper)``: per example, the interval where the conjugate is
        finite (infinite ends where it is unbounded).  Certificates project a
        dual point onto it.  A loss without it is taken to have the whole line.
    ``conjugate_prox(y, v, step)``, ``conjugate_prox_derivative(y, v, step)``
        The proximal map of the conjugate,
        ``argmin_w loss*(y, w) + (w - v)^2 / (2 step)``, per example, and its
        derivative in ``v`` (where it exists; one side's value at a kink).  For
        losses whose conjugate is not smooth on an open domain (hinge, squared
        hinge, epsilon-insensitive), SpicyMKL smooths the conjugate with it
        (section 3.3's slack variables).
    ``cvxpy_sum(y, f)``
        ``(expression, constraints)``: sum_i loss(y_i, f_i) as a cvxpy expression
        in the cvxpy expression ``f``, in a form the Clarabel solver handles,
        plus any auxiliary constraints.  Used by the exact reference solver.
    """

    #: Registered name, e.g. ``"hinge"``.
    name: ClassVar[str]
    #: ``"binary"`` (y in {-1, +1}), ``"real"`` or ``"multiclass"``.
    target: ClassVar[str]

    if TYPE_CHECKING:  # the optional methods (module docstring): absent at run time unless defined
        derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate_derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate_second_derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate_domain: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
        conjugate_prox: Callable[[np.ndarray, np.ndarray, float], np.ndarray]
        conjugate_prox_derivative: Callable[[np.ndarray, np.ndarray, float], np.ndarray]
        cvxpy_sum: Callable[[np.ndarray, Any], tuple[Any, list[Any]]]

    @abstractmethod
    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """loss(y_i, f_i) for every example."""

    def total(self, y: np.ndarray, f: np.ndarray) -> float:
        """sum_i loss(y_i, f_i)."""
        return float(np.sum(self.value(y, f)))
