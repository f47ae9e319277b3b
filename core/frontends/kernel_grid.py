"""The kernel grids of the SimpleMKL / SpicyMKL / mirrorVSKL experiments, and the estimators' grid.

:func:`kernel_grid`: Gaussian kernels of widths {0.1, 0.25, 0.5, 0.75, 1, 2, ..., 20} (the
SpicyMKL experiments) and polynomial kernels of degree 1, 2, 3, each on every single feature and
on all features together: 27 x (d + 1) kernels for d features (on standardised features, as in
the papers; widths are used as given).  Groups: by feature set (0 = all features, j + 1 =
feature j) or by kernel type (0 = Gaussian, 1 = polynomial).

The estimators' default is :func:`view_grid` on every feature view, all features being one view
where none are given: Gaussians whose widths are 0.25 to 4 times the view's median distance
between training rows, and the linear kernel, six kernels a view whatever its size.  Chosen by
the accuracy protocol on its choice splits (``benchmarks/default_choice.py``; docs/estimators.md,
"The default kernel grid"): against SimpleMKL's widths on every feature and on all features,
it was not significantly worse than the better baseline on any set, where the papers' grid fell
behind the RBF SVC on banana.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.parts.registry import Registry, resolve_registry
from kernelfuse.validation import Domain, positive, positive_count

GAUSSIAN_WIDTHS: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, *map(float, range(1, 21)))
#: SimpleMKL's Gaussian widths (Rakotomamonjy et al. 2008, section 5.1).
SIMPLEMKL_WIDTHS: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 7.0, 10.0, 12.0, 15.0, 17.0, 20.0)
POLYNOMIAL_DEGREES: tuple[int, ...] = (1, 2, 3)
GROUPINGS = ("feature", "type")
#: The Gaussian widths of :func:`view_grid`, as multiples of the view's median distance between
#: training rows (the median heuristic's width, and a factor of 2 and 4 either side).
VIEW_MEDIAN_WIDTHS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)


def view_grid(median_widths: Sequence[float] = VIEW_MEDIAN_WIDTHS, *,
              registry: Registry | None = None) -> list[KernelSpec]:
    """The estimators' kernels for one feature view (all features where no views are given):
    Gaussians of width ``w`` times the view's median distance between training rows, for ``w``
    in ``median_widths``, and the linear kernel; specs without features, which the estimators
    apply to each view's columns and fit on its training rows (:meth:`KernelSpec.fitted`).
    The kernels come from ``registry`` (None: the installed plugins)."""
    registry = resolve_registry(registry)
    widths = _checked_list("median_widths", median_widths, positive)
    return [*(KernelSpec(registry.create("kernel", "gaussian", width=w, relative_to="median"),
                         label=f"gaussian(width={w:g} x median)") for w in widths),
            KernelSpec(registry.create("kernel", "linear"), label="linear")]


def kernel_grid(
    n_features: int,
    widths: Sequence[float] = GAUSSIAN_WIDTHS,
    degrees: Sequence[int] = POLYNOMIAL_DEGREES,
    group_by: str = "feature",
    feature_names: Sequence[str] | None = None,
    *,
    registry: Registry | None = None,
) -> list[KernelSpec]:
    """``(len(widths) + len(degrees)) * (n_features + 1)`` specs; see the module docstring.

    ``feature_names`` only changes the labels (``"gaussian(width=1) on area"``).  The kernels
    come from ``registry`` (None: the installed plugins).
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
    registry = resolve_registry(registry)
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
