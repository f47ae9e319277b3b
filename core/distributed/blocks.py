"""What a worker computes on one row block: features, and the solver's passes over them.

A block holds ``Phi_b`` (``n_b x D``): the explicit features of the ``M`` kernels side by side,
kernel ``m`` in columns ``offsets[m]:offsets[m + 1]``, before the per-column normalisation
scales ``s`` (unit trace), which the solve folds into its vectors: the model's decision values
are ``f = Phi_b (s * v) + b``.  Every function here works on one block, so that a task lost with
its worker is recomputed from the block alone, in the block's array namespace: NumPy, or a
library of the Python array API standard on the worker's device (a GPU: PyTorch, CuPy), with
NumPy vectors in and NumPy sums out.  On the CPU the products read the block by row chunks of
:data:`CHUNK_ROWS` (a few MiB, in cache), so that ``Phi_b w`` and ``Phi_b' rho`` of one pass
read the block from memory once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.linalg.blas import dsyrk as syrk

from kernelfuse.kernels.array_backend import array_namespace, clip, like_stack, to_host
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


def placed(block: np.ndarray, to_device: Callable[[np.ndarray], Any] | None) -> Any:
    """A block where the worker computes on it: as it is (``to_device`` None), or moved there."""
    return block if to_device is None else to_device(block)


def distinct_values(y: Any) -> np.ndarray:
    """A block's distinct targets, on the host."""
    return np.unique(to_host(y))


def block_statistics(Phi: Any) -> np.ndarray:
    """``[sum_i Phi_ij^2 for every column j, n_b]``: the squared column norms (the kernels' traces
    summed over their columns) and the rows."""
    xp = array_namespace(Phi)
    return np.append(to_host(xp.sum(Phi * Phi, axis=0)), Phi.shape[0])


def _row_chunks(Phi: Any) -> list[slice]:
    """The row chunks a pass reads: :data:`CHUNK_ROWS` rows on the CPU, all rows at once on a
    device (whose products gain nothing from a cache-sized chunk)."""
    n = Phi.shape[0]
    step = CHUNK_ROWS if isinstance(Phi, np.ndarray) else max(1, n)
    return [slice(start, min(n, start + step)) for start in range(0, n, step)]


def margins_and_gradient(Phi: Any, y: Any, loss: Loss, v: np.ndarray, b: float,
                         hessian_stride: int) -> tuple[Any, np.ndarray]:
    """One pass at the model ``(v, b)`` (``v`` already times the scales): the margins
    ``f = Phi v + b``, and the flat partial sums ``[sum loss, sum rho+, sum rho-, Phi' rho+,
    Phi' rho-, H, curved]`` with ``rho = loss'(f)`` split by sign (``rho+ >= 0``, ``rho- <= 0``,
    the dual point's two sides), ``H`` the curvature ``[Phi 1]' diag(loss''(f)) [Phi 1]`` of every
    ``hessian_stride``-th row, times the stride (an estimate of the block's; empty for 0), and
    ``curved`` the rows where ``loss''(f) > 0`` (only they add to ``H``: the next stride's measure).
    The margins stay where the block is; the sums come back as one NumPy array."""
    xp = array_namespace(Phi)
    v = like_stack(v, Phi)
    f = xp.empty(Phi.shape[0], dtype=xp.float64, device=Phi.device)
    positive, negative = xp.zeros_like(v), xp.zeros_like(v)
    total = positive_sum = negative_sum = xp.sum(v[:0])  # 0-d zeros where v is
    for rows in _row_chunks(Phi):
        chunk = Phi[rows, ...]
        f[rows] = chunk @ v + float(b)
        rho = loss.derivative(y[rows], f[rows])
        up, down = clip(rho, 0.0), clip(rho, None, 0.0)
        total, positive_sum = total + xp.sum(loss.value(y[rows], f[rows])), positive_sum + xp.sum(up)
        negative_sum = negative_sum + xp.sum(down)
        sides = xp.stack((up, down)) @ chunk
        positive += sides[0, ...]
        negative += sides[1, ...]
    second = loss.second_derivative(y, f)
    hessian = xp.zeros_like(v[:0])
    if hessian_stride > 0:
        weights = second[::hessian_stride] * hessian_stride
        hessian = xp.reshape(_sampled_curvature(xp, Phi, hessian_stride, weights), (-1,))
    curved_rows = xp.sum(xp.astype(second > 0, xp.float64))
    totals = xp.stack((total, positive_sum, negative_sum))
    return f, to_host(xp.concat((totals, positive, negative, hessian, xp.reshape(curved_rows, (1,)))))


def _sampled_curvature(xp: Any, Phi: Any, stride: int, weights: Any) -> Any:
    """``sum_i w_i [phi_i 1]' [phi_i 1]`` over every ``stride``-th row ``i`` with weight ``w_i > 0``
    (rows of zero curvature add nothing: the smoothed hinge's outside its band), symmetric
    (``D + 1`` square).  On the CPU by symmetric rank-k updates (``dsyrk``) of
    :data:`HESSIAN_CHUNK_ROWS` rows copied at a time, elsewhere one product of those rows."""
    curved = weights > 0
    if xp is not np:
        rows = Phi[::stride, ...][curved]
        ones = xp.ones((rows.shape[0], 1), dtype=xp.float64, device=rows.device)
        weighted = xp.concat((rows, ones), axis=1) * xp.sqrt(weights[curved])[:, None]
        return xp.matrix_transpose(weighted) @ weighted
    sample, root = np.arange(0, Phi.shape[0], stride)[curved], np.sqrt(weights[curved])
    D = Phi.shape[1]
    H = np.zeros((D + 1, D + 1), order="F")
    for start in range(0, sample.size, HESSIAN_CHUNK_ROWS):
        picked = sample[start:start + HESSIAN_CHUNK_ROWS]
        weighted = np.hstack((Phi[picked], np.ones((picked.size, 1)))) * root[start:start + HESSIAN_CHUNK_ROWS, None]
        H = syrk(1.0, weighted, beta=1.0, c=H, trans=1, overwrite_c=True)  # the upper triangle
    return np.triu(H) + np.triu(H, 1).T


def line_values(f: Any, Phi: Any, y: Any, loss: Loss, direction: np.ndarray,
                intercept_step: float, steps: np.ndarray) -> np.ndarray:
    """``sum_i loss(y_i, f_i + t (Phi d + db)_i)`` for each step ``t`` of ``steps``: a line search's
    trial values from one pass (``direction`` already times the scales)."""
    xp = array_namespace(Phi)
    direction, steps = like_stack(direction, Phi), like_stack(steps, Phi)
    out = xp.zeros_like(steps)
    for rows in _row_chunks(Phi):
        moved = Phi[rows, ...] @ direction + float(intercept_step)
        trial = f[rows][None, :] + steps[:, None] * moved[None, :]
        out += xp.sum(loss.value(y[rows][None, :], trial), axis=1)
    return to_host(out)


def conjugate_sums(f: Any, y: Any, loss: Loss, positive_scale: float,
                   negative_scale: float, steps: np.ndarray) -> np.ndarray:
    """``sum_i loss*(y_i, t rho'_i)`` for each ``t`` of ``steps``, at the dual point
    ``rho' = a rho+ + c rho-`` of ``rho = loss'(f)`` (``a``, ``c``: the scales of its two sides)."""
    xp = array_namespace(f)
    rho = loss.derivative(y, f)
    scaled = xp.where(rho > 0, float(positive_scale) * rho, float(negative_scale) * rho)
    steps = like_stack(steps, f)
    return to_host(xp.sum(loss.conjugate(y[None, :], steps[:, None] * scaled[None, :]), axis=1))
