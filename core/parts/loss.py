"""The ``Loss`` interface: a data-fitting term ``sum_i loss(y_i, f_i)``, evaluated per example.

Besides :meth:`Loss.value`, which every loss has, a loss may offer capabilities that some
solvers need (the skglm datafit idea): its derivative, its conjugate with the conjugate's
derivatives, domain and proximal map, and a cvxpy form.  A solver names the methods it calls
and :func:`kernelfuse.assembly.requirements.check_requirements` reports every one that is missing
before any work starts.  The contract of each method: :class:`Loss`.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import array_namespace, like_stack


class Loss(ABC):
    """A per-example loss ``loss(y, f)``: :meth:`value`, and optional capabilities.

    Optional methods, with their contracts (``y`` targets, ``f`` decision values,
    arrays over examples; multiclass losses take ``f`` of shape (N, n_classes)
    and integer class indices ``y``):

    ``derivative(y, f)``
        A (sub)gradient of ``value`` with respect to ``f``, per example.
    ``second_derivative(y, f)``
        The second derivative in ``f`` (a generalised one at a kink, as the squared hinge's
        at ``y f = 1``), per example: the curvature a primal Newton step reads.
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
        derivative in ``v`` (where it exists; one side's value at a kink); ``step`` a number or
        one per example.  For
        losses whose conjugate is not smooth on an open domain (hinge, squared
        hinge, epsilon-insensitive), SpicyMKL smooths the conjugate with it
        (section 3.3's slack variables).
    ``in_units(t)``
        ``(loss', k)`` with ``loss(y, f) = t^k loss'(y / t, f / t)`` for every ``t > 0``: a loss
        of real targets homogeneous of degree ``k`` (its own parameters in units of ``t``).
        Targets far from unit scale are then solved in units of their largest magnitude
        (:mod:`kernelfuse.problem.scaling`).
    ``cvxpy_sum(y, f)``
        ``(expression, constraints)``: sum_i loss(y_i, f_i) as a cvxpy expression
        in the cvxpy expression ``f``, in a form the Clarabel solver handles,
        plus any auxiliary constraints.  Used by the exact reference solver.
    """

    #: Registered name, e.g. ``"hinge"``.
    name: ClassVar[str]
    #: ``"binary"`` (y in {-1, +1}), ``"real"`` or ``"multiclass"``.
    target: ClassVar[str]
    #: Whether the per-example methods (``value``, its derivatives, the conjugate's methods; not
    #: ``conjugate_domain`` or ``cvxpy_sum``) compute in the namespace of their array arguments
    #: (the Python array API standard): then SpicyMKL's Newton steps on a device stack, and the
    #: distributed passes over blocks on a device, call them there.  False: SpicyMKL calls them
    #: with NumPy copies; device blocks refuse the loss.
    array_api: ClassVar[bool] = False

    if TYPE_CHECKING:  # the optional methods (module docstring): absent at run time unless defined
        derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        second_derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate_derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate_second_derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]
        conjugate_domain: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
        conjugate_prox: Callable[[np.ndarray, np.ndarray, float | np.ndarray], np.ndarray]
        conjugate_prox_derivative: Callable[[np.ndarray, np.ndarray, float | np.ndarray], np.ndarray]
        in_units: Callable[[float], tuple[Loss, int]]
        cvxpy_sum: Callable[[np.ndarray, Any], tuple[Any, list[Any]]]

    @abstractmethod
    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """loss(y_i, f_i) for every example."""

    def total(self, y: np.ndarray, f: np.ndarray) -> float:
        """sum_i loss(y_i, f_i)."""
        return float(np.sum(self.value(y, f)))


def _positive(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where ``w > 0``, and ``w`` with 1 in place of 0 (to divide by, the zeros then masked)."""
    positive = weight > 0
    return positive, array_namespace(weight).where(positive, weight, 1.0)


def _per_example(weight: np.ndarray, array: np.ndarray) -> np.ndarray:
    """``weight`` (N,) shaped to multiply ``array`` (N, ...) example by example."""
    return array_namespace(weight).reshape(weight, weight.shape + (1,) * (array.ndim - 1))


def _scaled(method: Callable[..., np.ndarray], weight: np.ndarray, y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``w_i method(y_i, f_i)``: the value and the derivative of ``w loss``."""
    return _per_example(weight, f) * method(y, f)


def _conjugate(conjugate: Callable[..., np.ndarray], weight: np.ndarray, y: np.ndarray,
               rho: np.ndarray) -> np.ndarray:
    """``(w loss)*(rho) = w loss*(rho / w)``; for ``w = 0`` the conjugate of 0: 0 at ``rho = 0``, else inf."""
    xp = array_namespace(rho)
    positive, safe = _positive(weight)
    with np.errstate(invalid="ignore", over="ignore"):
        value = conjugate(y, rho / _per_example(safe, rho))  # per entry of rho, or per example
    at_zero = rho == 0 if value.ndim == rho.ndim else xp.all(xp.reshape(rho == 0, (weight.shape[0], -1)), axis=1)
    return xp.where(_per_example(positive, value), _per_example(safe, value) * value,
                    xp.where(at_zero, xp.zeros_like(value), np.inf))


def _conjugate_derivative(derivative: Callable[..., np.ndarray], weight: np.ndarray, y: np.ndarray,
                          rho: np.ndarray) -> np.ndarray:
    """``d/drho [w loss*(rho / w)] = loss*'(rho / w)``; nan where ``w = 0`` (a point domain)."""
    positive, safe = _positive(weight)
    return array_namespace(rho).where(_per_example(positive, rho), derivative(y, rho / _per_example(safe, rho)), np.nan)


def _conjugate_second_derivative(second: Callable[..., np.ndarray], weight: np.ndarray, y: np.ndarray,
                                 rho: np.ndarray) -> np.ndarray:
    """``d^2/drho^2 [w loss*(rho / w)] = loss*''(rho / w) / w``; nan where ``w = 0`` (a point domain)."""
    positive, safe = _positive(weight)
    safe = _per_example(safe, rho)
    return array_namespace(rho).where(_per_example(positive, rho), second(y, rho / safe) / safe, np.nan)


def _conjugate_prox(prox: Callable[..., np.ndarray], weight: np.ndarray, y: np.ndarray, v: np.ndarray,
                    step: float | np.ndarray) -> np.ndarray:
    """``argmin_u w loss*(u / w) + (u - v)^2 / (2 step) = w prox_{loss*, step / w}(v / w)`` (``u = w z``
    turns it into ``w [loss*(z) + (z - v / w)^2 / (2 step / w)]``); 0 where ``w = 0``."""
    positive, safe = _positive(weight)
    safe = _per_example(safe, v)
    return array_namespace(v).where(_per_example(positive, v), safe * prox(y, v / safe, step / safe), 0.0)


def _conjugate_prox_derivative(derivative: Callable[..., np.ndarray], weight: np.ndarray, y: np.ndarray,
                               v: np.ndarray, step: float | np.ndarray) -> np.ndarray:
    """The derivative of :func:`_conjugate_prox` in ``v``: ``prox'(v / w)`` at step ``step / w``; 0 where ``w = 0``."""
    positive, safe = _positive(weight)
    safe = _per_example(safe, v)
    return array_namespace(v).where(_per_example(positive, v), derivative(y, v / safe, step / safe), 0.0)


def _cvxpy_sum(cvxpy_sum: Callable[..., tuple[Any, list[Any]]], weight: np.ndarray, y: np.ndarray,
               f: Any) -> tuple[Any, list[Any]]:
    """``sum_i w_i loss(y_i, f_i)``: the loss's own ``cvxpy_sum`` over the examples of each distinct
    weight ``c > 0``, times ``c`` (examples of weight 0 add nothing)."""
    total: Any = 0.0
    constraints: list[Any] = []
    for value in np.unique(weight[weight > 0]):
        rows = np.flatnonzero(weight == value)
        expression, extra = cvxpy_sum(y[rows], f[rows])
        total = total + float(value) * expression
        constraints += extra
    return total, constraints


def _in_units(in_units: Callable[[float], tuple[Loss, int]], weight: np.ndarray, t: float) -> tuple[Loss, int]:
    """``w loss`` in units of ``t``: the weights unchanged, the loss's own law (``Loss.in_units``)."""
    loss, degree = in_units(t)
    return WeightedLoss(loss, weight), degree


@attrs.frozen(eq=False, slots=False)
class WeightedLoss(Loss):
    """The data term ``sum_i w_i loss(y_i, f_i)`` of per-sample weights ``w_i >= 0`` (``sample_weight``).

    It has the capabilities of ``loss``, each of ``w loss``: ``value`` and its derivatives times
    ``w``; the conjugate ``(w loss)*(rho) = w loss*(rho / w)`` (for ``w = 0``: 0 at ``rho = 0``,
    inf elsewhere), whose domain is ``w`` times the loss's; its proximal map
    ``w prox_{loss*, step / w}(v / w)``; ``cvxpy_sum`` a weighted sum of the loss's own; and
    ``in_units`` the loss's law with the same weights.  A
    weight of 0 makes that example's conjugate the indicator of ``{0}``, with no derivatives
    (nan there: Newton on a smooth conjugate needs every ``w_i > 0``).  Weights are checked by
    :func:`kernelfuse.validation.check_sample_weight`; ``name`` and ``target`` are the loss's.
    """

    loss: Loss
    weight: np.ndarray

    def __attrs_post_init__(self) -> None:
        loss, weight = self.loss, self.weight
        # The loss's registered name, targets and namespaces; misc: ClassVars of Loss, set per instance here.
        object.__setattr__(self, "name", loss.name)
        object.__setattr__(self, "target", loss.target)
        object.__setattr__(self, "array_api", loss.array_api)
        wraps: dict[str, Callable[..., Any]] = {
            "derivative": _scaled, "second_derivative": _scaled, "conjugate": _conjugate,
            "conjugate_derivative": _conjugate_derivative,
            "conjugate_second_derivative": _conjugate_second_derivative,
            "conjugate_prox": _conjugate_prox, "conjugate_prox_derivative": _conjugate_prox_derivative,
            "cvxpy_sum": _cvxpy_sum, "in_units": _in_units,
        }
        for method, wrap in wraps.items():
            if callable(getattr(loss, method, None)):
                object.__setattr__(self, method, functools.partial(wrap, getattr(loss, method), weight))

    def value(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return _scaled(self.loss.value, self.weight, y, f)

    def like(self, array: Any) -> WeightedLoss:
        """The same loss with its weights where ``array`` is (a device stack's Newton steps)."""
        return WeightedLoss(self.loss, like_stack(self.weight, array))

    def conjugate_domain(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``w`` times the loss's domain (the whole line where it has none); ``{0}`` where ``w = 0``."""
        if callable(getattr(self.loss, "conjugate_domain", None)):
            lower, upper = self.loss.conjugate_domain(y)
        else:
            lower, upper = np.full(self.weight.shape, -np.inf), np.full(self.weight.shape, np.inf)
        positive, safe = _positive(self.weight)  # no 0 * inf
        return np.where(positive, safe * lower, 0.0), np.where(positive, safe * upper, 0.0)
