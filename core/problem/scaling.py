"""Solving in the kernels' own units: a problem on ``K`` is the same problem on ``K / s``.

With ``K' = K / s`` and ``coef' = s coef`` the model is unchanged and each family's parameters
map by its scaling law (``l1_mkl``: ``C' = C / sqrt(s)``, ``C2' = C2 / s``; ``l1_mkl_sq``, ``vskl``,
``mlmkl_*``: ``C' = s C``, ``P = P' / s``; ``pnorm_mkl``: ``lam' = lam / s``; ``mikl``:
``lam' = lam / s^q``).  :meth:`kernelfuse.assembly.solver.Solver.solve` hands every solver
kernels of largest entry 1 when the given one lies outside :data:`SCALE_BAND`: the solvers'
defaults assume unit scale (docs/reliability.md, "Numerical robustness").
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
    """``mikl``: ``lam' = lam / s^q``; ``P = P'``."""
    lam = params["lam"]
    for _ in range(round(params["q"])):  # q in {1, 2}: lam / s / s, never s^q (underflows at s < 1e-162)
        lam /= s
    return {**params, "lam": lam}, 1.0


@attrs.frozen
class Rescaled:
    """``problem`` on ``K / scale``; ``P = objective_factor * P'`` and ``coef = coef' / scale``."""

    problem: Problem
    scale: float
    objective_factor: float


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
