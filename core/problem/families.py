"""The problem families of OBJECTIVES.md, one :class:`Family` object each.

A family says what a problem of it looks like (targets, groups, whether kernels
must be PSD, which losses it admits), which parameters it takes (defaults and
admissible ranges), and holds its objective (:mod:`kernelfuse.problem.objectives`),
its regulariser (:mod:`kernelfuse.problem.regularizers`) with the loss's weight
beside it, its scaling law (:mod:`kernelfuse.problem.scaling`), the form of its dual
that certifies lower bounds, and the defaults the estimators give it.  The families of
OBJECTIVES.md live in core (:data:`FAMILIES`); a plugin registers more as kind ``family``
(:func:`get_family` finds both).  Code elsewhere reads these attributes, never a family's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import attrs
import numpy as np

from kernelfuse.errors import UnknownNameError, ValidationError
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.problem import duality, objectives, scaling
from kernelfuse.problem.regularizers import BlockL1, BlockLp, MixedLpq, VSKLNorm, at_least_one
from kernelfuse.problem.scaling import Law, TargetLaw
from kernelfuse.validation import Domain, exponent_in_one_two, nonnegative, one_or_two, positive

if TYPE_CHECKING:  # instance imports the families
    from kernelfuse.parts.registry import Registry
    from kernelfuse.problem.instance import Problem

#: Target kinds: ``binary`` is y in {-1, +1}; ``real`` any finite y;
#: ``class`` is binary (+-1) or integer multiclass labels; ``multilabel`` is
#: Y of shape (N, L) in {-1, +1}; ``loss`` means "whatever the loss needs".
TARGETS = ("binary", "real", "class", "multilabel", "loss")

#: Forms of a family's dual (:attr:`Family.dual`), each giving a certified lower bound on the
#: optimum ``P`` from a dual point (weak duality; tight at the optimum's multipliers):
#:
#: * ``loss_conjugate``: ``D(rho) = -sum_i loss*(y_i, rho_i) - sum_m h*(||rho||_{K_m})`` for
#:   ``rho`` in the loss conjugate's domain with ``sum_i rho_i = 0`` (with an intercept), ``h``
#:   the penalty of one norm (SpicyMKL, section 5.1; ``l1_mkl``);
#: * ``svm_box``: ``H(alpha) = 1'alpha - Omega*(sqrt(a))``, ``a_m = (alpha y)' K_m (alpha y)``, for
#:   ``alpha`` in the SVM box ``0 <= alpha_i <= C`` with ``y'alpha = 0`` (mirrorVSKL, section 3;
#:   ``l1_mkl_sq``, ``vskl``);
#: * ``mean_loss``: ``D(tau) = (1/N) sum_i s_i - ||v||_{2,q}^2 / (2 lam)``,
#:   ``v_m = (1/N) sum_i tau_i phi_m(x_i)``, at the best multiple of a feasible ``tau`` (OBSCURE;
#:   ``pnorm_mkl``);
#: * ``coef_fenchel``: Fenchel's ``D(c u) = -sum_i L*_i(c u_i) - g*(-c A'u)`` of a penalty ``g`` on
#:   the coefficients, at the best ``c >= 0`` (MIKL; ``mikl``);
#: * ``label_svms``: the labels' SVM duals ``1'a_k - 0.5 p' A[:, k]`` combined as
#:   :attr:`Family.label_aggregate` says (ML-MKL; ``mlmkl_sum``, ``mlmkl_max``).
DUALS = ("loss_conjugate", "svm_box", "mean_loss", "coef_fenchel", "label_svms")
#: How a multi-label family combines its labels' SVM optima (:attr:`Family.label_aggregate`).
LABEL_AGGREGATES = ("sum", "max")


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


# The estimators' defaults at unit-diagonal kernels, as functions of N (Family.unit_diagonal_default).
def _one(n_samples: int) -> float:
    return 1.0


def _one_over_n(n_samples: int) -> float:
    return 1.0 / n_samples


@attrs.frozen
class Family:
    """A problem family of OBJECTIVES.md."""

    name: str
    title: str
    #: What ``y`` is, one of :data:`TARGETS`.
    target: str = attrs.field(validator=attrs.validators.in_(TARGETS))
    params: tuple[Param, ...]
    losses: tuple[str, ...] | None  # None: any loss whose target fits
    default_loss: str
    #: ``(problem, coef, f, sq, d) -> P`` from the parts of :func:`kernelfuse.problem.objectives.evaluate_parts`.
    objective: Callable[..., float]
    #: ``(params, s) -> (params on K / s, factor with P = factor * P')``.
    scaling: Law
    #: The form of the family's dual whose value at a dual point certifies a lower bound on
    #: ``P``, one of :data:`DUALS` (the reference certificate,
    #: :func:`kernelfuse.plugins.reference.certificate.lower_bound`, computes the bound by it).
    dual: str = attrs.field(validator=attrs.validators.in_(DUALS))
    requires_psd: bool = True
    has_intercept: bool = True
    #: Whether the regulariser reads the kernels' groups (``vskl``: l1 inside a group, l_2q
    #: across groups); problems of the other families have ``groups`` None.  The estimators
    #: take the kernel specs' groups when ``groups`` is not given.
    uses_groups: bool = False
    #: ``(params, groups) -> Omega``; None for the multi-label families (their penalty
    #: ``0.5 sum_m ||f_mk||^2 / d_m`` is in the kernel weights too).
    regularizer: Callable[[Mapping[str, float], np.ndarray | None], Regularizer] | None = None
    #: ``(params, N) -> w``, the loss's factor in ``P = w sum_i loss_i + Omega``.
    loss_weight: Callable[[Mapping[str, float], int], float] = _weight_one
    #: ``(params, t, k) -> (params on y / t, factor with P = factor * P')`` for a loss of degree
    #: ``k`` in real targets; None where the targets are labels.
    target_scaling: TargetLaw | None = None
    #: The multi-label families' combination of the labels' SVM optima ``SVM_k(d)`` (OBJECTIVES.md
    #: family 6): ``"sum"`` for ``min_d sum_k SVM_k(d)`` (``mlmkl_sum``), ``"max"`` for
    #: ``min_d max_k SVM_k(d)`` (``mlmkl_max``); None for the families of one output.
    label_aggregate: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(LABEL_AGGREGATES)))
    #: ``problem -> C_max``, the smallest ``C`` at which the zero model (every ``f_m = 0``, the
    #: best constant intercept) is optimal: the top of a regularisation path in ``C`` (``l1_mkl``:
    #: :func:`kernelfuse.problem.duality.l1_mkl_c_max`); None where the family has no such formula.
    c_max: Callable[[Problem], float] | None = None
    #: ``(parameter, N -> value)``: the parameter the scikit-learn estimators set when it is left
    #: at None, as a function of the number of training samples ``N``, on kernels of unit
    #: diagonal: the loss weighed against ``0.5 ||f||^2`` as in scikit-learn's ``SVC(C=1)``
    #: (``l1_mkl_sq``, ``vskl``: ``C = 1``; ``pnorm_mkl``, whose loss is a mean: ``lam = 1 / N``).
    #: The estimators map it to their kernels' scale by :attr:`scaling`
    #: (:func:`scaled_default`); None: the family's own default.
    unit_diagonal_default: tuple[str, Callable[[int], float]] | None = None
    #: Parameters whose default the scikit-learn estimators replace by one measured per
    #: estimator on the choice splits of the accuracy protocol (docs/estimators.md), read from
    #: the estimator's class attribute ``<family name>_<parameter>`` (``MKLClassifier.l1_mkl_C``;
    #: None there keeps the family's default): ``l1_mkl``'s ``C`` and ``C2``.
    measured_defaults: tuple[str, ...] = ()

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
            objective=objectives.norm_penalised, scaling=scaling.l1_mkl_law, dual="loss_conjugate",
            regularizer=_elastic_l1, target_scaling=scaling.l1_mkl_target_law,
            c_max=duality.l1_mkl_c_max, measured_defaults=("C", "C2"),
        ),
        Family(
            "l1_mkl_sq", "l1-MKL, SimpleMKL form: 0.5 (sum_m ||f_m||)^2 + C sum_i hinge",
            target="binary", params=(C,), losses=("hinge",), default_loss="hinge",
            objective=objectives.norm_penalised, scaling=scaling.degree_two_law, dual="svm_box",
            regularizer=_squared_l1, loss_weight=_weight_C, unit_diagonal_default=("C", _one),
        ),
        Family(
            "vskl", "Variable Sparsity Kernel Learning: l1 inside groups, l_2q across",
            target="binary",
            params=(C, Param("q", 1.0, "exponent across groups (inf allowed)", at_least_one)),
            losses=("hinge",), default_loss="hinge", uses_groups=True,
            objective=objectives.norm_penalised, scaling=scaling.degree_two_law, dual="svm_box",
            regularizer=_vskl, loss_weight=_weight_C, unit_diagonal_default=("C", _one),
        ),
        Family(
            "pnorm_mkl", "p-norm MKL (OBSCURE / UFO-MKL): (lam/2) ||f||_{2,p}^2 + mean loss",
            target="class",
            params=(LAM, Param("p", 1.5, "norm exponent across kernels", exponent_in_one_two)),
            losses=("hinge", "crammer-singer"), default_loss="hinge", has_intercept=False,
            objective=objectives.norm_penalised, scaling=scaling.pnorm_mkl_law, dual="mean_loss",
            regularizer=_group_lp, loss_weight=_weight_mean, unit_diagonal_default=("lam", _one_over_n),
        ),
        Family(
            "mikl", "Multiple Indefinite Kernel Learning: squared hinge + (lam/q) ||alpha||_{pq;r}^q",
            target="binary",
            params=(LAM, Param("p", 2.0, "inner exponent", one_or_two),
                    Param("q", 1.0, "outer exponent", one_or_two),
                    Param("r", 2.0, "grouping: 1 = samples, 2 = kernels", one_or_two)),
            losses=("squared-hinge",), default_loss="squared-hinge",
            requires_psd=False, has_intercept=False,
            objective=objectives.coef_penalised, scaling=scaling.mikl_law, dual="coef_fenchel",
            regularizer=_mixed_lpq,
        ),
        Family(
            "mlmkl_sum", "multi-label MKL, one shared combination: min_d sum_k SVM_k(d)",
            target="multilabel", params=(C,), losses=("hinge",), default_loss="hinge",
            has_intercept=False, objective=objectives.mlmkl_sum, scaling=scaling.degree_two_law,
            dual="label_svms", label_aggregate="sum",
        ),
        Family(
            "mlmkl_max", "multi-label MKL, worst label: min_d max_k SVM_k(d)",
            target="multilabel", params=(C,), losses=("hinge",), default_loss="hinge",
            has_intercept=False, objective=objectives.mlmkl_max, scaling=scaling.degree_two_law,
            dual="label_svms", label_aggregate="max",
        ),
    )
}


def scaled_default(family: str, n_samples: int, mean_diagonal: float) -> dict[str, float]:
    """The family's :attr:`Family.unit_diagonal_default` for kernels of mean diagonal entry
    ``mean_diagonal`` (``1/N`` for unit-trace kernels): the kernels are the unit-diagonal ones
    divided by ``s = 1 / mean_diagonal``, so the parameter maps by the family's law
    (:mod:`kernelfuse.problem.scaling`: ``C' = s C``, ``lam' = lam / s``).  Empty for the other
    families.  The estimators' default, in one process and on a cluster."""
    fam = FAMILIES.get(family)
    if fam is None or fam.unit_diagonal_default is None:
        return {}
    name, at_unit_diagonal = fam.unit_diagonal_default
    params = {**fam.resolve_params({}), name: at_unit_diagonal(n_samples)}
    mapped, _ = fam.scaling(params, 1.0 / mean_diagonal)
    return {name: float(mapped[name])}


def get_family(name: str | Family, registry: Registry | None = None) -> Family:
    """The family called ``name``: one of :data:`FAMILIES`, else a family a plugin registered
    (kind ``family``) in ``registry`` (None: the installed plugins); an error lists close matches."""
    if isinstance(name, Family):
        return name
    if name in FAMILIES:
        return FAMILIES[name]
    from kernelfuse.parts.registry import resolve_registry

    registered = resolve_registry(registry)
    try:
        entry = registered.get("family", str(name))
    except UnknownNameError:
        raise UnknownNameError("family", str(name), all_families(registered)) from None
    if not isinstance(entry.factory, Family):
        raise ValidationError(f"family {name!r} of {entry.provider} is a {type(entry.factory).__name__}, "
                              "not a kernelfuse Family: register a Family object")
    return entry.factory


def all_families(registry: Registry | None = None) -> dict[str, Family]:
    """:data:`FAMILIES` and the families registered in ``registry`` (kind ``family``; None: the
    installed plugins), by name; a registered family under a built-in's name is not among them."""
    from kernelfuse.parts.registry import resolve_registry

    found = dict(FAMILIES)
    for entry in resolve_registry(registry):
        if entry.kind == "family" and isinstance(entry.factory, Family):
            found.setdefault(entry.factory.name, entry.factory)
    return found
