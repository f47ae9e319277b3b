"""FHeuristic (Qiu and Lane): kernel weights in proportion to each kernel's alignment with the labels.

Qiu and Lane, "A framework for multiple kernel support vector regression and its applications
to siRNA efficacy prediction", IEEE/ACM TCBB 6(2), 2009, section 3.2 (the "F" heuristic):

    d_m = A(K_m, y y') / sum_k A(K_k, y y'),   A(K, T) = <K, T>_F / (||K||_F ||T||_F),

the (uncentred) kernel-target alignment of Cristianini et al.; ``A(K_m, y y') = y'K_m y /
(n ||K_m||_F) >= 0`` for PSD kernels.  MKLpy 0.6's ``FHeuristic`` computes the same weights.
Deterministic; no objective of its own is optimised.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL, simplex_weights
from kernelfuse.numerics.geometry import alignment
from kernelfuse.problem.instance import Problem


def fheuristic_weights(K: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``A(K_m, y y')`` normalised to the simplex."""
    target = np.outer(y, y)
    return simplex_weights(np.array([max(alignment(Km, target), 0.0) for Km in K]))


@attrs.define
class FHeuristic(TwoStageMKL):
    """Weights by kernel-target alignment (Qiu and Lane 2009), then one SVM."""

    name: ClassVar[str] = "fheuristic"

    def weights(self, problem: Problem) -> KernelWeights:
        return KernelWeights(fheuristic_weights(problem.K, problem.y), {"kernel_passes": 1.0})
