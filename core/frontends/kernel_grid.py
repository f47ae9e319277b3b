"""The kernel grids of the SimpleMKL / SpicyMKL / mirrorVSKL experiments, and the estimators' grid.

:func:`kernel_grid`: Gaussian kernels of widths {0.1, 0.25, 0.5, 0.75, 1, 2, ..., 20} (the
SpicyMKL experiments) and polynomial kernels of degree 1, 2, 3, each on every single feature and
on all features together: 27 x (d + 1) kernels for d features (on standardised features, as in
the papers; widths are used as given).  Groups: by feature set (0 = all features, j + 1 =
feature j) or by kernel type (0 = Gaussian, 1 = polynomial).

The estimators' default is :func:`default_grid`: SimpleMKL's widths {0.5, 1, 2, 5, 7, 10, 12, 15,
17, 20} (Rakotomamonjy et al. 2008, section 5.1) and the three degrees on every feature set, with
one Gaussian of width 0.1 on all features, thinned by :func:`sized_grid` to fit the memory
budget.  With feature views, each view gets :func:`view_grid`: Gaussians whose widths are
multiples of the view's median distance, and the linear kernel.  Chosen by the accuracy protocol
(``benchmarks/accuracy.py``; docs/estimators.md, "The default kernel grid"): widths 0.1 and 0.25
on single features overfit (sonar at C = 0.1: 0.795 against 0.867), and the narrow kernel on all features, a
near-identity that acts as a ridge term, is what the noisy sets need (liver 0.686 against 0.707).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.parts.registry import get_registry
from kernelfuse.validation import Domain, positive, positive_count

GAUSSIAN_WIDTHS: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, *map(float, range(1, 21)))
#: SimpleMKL's Gaussian widths (Rakotomamonjy et al. 2008, section 5.1).
SIMPLEMKL_WIDTHS: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 7.0, 10.0, 12.0, 15.0, 17.0, 20.0)
#: The width of :func:`default_grid`'s Gaussian on all features: near the identity on
#: standardised features, a ridge term that the l1 selection weighs against the smooth kernels.
RIDGE_WIDTH = 0.1
POLYNOMIAL_DEGREES: tuple[int, ...] = (1, 2, 3)
GROUPINGS = ("feature", "type")
#: The Gaussian widths of :func:`view_grid`, as multiples of the view's median distance between
#: training rows (the median heuristic's width, and a factor of 2 and 4 either side).
VIEW_MEDIAN_WIDTHS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)


def default_grid(n_features: int, widths: Sequence[float] = SIMPLEMKL_WIDTHS,
                 feature_names: Sequence[str] | None = None) -> list[KernelSpec]:
    """The estimators' grid: the Gaussian of width :data:`RIDGE_WIDTH` on all features, then
    :func:`kernel_grid` with ``widths`` (SimpleMKL's by default): ``1 + (len(widths) + 3) (d + 1)``
    specs."""
    ridge = kernel_grid(n_features, widths=(RIDGE_WIDTH,), degrees=(), feature_names=feature_names)[0]
    return [ridge, *kernel_grid(n_features, widths=widths, feature_names=feature_names)]


def view_grid(median_widths: Sequence[float] = VIEW_MEDIAN_WIDTHS) -> list[KernelSpec]:
    """The kernels each feature view gets by default: Gaussians of width ``w`` times the view's
    median distance between training rows, for ``w`` in ``median_widths``, and the linear
    kernel; specs without features, which the estimators apply to each view's columns and fit
    on its training rows (:meth:`KernelSpec.fitted`)."""
    registry = get_registry()
    widths = _checked_list("median_widths", median_widths, positive)
    return [*(KernelSpec(registry.create("kernel", "gaussian", width=w, relative_to="median"),
                         label=f"gaussian(width={w:g} x median)") for w in widths),
            KernelSpec(registry.create("kernel", "linear"), label="linear")]


def sized_grid(n_features: int, n_samples: int, max_bytes: int, itemsize: int = 8,
               feature_names: Sequence[str] | None = None) -> list[KernelSpec]:
    """:func:`default_grid` thinned until its ``(M, N, N)`` stack fits ``max_bytes``.

    With room for ``R = max_bytes // (N^2 itemsize)`` kernels: the whole grid where it fits;
    else the ridge kernel, the polynomial degrees and ``w`` of :data:`SIMPLEMKL_WIDTHS`, evenly
    spaced (the smallest and the largest kept), on all features and on each, with ``w`` the most
    that fits (``1 + (w + 3) (d + 1) <= R``); else, where not even one width per feature set
    fits, the kernels on all features only, ``max(1, R - 4)`` widths.
    """
    room = max_bytes // max(1, n_samples**2 * itemsize)
    sets, degrees = n_features + 1, len(POLYNOMIAL_DEGREES)
    if 1 + (len(SIMPLEMKL_WIDTHS) + degrees) * sets <= room:
        return default_grid(n_features, feature_names=feature_names)
    per_set = (room - 1) // sets - degrees
    if per_set >= 1:
        return default_grid(n_features, widths=_spread(per_set), feature_names=feature_names)
    widths = _spread(max(1, min(len(SIMPLEMKL_WIDTHS), room - 1 - degrees)))
    return default_grid(n_features, widths=widths, feature_names=feature_names)[:1 + len(widths) + degrees]


def _spread(count: int) -> tuple[float, ...]:
    """``count`` widths of :data:`SIMPLEMKL_WIDTHS` at evenly spaced positions (one: the middle)."""
    last = len(SIMPLEMKL_WIDTHS) - 1
    positions = [last // 2] if count == 1 else sorted({round(i * last / (count - 1)) for i in range(count)})
    return tuple(SIMPLEMKL_WIDTHS[i] for i in positions)


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
