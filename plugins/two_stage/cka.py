"""Centred-alignment maximisation (Cortes, Mohri and Rostamizadeh 2012): MKLpy's ``CKA``.

Cortes, Mohri and Rostamizadeh, "Algorithms for learning kernels based on centered alignment",
JMLR 13, 2012, section 4.2 ("alignment maximization", proposition 9): the weights ``mu`` of
``K_mu = sum_m mu_m K_m`` maximising the centred alignment ``rho(K_mu, y y')`` over ``mu >= 0``,
``||mu||_2 = 1``, are ``mu = v* / ||v*||`` with

    v* = argmin_{v >= 0}  v' M v - 2 v' a,   M_kl = <K_k^c, K_l^c>_F,   a_k = <K_k^c, y y'>_F,

``K^c = H K H`` the centred kernels.  Solved exactly as a non-negative least-squares problem
(``v'Mv - 2v'a = ||R v - t||^2 - ||t||^2`` with ``M = R'R``, ``R' t = a``; Lawson-Hanson,
scipy's ``nnls``), then scaled to the simplex, ``d = v* / sum v*`` (the direction is what the
method learns; its scale is the SVM's C).  MKLpy 0.6 solves ``M v = a`` without the constraint
``v >= 0``: the two agree whenever ``M^{-1} a >= 0``; otherwise MKLpy's combination has negative
weights (and may not be PSD) where this one sets them to 0.  Deterministic.

Not the ``alignment`` solver of the contrib package ``kernelfuse-alignment``, which weights
each kernel by its own centred alignment (the paper's ``align`` heuristic, section 4.1).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL, simplex_weights
from kernelfuse.kernels.combined import quadratic_forms
from kernelfuse.numerics.geometry import centered
from kernelfuse.problem.instance import Problem


def alignment_system(K: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M`` (M, M) and ``a`` (M,) with one centred kernel in memory at a time: ``H`` is a
    projector, so ``<K_k^c, K_l^c> = <K_k^c, K_l>`` and ``a_k = (Hy)' K_k (Hy)``, ``Hy = y - mean(y)``."""
    flat = K.reshape(K.shape[0], -1)
    M = np.empty((K.shape[0], K.shape[0]))
    for m, Km in enumerate(K):
        M[m] = flat @ centered(Km).reshape(-1)
    return (M + M.T) / 2, quadratic_forms(K, y - y.mean())


def alignmax_weights(K: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``v* = argmin_{v >= 0} v'Mv - 2v'a`` scaled to the simplex."""
    from scipy.optimize import nnls

    M, a = alignment_system(K, y)
    eigenvalues, vectors = np.linalg.eigh(M)
    keep = eigenvalues > max(eigenvalues[-1], 0.0) * 1e-12
    R = np.sqrt(eigenvalues[keep])[:, None] * vectors[:, keep].T
    t = (vectors[:, keep].T @ a) / np.sqrt(eigenvalues[keep])
    v, _ = nnls(R, t, maxiter=50 * M.shape[0])
    return simplex_weights(v)


@attrs.define
class CenteredAlignment(TwoStageMKL):
    """Weights maximising the centred alignment (Cortes et al. 2012), then one SVM."""

    name: ClassVar[str] = "cka"

    def weights(self, problem: Problem) -> KernelWeights:
        return KernelWeights(alignmax_weights(problem.K, problem.y), {"kernel_passes": float(problem.K.shape[0])})
