"""The ``align`` heuristic of Cortes, Mohri and Rostamizadeh ("Algorithms for Learning Kernels
Based on Centered Alignment", JMLR 13, 2012, section 4.1), as a kernelfuse solver ``alignment``.

Each kernel gets the weight of its centred alignment with the target,
``rho_m = <K_m^c, y y'>_F / (||K_m^c||_F ||y y'||_F)`` with ``K^c = H K H``,
``H = I - 11'/N``: ``d_m = max(rho_m, 0) / sum_k max(rho_k, 0)`` (uniform
if no kernel aligns positively).  Then one SVM on ``K(d) = sum_m d_m K_m``
(the registered SVM solver part).  The model is reported in the units of
family ``l1_mkl_sq`` (OBJECTIVES.md): ``coef_m = d_m (alpha * y)``, the
SVM's intercept, the family objective at that model (an upper bound on the
optimum: the weights are not optimised), and as ``dual_objective`` the
certified bound at the SVM's ``alpha`` that kernelfuse's average-kernel
baseline reports, so ``gap`` says how far the heuristic is from MKL, as
information.  As for that baseline, ``status`` is ``completed`` (the
heuristic does not optimise the family objective; no warning), and
``converged`` where the gap is at most ``tol``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse import (
    History,
    Model,
    Problem,
    Recipe,
    Solver,
    SVMSolver,
    hookimpl,
    svm_at_weights,
)


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
    positive = np.maximum(centred_alignments(K, y), 0.0)
    total = positive.sum()
    return positive / total if total > 0 else np.full(K.shape[0], 1.0 / K.shape[0])


@attrs.define
class AlignmentMKL(Solver):
    """Kernel weights from centred alignment, then one SVM on the combined kernel."""

    name: ClassVar[str] = "alignment"
    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl_sq"})
    svm_solver: SVMSolver
    #: The certified relative gap below which the alignment weights count as the MKL optimum.
    tol: float = 1e-6
    blas_threads: int | None = 1

    def parts(self) -> dict[str, object]:
        return {"svm_solver": self.svm_solver}

    def run(self, problem: Problem, history: History) -> Model:
        d = alignment_weights(problem.K, problem.y)  # one pass
        fit = svm_at_weights(problem, d, self.svm_solver)
        gap = history.record(fit.objective, fit.lower_bound, svm_calls=1, kernel_passes=1 + fit.kernel_passes).gap
        # Solver.solve reports it converged where the certified gap is at most tol
        return Model(coef=fit.coef, intercept=fit.intercept, kernel_weights=d, dual_objective=fit.lower_bound,
                     status="completed",
                     message=f"alignment weights: certified gap {gap:.3g} to the MKL optimum "
                             f"(tol={self.tol:g})")


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    recipe = Recipe("alignment", AlignmentMKL, parts={"svm_solver": ("svm_solver", "active-set")},
                    description="kernel weights by centred alignment (Cortes et al. 2012), then one SVM")
    registry.add("solver", recipe.name, recipe, description=recipe.description)
