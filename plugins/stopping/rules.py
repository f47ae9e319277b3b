"""The outer loop's stopping rules.

* ``gap``: the certified relative gap ``(P_best - L_best) / max(1, |P_best|) <= tol``
  (OBJECTIVES.md units);
* ``objective-change``: ``|P_t - P_{t-1}| / max(1, |P_t|) <= tol`` between
  consecutive answers;
* ``estimate-change``: ``||x_t - x_{t-1}||_1 / ||x_{t-1}||_1 <= tol`` for the
  optimiser's estimate x (ML-MKL-SA, section 3: the averaged kernel and
  label weights, each a point of a simplex, so the ratio is the mean l1
  change per simplex).  With averaged iterates ``x_t - x_{t-1} =
  (z_t - x_{t-1}) / t``: the rule stops once the iterates ``z_t`` stay
  within ``tol * t`` of their average.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from kernelfuse.assembly.result import relative_gap
from kernelfuse.parts.stopping import Progress, StoppingRule


@attrs.frozen
class CertifiedGap(StoppingRule):
    """The certified relative gap ``(P_best - L_best) / max(1, |P_best|)`` is at most tol."""

    name = "gap"
    needs_lower_bound = True

    def reached(self, tol: float, now: Progress, before: Progress | None) -> bool:
        return relative_gap(now.objective, now.lower) <= tol


@attrs.frozen
class ObjectiveChange(StoppingRule):
    """The latest objective changed by at most tol (relative, at least 1) since the last iteration."""

    name = "objective-change"

    def reached(self, tol: float, now: Progress, before: Progress | None) -> bool:
        if before is None or math.isnan(now.latest):
            return False
        return abs(now.latest - before.latest) <= tol * max(1.0, abs(now.latest))


@attrs.frozen
class EstimateChange(StoppingRule):
    """The optimiser's estimate moved by at most tol (l1, relative) since the last iteration."""

    name = "estimate-change"

    def reached(self, tol: float, now: Progress, before: Progress | None) -> bool:
        if before is None:
            return False
        scale = float(np.abs(before.estimate).sum())
        change = float(np.abs(now.estimate - before.estimate).sum())
        return change <= tol * scale
