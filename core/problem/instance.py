"""A validated MKL problem: kernels, targets, family, loss and parameters."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels import array_backend
from kernelfuse.kernels.rows import KernelRows
from kernelfuse.parts.loss import Loss, WeightedLoss
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.problem.families import Family, get_family
from kernelfuse.validation import check_groups, check_kernels, check_psd_value, check_sample_weight, check_targets


@attrs.frozen(eq=False)
class Problem:
    """An instance of one family of OBJECTIVES.md, already validated.

    Build it with :meth:`Problem.create`, which checks everything; the
    attributes are then trusted by solvers.

    ``K`` float64 (M, N, N), or :class:`~kernelfuse.kernels.rows.KernelRows` read row by
    row (for the solvers that declare ``reads_kernel_rows``); ``y`` targets: (N,) floats in {-1, +1} or real,
    (N,) class indices for multiclass (``classes`` holds the labels), or
    (N, L) in {-1, +1} for multi-label; ``groups`` (M,) ints 0..G-1 for
    families with groups, else None; ``params`` the family parameters with
    defaults filled in; ``largest_entry`` the largest ``|K_ij|`` of a stack, read
    by the validation (None for kernel rows and factors).

    ``sample_weight`` (N,) the per-sample weights ``w_i >= 0`` of the loss, or None (every
    ``w_i = 1``): the family's data term ``sum_i loss(y_i, f_i)`` of OBJECTIVES.md becomes
    ``sum_i w_i loss(y_i, f_i)`` (so ``l1_mkl``: ``P = sum_i w_i loss_i + C sum_m ||f_m||``;
    ``l1_mkl_sq``: ``0.5 (sum_m ||f_m||)^2 + C sum_i w_i hinge_i``), and ``loss`` is then that
    data term, a :class:`~kernelfuse.parts.loss.WeightedLoss`: every objective, certificate and
    solver reading ``loss`` reads the weighted problem.  Only solvers declaring the family in
    ``weighted_families`` take it (:meth:`kernelfuse.assembly.solver.Solver.check_problem`).
    """

    # Any: a NumPy stack, a device array or KernelRows; which one a solver receives, the
    # capabilities it declares decide (it reads one kind only).
    K: Any
    y: np.ndarray
    family: Family
    loss: Loss
    params: Mapping[str, float]
    groups: np.ndarray | None = None
    classes: np.ndarray | None = None
    largest_entry: float | None = None
    sample_weight: np.ndarray | None = None

    @functools.cached_property
    def regularizer(self) -> Regularizer:
        """The family's penalty ``Omega`` with this problem's parameters and groups, built once:
        the one definition of the penalty's numbers that every part reads (value, prox, dual norm,
        conjugate), never a copy of them."""
        if self.family.regularizer is None:
            raise ValidationError(f"family {self.family.name} has no regulariser of the model alone")
        return self.family.regularizer(self.params, self.groups)

    @property
    def n_kernels(self) -> int:
        return int(self.K.shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.K.shape[1])

    @property
    def n_outputs(self) -> int:
        """1, or the number of classes (multiclass loss), or of labels."""
        if self.family.target == "multilabel":
            return int(self.y.shape[1])
        if self.loss.target == "multiclass":
            return int(self.classes.size)  # type: ignore[union-attr]
        return 1

    @property
    def coef_shape(self) -> tuple[int, ...]:
        """Shape of ``coef`` for this problem (OBJECTIVES.md)."""
        if self.n_outputs == 1 and self.family.target != "multilabel":
            return (self.n_kernels, self.n_samples)
        return (self.n_kernels, self.n_outputs, self.n_samples)

    @classmethod
    def create(
        cls,
        K: Any,
        y: object,
        family: str | Family,
        *,
        loss: str | Loss | None = None,
        loss_params: Mapping[str, Any] | None = None,
        groups: object = None,
        check_psd: str | bool = "auto",
        registry: Any = None,
        sample_weight: object = None,
        **params: Any,
    ) -> Problem:
        """Validate everything and build the problem.

        ``loss`` is a registered loss name or a :class:`Loss`; by default the
        family's own (``pnorm_mkl`` picks Crammer-Singer for more than two
        classes).  ``params`` are the family parameters of OBJECTIVES.md.  ``check_psd``:
        how hard PSD kernels are checked (:data:`kernelfuse.validation.CHECK_PSD`: ``"auto"``
        a certificate, True the exact eigenvalues, False none).  ``sample_weight``: None, or
        a weight ``>= 0`` per sample (not all zero), checked by
        :func:`~kernelfuse.validation.check_sample_weight`.
        """
        fam = get_family(family, registry)
        check_psd = check_psd_value(check_psd)
        largest_entry = None
        if isinstance(K, KernelRows):  # rows on demand: shape and diagonal checked, not PSD
            if not np.isfinite(K.diagonal()).all():
                raise ValidationError("the kernel rows have NaN or inf on their diagonal")
        elif array_backend.is_device_array(K):  # a stack of CuPy, PyTorch, ...: checked on its device
            K, largest_entry = array_backend.check_kernels(K, require_psd=fam.requires_psd, check_psd=check_psd)
        else:
            K, largest_entry = check_kernels(K, require_psd=fam.requires_psd, check_psd=check_psd)
        n_kernels, n_samples = K.shape[0], K.shape[1]
        resolved = fam.resolve_params(params)

        loss_obj = _resolve_loss(fam, loss, loss_params or {}, y, registry)
        target = fam.target if fam.target == "multilabel" else loss_obj.target
        y_checked, classes = check_targets(y, target, n_samples)
        weights = check_sample_weight(sample_weight, n_samples)
        if weights is not None:
            loss_obj = WeightedLoss(loss_obj, weights)

        if fam.uses_groups:
            group_array = (
                np.zeros(n_kernels, dtype=np.intp) if groups is None
                else check_groups(groups, n_kernels)
            )
        elif groups is not None:
            raise ValidationError(f"family {fam.name} does not use groups, but groups were given")
        else:
            group_array = None
        return cls(K, y_checked, fam, loss_obj, resolved, group_array, classes, largest_entry, weights)


def _is_binary(y: object) -> bool:
    try:
        values = np.unique(np.asarray(y, dtype=float))
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isin(values, (-1.0, 1.0))))


def _resolve_loss(
    family: Family, loss: str | Loss | None, loss_params: Mapping[str, Any],
    y: object, registry: Any,
) -> Loss:
    if not (loss is None or isinstance(loss, (str, Loss))):
        raise ValidationError(f"loss must be a registered loss name, a Loss object or None, got {loss!r}")
    if isinstance(loss, Loss):
        if loss_params:
            raise ValidationError("loss parameters given together with a Loss object")
        loss_obj = loss
    else:
        from kernelfuse.parts.registry import resolve_registry

        registry = resolve_registry(registry)
        if loss is None:
            name = family.default_loss
            if family.target == "class" and not _is_binary(y):
                name = "crammer-singer"
        else:
            name = loss
        try:
            loss_obj = registry.create("loss", name, **loss_params)
        except TypeError as exc:
            raise ValidationError(f"loss {name!r} does not take these parameters: {exc}") from None
    if family.losses is not None and loss_obj.name not in family.losses:
        raise ValidationError(
            f"family {family.name} is defined with loss "
            f"{' or '.join(family.losses)}, not {loss_obj.name!r}"
        )
    if family.losses is None and loss_obj.target not in ("binary", "real"):
        raise ValidationError(
            f"family {family.name} needs a binary or regression loss; "
            f"{loss_obj.name!r} is {loss_obj.target}"
        )
    if family.target == "class" and loss_obj.name == "hinge" and not _is_binary(y):
        raise ValidationError(
            f"family {family.name} with the hinge loss needs labels in {{-1, +1}}; "
            "for more classes use loss 'crammer-singer' (the default then)"
        )
    return loss_obj
