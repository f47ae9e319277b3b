"""The kernel grid of the SimpleMKL / SpicyMKL / mirrorVSKL experiments.

Gaussian kernels of widths {0.1, 0.25, 0.5, 0.75, 1, 2, ..., 20} and
polynomial kernels of degree 1, 2, 3, each on every single feature and on
all features together: 27 x (d + 1) kernels for d features (on standardised
features, as in the papers; widths are used as given).  Groups: by feature
set (0 = all features, j + 1 = feature j) or by kernel type
(0 = Gaussian, 1 = polynomial).  The estimators' default grid is :func:`sized_grid`: this grid
thinned to fit :data:`GRID_BYTES` and the memory budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.parts.registry import get_registry
from kernelfuse.validation import Domain, positive, positive_count

GAUSSIAN_WIDTHS: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, *map(float, range(1, 21)))
POLYNOMIAL_DEGREES: tuple[int, ...] = (1, 2, 3)
GROUPINGS = ("feature", "type")
#: The most bytes the estimators' default grid may take as a training stack (or the memory
#: budget, when smaller): 512 MiB (docs/estimators.md, "The default kernel grid").
GRID_BYTES = 512 * 2**20


def sized_grid(n_features: int, n_samples: int, max_bytes: int, itemsize: int = 8,
               feature_names: Sequence[str] | None = None) -> list[KernelSpec]:
    """The grid of :func:`kernel_grid` thinned until its ``(M, N, N)`` stack fits ``max_bytes``.

    With room for ``R = max_bytes // (N^2 itemsize)`` kernels: the whole grid where it fits;
    else the polynomial degrees and ``w`` of the widths, evenly spaced over
    :data:`GAUSSIAN_WIDTHS` (the smallest and the largest kept), on all features and on each,
    with ``w`` the most that fits (``(w + 3) (d + 1) <= R``); else, where not even one width
    per feature set fits, the kernels on all features only, ``max(1, R - 3)`` widths.
    """
    room = max_bytes // max(1, n_samples**2 * itemsize)
    sets, degrees = n_features + 1, len(POLYNOMIAL_DEGREES)
    if (len(GAUSSIAN_WIDTHS) + degrees) * sets <= room:
        return kernel_grid(n_features, feature_names=feature_names)
    per_set = room // sets - degrees
    if per_set >= 1:
        return kernel_grid(n_features, widths=_spread(per_set), feature_names=feature_names)
    widths = _spread(max(1, min(len(GAUSSIAN_WIDTHS), room - degrees)))
    return kernel_grid(n_features, widths=widths, feature_names=feature_names)[:len(widths) + degrees]


def _spread(count: int) -> tuple[float, ...]:
    """``count`` widths of :data:`GAUSSIAN_WIDTHS` at evenly spaced positions (one: the middle)."""
    last = len(GAUSSIAN_WIDTHS) - 1
    positions = [last // 2] if count == 1 else sorted({round(i * last / (count - 1)) for i in range(count)})
    return tuple(GAUSSIAN_WIDTHS[i] for i in positions)


def kernel_grid(
    n_features: int,
    widths: Sequence[float] = GAUSSIAN_WIDTHS,
    degrees: Sequence[int] = POLYNOMIAL_DEGREES,
    group_by: str = "feature",
    feature_names: Sequence[str] | None = None,
) -> list[KernelSpec]:
    """``(len(widths) + len(degrees)) * (n_features + 1)`` specs; see the module docstring.

    ``feature_names`` only changes the labels (``"gaussian(width=1) on area"``).
    """
    if group_by not in GROUPINGS:
        raise ValidationError(f"group_by must be one of {', '.join(GROUPINGS)}, got {group_by!r}")
    if n_features < 1:
        raise ValidationError(f"n_features must be >= 1, got {n_features}")
    widths = _checked_list("widths", widths, positive)
    degrees = _checked_list("degrees", degrees, positive_count)
    if feature_names is not None and len(feature_names) != n_features:
        raise ValidationError(
            f"feature_names has {len(feature_names)} names for {n_features} features"
        )
    registry = get_registry()
    specs = []
    for index, features in enumerate([None, *((j,) for j in range(n_features))]):
        if features is None:
            where = "all"
        else:
            where = f"x{features[0]}" if feature_names is None else str(feature_names[features[0]])
        for width in widths:
            specs.append(KernelSpec(registry.create("kernel", "gaussian", width=width), features,
                                    index if group_by == "feature" else 0,
                                    f"gaussian(width={width:g}) on {where}"))
        for degree in degrees:
            specs.append(KernelSpec(registry.create("kernel", "polynomial", degree=degree), features,
                                    index if group_by == "feature" else 1,
                                    f"polynomial(degree={degree}) on {where}"))
    return specs


def _checked_list(name: str, values: object, domain: Domain) -> list[Any]:
    """``values`` as a list, each entry checked by ``domain`` and named ``name[i]``."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise ValidationError(f"{name} must be a list of numbers, got {values!r}")
    return [domain.check(f"{name}[{i}]", value) for i, value in enumerate(values)]
