"""What a worker computes on one row block: features, and the solver's passes over them.

A block holds ``Phi_b`` (``n_b x D``): the explicit features of the ``M`` kernels side by side,
kernel ``m`` in columns ``offsets[m]:offsets[m + 1]``, before the per-column normalisation
scales ``s`` (unit trace), which the solve folds into its vectors: the model's decision values
are ``f = Phi_b (s * v) + b``.  Every function here is plain NumPy on one block, so that a task
lost with its worker is recomputed from the block alone.  The products read the block by row
chunks of :data:`CHUNK_ROWS` (a few MiB, in cache), so that ``Phi_b w`` and ``Phi_b' rho`` of
one pass read the block from memory once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.linalg.blas import dsyrk as syrk

from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.parts.loss import Loss

#: Rows of a block multiplied at a time: 128 rows of 2,000 float64 features are 2 MiB, which a
#: core's cache keeps between the chunk's two products (measured: a pass then costs 1.2x NumPy's
#: two matrix-vector products over the block, against 2.2x for chunks of 256 rows).
CHUNK_ROWS = 128
#: Rows of the curvature sample per symmetric rank-k update (``dsyrk``): enough that the update is
#: bound by its arithmetic, not by reading and writing the ``(D + 1)^2`` sum.
HESSIAN_CHUNK_ROWS = 2048


def block_features(X: np.ndarray, specs: Sequence[KernelSpec], normalization: str,
                   offsets: np.ndarray) -> np.ndarray:
    """``[phi_1(x) ... phi_M(x)]`` for the rows of ``X`` (``n_b x D``, kernel ``m`` in the columns
    ``offsets[m]:offsets[m + 1]``), written kernel by kernel into one array (the block's bytes and
    one kernel's features at a time); with ``"spherical"`` each kernel's features of a row divided
    by their norm (``k(x, x) = 1``)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], int(offsets[-1])))
    for m, spec in enumerate(specs):
        phi = spec.function.features(spec.columns(X))
        if normalization == "spherical":
            norms = np.sqrt(np.einsum("ij,ij->i", phi, phi))
            phi /= np.where(norms > 0, norms, 1.0)[:, None]
        out[:, offsets[m]:offsets[m + 1]] = phi
    return out


def block_statistics(Phi: np.ndarray) -> np.ndarray:
    """``[sum_i Phi_ij^2 for every column j, n_b]``: the squared column norms (the kernels' traces
    summed over their columns) and the rows."""
    return np.append(np.einsum("ij,ij->j", Phi, Phi), Phi.shape[0])


def margins_and_gradient(Phi: np.ndarray, y: np.ndarray, loss: Loss, v: np.ndarray, b: float,
                         hessian_stride: int) -> tuple[np.ndarray, np.ndarray]:
    """One pass at the model ``(v, b)`` (``v`` already times the scales): the margins
    ``f = Phi v + b``, and the flat partial sums ``[sum loss, sum rho+, sum rho-, Phi' rho+,
    Phi' rho-, H, curved]`` with ``rho = loss'(f)`` split by sign (``rho+ >= 0``, ``rho- <= 0``,
    the dual point's two sides), ``H`` the curvature ``[Phi 1]' diag(loss''(f)) [Phi 1]`` of every
    ``hessian_stride``-th row, times the stride (an estimate of the block's; empty for 0), and
    ``curved`` the rows where ``loss''(f) > 0`` (only they add to ``H``: the next stride's measure)."""
    n, D = Phi.shape
    f = np.empty(n)
    positive, negative = np.zeros(D), np.zeros(D)
    total = positive_sum = negative_sum = 0.0
    for start in range(0, n, CHUNK_ROWS):
        chunk = Phi[start:start + CHUNK_ROWS]
        rows = slice(start, start + chunk.shape[0])
        f[rows] = chunk @ v + b
        total += float(np.sum(loss.value(y[rows], f[rows])))
        rho = loss.derivative(y[rows], f[rows])
        up, down = np.maximum(rho, 0.0), np.minimum(rho, 0.0)
        positive_sum += float(up.sum())
        negative_sum += float(down.sum())
        sides = np.vstack((up, down)) @ chunk
        positive += sides[0]
        negative += sides[1]
    hessian = np.zeros(0)
    if hessian_stride > 0:
        sample = np.arange(0, n, hessian_stride)
        root = np.sqrt(loss.second_derivative(y[sample], f[sample]) * hessian_stride)
        curved = root > 0  # rows of zero curvature add nothing (the smoothed hinge's outside its band)
        sample, root = sample[curved], root[curved]
        H = np.zeros((D + 1, D + 1), order="F")
        for start in range(0, sample.size, HESSIAN_CHUNK_ROWS):
            picked = sample[start:start + HESSIAN_CHUNK_ROWS]
            weight = root[start:start + HESSIAN_CHUNK_ROWS, None]
            weighted = np.hstack((Phi[picked], np.ones((picked.size, 1)))) * weight
            H = syrk(1.0, weighted, beta=1.0, c=H, trans=1, overwrite_c=True)  # the upper triangle
        hessian = (np.triu(H) + np.triu(H, 1).T).ravel()
    curved = np.count_nonzero(loss.second_derivative(y, f) > 0)
    return f, np.concatenate(([total, positive_sum, negative_sum], positive, negative, hessian, [curved]))


def line_values(f: np.ndarray, Phi: np.ndarray, y: np.ndarray, loss: Loss, direction: np.ndarray,
                intercept_step: float, steps: np.ndarray) -> np.ndarray:
    """``sum_i loss(y_i, f_i + t (Phi d + db)_i)`` for each step ``t`` of ``steps``: a line search's
    trial values from one pass (``direction`` already times the scales)."""
    out = np.zeros(steps.size)
    for start in range(0, f.size, CHUNK_ROWS):
        rows = slice(start, start + CHUNK_ROWS)
        moved = Phi[rows] @ direction + intercept_step
        trial = f[rows][None, :] + steps[:, None] * moved[None, :]
        out += np.sum(loss.value(y[rows][None, :], trial), axis=1)
    return out


def conjugate_sums(f: np.ndarray, y: np.ndarray, loss: Loss, positive_scale: float,
                   negative_scale: float, steps: np.ndarray) -> np.ndarray:
    """``sum_i loss*(y_i, t rho'_i)`` for each ``t`` of ``steps``, at the dual point
    ``rho' = a rho+ + c rho-`` of ``rho = loss'(f)`` (``a``, ``c``: the scales of its two sides)."""
    rho = loss.derivative(y, f)
    scaled = np.where(rho > 0, positive_scale * rho, negative_scale * rho)
    return np.array([float(np.sum(loss.conjugate(y, t * scaled))) for t in steps])
