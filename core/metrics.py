"""``kernelfuse.metrics``: the metrics of :mod:`kernelfuse.frontends.metrics` under the short name
MKLpy's users know (``MKLpy.metrics``): kernel alignment, centred alignment, radius, margin, and
the multi-label average precision."""

from kernelfuse.frontends.metrics import (
    alignment,
    average_precision_per_label,
    centered_alignment,
    margin,
    mean_average_precision,
    radius,
)

__all__ = ["alignment", "average_precision_per_label", "centered_alignment", "margin",
           "mean_average_precision", "radius"]
