"""The kernel grid of the SimpleMKL / SpicyMKL / mirrorVSKL experiments.

Gaussian kernels of widths {0.1, 0.25, 0.5, 0.75, 1, 2, ..., 20} and
polynomial kernels of degree 1, 2, 3, each on every single feature and on
all features together: 27 x (d + 1) kernels for d features (on standardised
features, as in the papers; widths are used as given).  Groups: by feature
set (0 = all features, j + 1 = feature j) or by kernel type
(0 = Gaussian, 1 = polynomial).
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
