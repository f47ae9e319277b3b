"""The problem families of OBJECTIVES.md, one :class:`Family` object each.

A family says what a problem of it looks like (targets, groups, whether kernels
must be PSD, which losses it admits), which parameters it takes (defaults and
admissible ranges), and holds its objective (:mod:`kernelfuse.problem.objectives`),
its regulariser (:mod:`kernelfuse.problem.regularizers`) with the loss's weight
beside it, and its scaling law (:mod:`kernelfuse.problem.scaling`).  Families are
fixed by OBJECTIVES.md, so they live in core, not in the plugin registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs
import numpy as np

from kernelfuse.errors import UnknownNameError
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.problem import objectives, scaling
from kernelfuse.problem.regularizers import BlockL1, BlockLp, MixedLpq, VSKLNorm, at_least_one
from kernelfuse.problem.scaling import Law, TargetLaw
from kernelfuse.validation import Domain, exponent_in_one_two, nonnegative, one_or_two, positive

#: Target kinds: ``binary`` is y in {-1, +1}; ``real`` any finite y;
#: ``class`` is binary (+-1) or integer multiclass labels; ``multilabel`` is
#: Y of shape (N, L) in {-1, +1}; ``loss`` means "whatever the loss needs".
TARGETS = ("binary", "real", "class", "multilabel", "loss")


@attrs.frozen
class Param:
    """One family parameter: default value and admissible values."""

    name: str
    default: float
    doc: str
    domain: Domain

    def validate(self, value: object) -> float:
        return self.domain.check(f"parameter {self.name}", value)


C = Param("C", 1.0, "regularisation constant (see the family for where it sits)", positive)
C2 = Param("C2", 0.0, "elastic-net weight (C2 / 2) sum_m ||f_m||^2", nonnegative)
LAM = Param("lam", 1.0, "regularisation weight lam", positive)


# The loss weights and regularisers of the families below.
def _weight_one(params: Mapping[str, float], n_samples: int) -> float:
    return 1.0


def _weight_C(params: Mapping[str, float], n_samples: int) -> float:
    return params["C"]


def _weight_mean(params: Mapping[str, float], n_samples: int) -> float:
    return 1.0 / n_samples


def _elastic_l1(params: Mapping[str, float], groups: np.ndarray | None) -> Regularizer:
    return BlockL1(weight=params["C"], elastic=params["C2"])


def _squared_l1(params: Mapping[str, float], groups: np.ndarray | None) -> Regularizer:
    return BlockL1(power=2.0)


def _vskl(params: Mapping[str, float], groups: np.ndarray | None) -> Regularizer:
    assert groups is not None, "a vskl problem always has its groups (one group by default)"
    return VSKLNorm(groups, q=params["q"])


def _group_lp(params: Mapping[str, float], groups: np.ndarray | None) -> Regularizer:
    return BlockLp(p=params["p"], weight=params["lam"])


def _mixed_lpq(params: Mapping[str, float], groups: np.ndarray | None) -> Regularizer:
    return MixedLpq(weight=params["lam"], p=params["p"], q=params["q"], r=params["r"])


@attrs.frozen
class Family:
    """A problem family of OBJECTIVES.md."""

    name: str
    title: str
    target: str
    params: tuple[Param, ...]
    losses: tuple[str, ...] | None  # None: any loss whose target fits
    default_loss: str
    #: ``(problem, coef, f, sq, d) -> P`` from the parts of :func:`kernelfuse.problem.objectives.evaluate_parts`.
    objective: Callable[..., float]
    #: ``(params, s) -> (params on K / s, factor with P = factor * P')``.
    scaling: Law
    requires_psd: bool = True
    has_intercept: bool = True
    uses_groups: bool = False
    #: ``(params, groups) -> Omega``; None for the multi-label families (their penalty
    #: ``0.5 sum_m ||f_mk||^2 / d_m`` is in the kernel weights too).
    regularizer: Callable[[Mapping[str, float], np.ndarray | None], Regularizer] | None = None
    #: ``(params, N) -> w``, the loss's factor in ``P = w sum_i loss_i + Omega``.
    loss_weight: Callable[[Mapping[str, float], int], float] = _weight_one
    #: ``(params, t, k) -> (params on y / t, factor with P = factor * P')`` for a loss of degree
    #: ``k`` in real targets; None where the targets are labels.
    target_scaling: TargetLaw | None = None

    def resolve_params(self, given: Mapping[str, object]) -> dict[str, float]:
        """Defaults filled in, each value checked against its range."""
        known = {p.name for p in self.params}
        for name in given:
            if name not in known:
                raise UnknownNameError(f"parameter of family {self.name}", name, known)
        return {p.name: p.validate(given.get(p.name, p.default)) for p in self.params}


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "l1_mkl", "l1-MKL, SpicyMKL form: sum_i loss + C sum_m ||f_m|| (+ C2/2 sum ||f_m||^2)",
            target="loss", params=(C, C2), losses=None, default_loss="hinge",
            objective=objectives.norm_penalised, scaling=scaling.l1_mkl_law,
            regularizer=_elastic_l1, target_scaling=scaling.l1_mkl_target_law,
        ),
        Family(
            "l1_mkl_sq", "l1-MKL, SimpleMKL form: 0.5 (sum_m ||f_m||)^2 + C sum_i hinge",
            target="binary", params=(C,), losses=("hinge",), default_loss="hinge",
            objective=objectives.norm_penalised, scaling=scaling.degree_two_law,
            regularizer=_squared_l1, loss_weight=_weight_C,
        ),
        Family(
            "vskl", "Variable Sparsity Kernel Learning: l1 inside groups, l_2q across",
            target="binary",
            params=(C, Param("q", 1.0, "exponent across groups (inf allowed)", at_least_one)),
            losses=("hinge",), default_loss="hinge", uses_groups=True,
            objective=objectives.norm_penalised, scaling=scaling.degree_two_law,
            regularizer=_vskl, loss_weight=_weight_C,
        ),
        Family(
            "pnorm_mkl", "p-norm MKL (OBSCURE / UFO-MKL): (lam/2) ||f||_{2,p}^2 + mean loss",
            target="class",
            params=(LAM, Param("p", 1.5, "norm exponent across kernels", exponent_in_one_two)),
            losses=("hinge", "crammer-singer"), default_loss="hinge", has_intercept=False,
            objective=objectives.norm_penalised, scaling=scaling.pnorm_mkl_law,
            regularizer=_group_lp, loss_weight=_weight_mean,
        ),
        Family(
            "mikl", "Multiple Indefinite Kernel Learning: squared hinge + (lam/q) ||alpha||_{pq;r}^q",
            target="binary",
            params=(LAM, Param("p", 2.0, "inner exponent", one_or_two),
                    Param("q", 1.0, "outer exponent", one_or_two),
                    Param("r", 2.0, "grouping: 1 = samples, 2 = kernels", one_or_two)),
            losses=("squared-hinge",), default_loss="squared-hinge",
            requires_psd=False, has_intercept=False,
            objective=objectives.coef_penalised, scaling=scaling.mikl_law,
            regularizer=_mixed_lpq,
        ),
        Family(
            "mlmkl_sum", "multi-label MKL, one shared combination: min_d sum_k SVM_k(d)",
            target="multilabel", params=(C,), losses=("hinge",), default_loss="hinge",
            has_intercept=False, objective=objectives.mlmkl_sum, scaling=scaling.degree_two_law,
        ),
        Family(
            "mlmkl_max", "multi-label MKL, worst label: min_d max_k SVM_k(d)",
            target="multilabel", params=(C,), losses=("hinge",), default_loss="hinge",
            has_intercept=False, objective=objectives.mlmkl_max, scaling=scaling.degree_two_law,
        ),
    )
}


def get_family(name: str | Family) -> Family:
    """The family called ``name`` (an error lists close matches)."""
    if isinstance(name, Family):
        return name
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownNameError("family", str(name), FAMILIES) from None
