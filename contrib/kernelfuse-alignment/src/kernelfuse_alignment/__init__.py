"""The ``align`` heuristic of Cortes, Mohri and Rostamizadeh ("Algorithms for Learning Kernels
Based on Centered Alignment", JMLR 13, 2012, section 4.1), as a kernelfuse solver ``alignment``.

Each kernel gets the weight of its centred alignment with the target,
``rho_m = <K_m^c, y y'>_F / (||K_m^c||_F ||y y'||_F)`` with ``K^c = H K H``,
``H = I - 11'/N``: ``d_m = max(rho_m, 0) / sum_k max(rho_k, 0)`` (uniform
if no kernel aligns positively).  Then one SVM on ``K(d) = sum_m d_m K_m``:
a :class:`kernelfuse.TwoStageMKL`, which reports the model in the units of family
``l1_mkl_sq`` (OBJECTIVES.md) with the certified gap to the MKL optimum as information
(status ``completed``; ``converged`` where the gap is at most ``tol``).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse import KernelWeights, Problem, Recipe, TwoStageMKL, hookimpl, simplex_weights


def centred_alignments(K: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``<K_m^c, y y'>_F / (||K_m^c||_F ||y y'||_F)`` for every kernel (one pass)."""
    centred = K - K.mean(axis=1, keepdims=True) - K.mean(axis=2, keepdims=True) \
        + K.mean(axis=(1, 2), keepdims=True)
    norms = np.linalg.norm(centred.reshape(K.shape[0], -1), axis=1)
    products = np.einsum("mij,i,j->m", centred, y, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, products / (norms * float(y @ y)), 0.0)


def alignment_weights(K: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``max(rho_m, 0)`` normalised to the simplex (uniform if none is positive)."""
    return simplex_weights(np.maximum(centred_alignments(K, y), 0.0))


@attrs.define
class AlignmentMKL(TwoStageMKL):
    """Kernel weights from centred alignment, then one SVM on the combined kernel."""

    name: ClassVar[str] = "alignment"

    def weights(self, problem: Problem) -> KernelWeights:
        return KernelWeights(alignment_weights(problem.K, problem.y), {"kernel_passes": 1.0})  # one pass


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    recipe = Recipe("alignment", AlignmentMKL, parts={"svm_solver": ("svm_solver", "active-set")},
                    description="kernel weights by centred alignment (Cortes et al. 2012), then one SVM")
    registry.add("recipe", recipe.name, recipe, description=recipe.description)
