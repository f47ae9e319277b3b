"""Solving in the kernels' and the targets' own units: a problem on ``K`` is the same problem
on ``K / s``, and one with real targets ``y`` the same problem on ``y / t``.

With ``K' = K / s`` and ``coef' = s coef`` the model is unchanged and each family's parameters
map by its scaling law (``l1_mkl``: ``C' = C / sqrt(s)``, ``C2' = C2 / s``; ``l1_mkl_sq``, ``vskl``,
``mlmkl_*``: ``C' = s C``, ``P = P' / s``; ``pnorm_mkl``: ``lam' = lam / s``; ``mikl``:
``lam' = lam / s^q``).  With ``y' = y / t`` the model is ``f' = f / t`` (``coef' = coef / t``,
``b' = b / t``), for a loss homogeneous of degree ``k`` (``loss(y, f) = t^k loss'(y / t, f / t)``,
the loss's ``in_units``: squared ``k = 2``, epsilon-insensitive ``k = 1`` with ``eps' = eps / t``)
and the family's target law (``l1_mkl``: ``C' = C t^(1-k)``, ``C2' = C2 t^(2-k)``, ``P = t^k P'``;
the other families take labels in {-1, +1}).  :meth:`kernelfuse.assembly.solver.Solver.solve`
hands every solver kernels of largest entry 1 when the given one lies outside
:data:`SCALE_BAND`, and targets of largest magnitude 1 when theirs does: the solvers' defaults
assume unit scale (docs/reliability.md, "Numerical robustness").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import attrs
import numpy as np

from kernelfuse.kernels.array_backend import is_device_array
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.storage import is_memory_mapped

if TYPE_CHECKING:  # the families name these laws; instance imports the families
    from kernelfuse.problem.instance import Problem

#: Largest kernel entries in this range are solved as given.
SCALE_BAND = (1e-5, 1e5)

#: A family's law: (parameters, s) -> (parameters on K / s, factor with P = factor * P').
Law = Callable[[Mapping[str, float], float], tuple[dict[str, float], float]]
#: A family's target law: (parameters, t, k) -> (parameters on y / t, factor with P = factor * P'),
#: for a loss homogeneous of degree k.
TargetLaw = Callable[[Mapping[str, float], float, int], tuple[dict[str, float], float]]


def l1_mkl_law(params: Mapping[str, float], s: float) -> tuple[dict[str, float], float]:
    """``l1_mkl``: ``C' = C / sqrt(s)``, ``C2' = C2 / s``; ``P = P'``."""
    return {**params, "C": params["C"] / math.sqrt(s), "C2": params["C2"] / s}, 1.0


def degree_two_law(params: Mapping[str, float], s: float) -> tuple[dict[str, float], float]:
    """A regulariser of degree 2 in the norms beside ``C`` times the loss: ``C' = s C``; ``P = P' / s``."""
    return {**params, "C": params["C"] * s}, 1.0 / s


def pnorm_mkl_law(params: Mapping[str, float], s: float) -> tuple[dict[str, float], float]:
    """``pnorm_mkl``: ``lam' = lam / s``; ``P = P'``."""
    return {**params, "lam": params["lam"] / s}, 1.0


def mikl_law(params: Mapping[str, float], s: float) -> tuple[dict[str, float], float]:
    """``mikl``: ``lam' = lam / s^q``; ``P = P'`` (q in {1, 2}: :func:`_times_power`)."""
    return {**params, "lam": _times_power(params["lam"], s, -round(params["q"]))}, 1.0


def l1_mkl_target_law(params: Mapping[str, float], t: float, k: int) -> tuple[dict[str, float], float]:
    """``l1_mkl`` on ``y / t`` with a loss of degree ``k``: ``||f_m|| = t ||f'_m||``, so
    ``P = t^k [sum_i loss'_i + C t^(1-k) sum_m ||f'_m|| + C2 t^(2-k) / 2 sum_m ||f'_m||^2]``:
    ``C' = C t^(1-k)``, ``C2' = C2 t^(2-k)``; ``P = t^k P'`` (:func:`_times_power`)."""
    return {**params, "C": _times_power(params["C"], t, 1 - k),
            "C2": _times_power(params["C2"], t, 2 - k)}, _times_power(1.0, t, k)


def _times_power(value: float, t: float, k: int) -> float:
    """``value t^k`` for an integer ``k``, by ``|k|`` products or quotients (``t^k`` itself may
    overflow or underflow where the product does not: ``s^2`` underflows at ``s < 1e-162``)."""
    for _ in range(abs(k)):
        value = value * t if k > 0 else value / t
    return value


@attrs.frozen
class Rescaled:
    """``problem`` on ``K / scale`` and ``y / target_scale``; ``P = objective_factor * P'``,
    ``coef = target_scale coef' / scale`` and ``b = target_scale b'``."""

    problem: Problem
    scale: float
    objective_factor: float
    target_scale: float = 1.0


def representable(params: Mapping[str, float], mapped: Mapping[str, float]) -> bool:
    """Whether the law's ``mapped`` parameters are floats again: finite, and non-zero where
    ``params`` were (no overflow, no underflow)."""
    return all(math.isfinite(mapped[name]) and (mapped[name] != 0.0 or params[name] == 0.0)
               for name in params)


def nearest_representable_scale(problem: Problem, scale: float) -> float:
    """``scale`` when the family's law maps the parameters to floats on ``K / scale``, else the
    scale nearest to it (in ``log s``, between 1 and ``scale``) at which it does.

    ``mikl`` with ``q = 2`` on kernels of largest entry 1e-200 and ``lam = 1`` would need
    ``lam' = 1e400`` on unit kernels; solved on ``K / s`` with ``s`` near 1e-154 instead
    (``lam'`` near 1e308), it is the same problem (``f`` underflows either way).
    """
    law, params = problem.family.scaling, problem.params
    if representable(params, law(params, scale)[0]):
        return scale
    low, high = 0.0, 1.0  # fractions t of log(scale); t = 0 (s = 1) maps params to themselves
    for _ in range(60):
        middle = (low + high) / 2
        if representable(params, law(params, math.exp(middle * math.log(scale)))[0]):
            low = middle
        else:
            high = middle
    return math.exp(low * math.log(scale))


def rescale(problem: Problem, scale: float) -> Rescaled:
    """The same problem on ``K / scale`` (parameters mapped by the family's law)."""
    params, factor = problem.family.scaling(problem.params, scale)
    K = (FactorKernels([Phi / np.sqrt(scale) for Phi in problem.K.factors])
         if isinstance(problem.K, FactorKernels) else problem.K / scale)
    largest = None if problem.largest_entry is None else problem.largest_entry / scale
    return Rescaled(attrs.evolve(problem, K=K, params=params, largest_entry=largest), scale, factor)


def unit_scale(problem: Problem) -> Rescaled | None:
    """The problem with largest kernel entry 1 where the given one lies outside
    :data:`SCALE_BAND` (:func:`unit_kernels`), then with targets of largest magnitude 1 where
    theirs lies outside it (:func:`unit_targets`); None where neither applies."""
    kernels = unit_kernels(problem)
    targets = unit_targets(problem if kernels is None else kernels.problem)
    if targets is None or kernels is None:
        return targets or kernels
    return attrs.evolve(targets, scale=kernels.scale,
                        objective_factor=kernels.objective_factor * targets.objective_factor)


def unit_kernels(problem: Problem) -> Rescaled | None:
    """The problem with largest kernel entry 1 when the given one lies outside
    :data:`SCALE_BAND`; None when it lies inside, or the kernels are read by rows or
    memory-mapped (rescaling would copy the stack into memory).  Factors are
    rescaled as factors (``Phi / sqrt(scale)``); the largest entry of
    ``Phi Phi'`` is on its diagonal."""
    if isinstance(problem.K, FactorKernels):
        largest = float(problem.K.diagonal().max())
    elif not (isinstance(problem.K, np.ndarray) or is_device_array(problem.K)) or is_memory_mapped(problem.K):
        return None
    elif problem.largest_entry is not None:  # read by the validation
        largest = problem.largest_entry
    else:  # a Problem built by hand
        largest = max(float(np.abs(Km).max()) for Km in problem.K)  # one kernel's temporary at a time
    if largest == 0.0 or SCALE_BAND[0] <= largest <= SCALE_BAND[1]:
        return None
    scale = nearest_representable_scale(problem, largest)
    return None if scale == 1.0 else rescale(problem, scale)


def rescale_targets(problem: Problem, t: float) -> Rescaled:
    """The same problem on ``y / t`` (the loss's ``in_units``, the family's target law)."""
    assert problem.family.target_scaling is not None
    loss, degree = problem.loss.in_units(t)
    params, factor = problem.family.target_scaling(problem.params, t, degree)
    return Rescaled(attrs.evolve(problem, y=problem.y / t, loss=loss, params=params), 1.0, factor, t)


def unit_targets(problem: Problem) -> Rescaled | None:
    """The problem on targets ``y / t``, ``t`` their largest magnitude, when ``t`` lies outside
    :data:`SCALE_BAND`, the loss is homogeneous (its ``in_units``) and the family has a target
    law; None otherwise, or where the law's parameters or factor are not floats
    (:func:`representable`)."""
    if problem.family.target_scaling is None or not hasattr(problem.loss, "in_units"):
        return None
    t = float(np.abs(problem.y).max(initial=0.0))
    if t == 0.0 or not math.isfinite(t) or SCALE_BAND[0] <= t <= SCALE_BAND[1]:
        return None
    rescaled = rescale_targets(problem, t)
    factor = rescaled.objective_factor
    fits = representable(problem.params, rescaled.problem.params) and math.isfinite(factor) and factor > 0.0
    return rescaled if fits else None


#: The largest ``C`` handed to a solver (kernels and real targets at unit scale) without a
#: warning, per family: ``l1_mkl``'s ``C`` weighs the norms, and SpicyMKL ended short of its
#: tolerance from 1e8 (logistic, hinge; squared from 1e10); elsewhere ``C`` weighs the hinge
#: loss (an SVM's C), and SimpleMKL converged up to 1e8 and Clarabel failed at 1e15, on breast
#: cancer (docs/reliability.md).
C_LIMITS = {"l1_mkl": 1e6}
SVM_C_LIMIT = 1e8


def far_off_C(problem: Problem, solved: Problem) -> str | None:
    """A warning naming ``C`` and the fix where the problem as a solver gets it (``solved``:
    :func:`unit_scale`'s, or ``problem`` itself) has ``C`` above its family's limit
    (:data:`C_LIMITS`, else :data:`SVM_C_LIMIT`); None otherwise.  Every law maps ``C``
    linearly, so ``C`` of ``problem`` at the limit is ``C * limit / C'``."""
    limit = C_LIMITS.get(problem.family.name, SVM_C_LIMIT)
    if "C" not in solved.params or not solved.params["C"] > limit:
        return None
    C, unit = problem.params["C"], solved.params["C"]
    return (f"C = {C:g} is {unit:g} at unit scale (kernels of largest entry 1"
            + (", targets of largest magnitude 1" if problem.family.target_scaling is not None else "")
            + f"), above {limit:g}, where the solvers lose accuracy and may end short of tol; "
            f"C <= {C * limit / unit:.3g} keeps it at most {limit:g}")
