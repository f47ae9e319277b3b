"""The proximal Newton model of MIKL, solved by a semismooth Newton augmented Lagrangian.

The model of a step (:mod:`.proximal_newton`) is ``min_x F(x) = <c, x - a> + ||B (x - a)||^2 + g(x)``
over the working entries ``x``, ``B`` the kernel entries of the working set against the margin
violators.  Its proximal-point iterations ``x+ = argmin F(x) + ||x - x_k||^2 / (2 sigma)`` are solved
in their dual over ``y`` (one entry per violator, Li, Sun and Toh, "A highly efficient semismooth
Newton augmented Lagrangian method for solving Lasso problems", SIAM J. Optim. 2018, section 3):

``min_y psi(y) = <y, B a> + ||y||^2 / 4 - Phi(y)``,
``Phi(y) = g(x(y)) + <c + B'y, x(y)> + ||x(y) - x_k||^2 / (2 sigma)``,
``x(y) = prox_{sigma g}(x_k - sigma (c + B'y))``,

whose gradient is ``B a + y / 2 - B x(y)`` and whose generalised Hessian is
``I / 2 + sigma B P B'``, ``P`` the prox's generalised Jacobian
(:meth:`~kernelfuse.problem.regularizers.MixedLpq.prox_jacobian`): a positive definite system of
the violators' size, solved by Cholesky, whatever the kernels' conditioning.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse

from kernelfuse.plugins.mikl.mixed_norm_prox import MixedNormProx
from kernelfuse.runtime.deadline import expired

#: The penalty ``sigma`` starts at SIGMA_START / ||B||^2 and grows by SIGMA_GROWTH per proximal
#: point, up to SIGMA_MAX / ||B||^2.
SIGMA_START, SIGMA_GROWTH, SIGMA_MAX = 1e3, 10.0, 1e8
#: Newton steps per proximal point, at most; they stop at this fraction of the first gradient.
NEWTON_STEPS, INNER_DECREASE = 30, 1e-3
#: Armijo's constant and the bound on halvings of the dual line search.
ARMIJO, MAX_HALVINGS = 1e-4, 30


class _Model:
    """``F`` on the masked entries of a block (coef layout, the prox acting on its transpose), and
    the Gram matrices its Newton systems need, kept between steps: ``B B'`` for l2 (the prox's
    Jacobian a multiple of the identity); for l21 (the block is whole groups, the Jacobian's
    diagonal constant on each) one per group, formed when the group first turns active; for p = 1
    the kept entries' Gram, updated by the entries that enter or leave.  ``reads``
    counts the reads of ``B`` (a full read is 1)."""

    def __init__(self, prox: MixedNormProx, B: np.ndarray, start: np.ndarray, mask: np.ndarray) -> None:
        self.regularizer, self.B, self.start, self.mask = prox.regularizer, B, start, mask
        self.uniform = prox.p == 2.0 and prox.q == 2.0  # l2: P = I / (1 + t) everywhere
        self.by_group = prox.p == 2.0 and prox.q == 1.0 and bool(mask.all())
        self.axis = 1 if prox.r == 1 else 0  # the block's axis indexing the groups
        kernels, samples = np.nonzero(mask)
        self.groups = (kernels, samples)[self.axis]
        self.n_groups = mask.shape[self.axis]
        self.grams = np.zeros((self.n_groups, B.shape[0], B.shape[0]) if self.by_group else (0, 0, 0))
        self.formed = np.zeros(self.n_groups, dtype=bool)
        self.kept = np.zeros(B.shape[1], dtype=bool)
        self.gram = np.zeros((B.shape[0], B.shape[0]))
        self.reads = 0.0

    def embed(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.start.shape)  # outside the mask the block is 0 (the working set holds every non-zero)
        out[self.mask] = values
        return out

    def prox(self, values: np.ndarray, step: float) -> np.ndarray:
        return self.regularizer.prox(self.embed(values).T, step).T[self.mask]

    def value(self, values: np.ndarray) -> float:
        return self.regularizer.value(self.embed(values).T)

    def dual(self, centre: np.ndarray, sigma: float, c: np.ndarray, Ba: np.ndarray, y: np.ndarray,
             Bty: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """``psi(y)`` of the proximal point at ``centre`` (``Bty = B'y`` given), and the prox's
        argument ``v``, ``x(y) = prox_{sigma g}(v)`` and ``B x(y)``."""
        v = centre - sigma * (c + Bty)
        x = self.prox(v, sigma)
        Phi = self.value(x) + float(np.dot(c + Bty, x)) + float(np.sum((x - centre) ** 2)) / (2.0 * sigma)
        return float(np.dot(y, Ba) + np.dot(y, y) / 4.0) - Phi, v, x, self.B @ x

    def _groups_of_B(self, groups: np.ndarray) -> np.ndarray:
        """``B``'s columns of ``groups`` as (groups, |S|, group size); reads them."""
        self.reads += groups.size / self.n_groups
        cube = self.B.T.reshape(*self.mask.shape, self.B.shape[0])  # (|T|, |R|, |S|), a view of B
        return np.moveaxis(cube, self.axis, 0)[groups].transpose(0, 2, 1)

    def _diagonal_part(self, scale: np.ndarray) -> np.ndarray:
        """``B diag(scale) B'``."""
        if self.uniform:
            if not self.kept.any():
                self.gram, self.kept[:] = self.B @ self.B.T, True
                self.reads += 1.0
            return scale[0] * self.gram
        if self.by_group:  # sum_g scale_g B_g B_g'
            per_group = self.embed(scale).max(axis=1 - self.axis)
            active = np.flatnonzero(per_group > 0)
            new = active[~self.formed[active]]
            if new.size:
                columns = self._groups_of_B(new)
                self.grams[new] = columns @ columns.transpose(0, 2, 1)
                self.formed[new] = True
            return np.tensordot(per_group[active], self.grams[active], axes=1)
        kept = scale > 0  # p = 1: scale is 0 or 1
        for entries, sign in ((kept & ~self.kept, 1.0), (self.kept & ~kept, -1.0)):
            if entries.any():
                columns = self.B[:, entries]
                self.reads += np.count_nonzero(entries) / self.B.shape[1]
                self.gram += sign * (columns @ columns.T)
        self.kept = kept
        return self.gram.copy()

    def _rank_one_columns(self, vectors: np.ndarray) -> np.ndarray:
        """``B v_g`` for every group, (|S|, groups)."""
        if self.by_group:
            groups = np.flatnonzero(np.any(self.embed(vectors) != 0, axis=1 - self.axis))
            out = np.zeros((self.B.shape[0], self.n_groups))
            block = np.moveaxis(self.embed(vectors), self.axis, 0)[groups]  # (groups, group size)
            out[:, groups] = np.einsum("gsk,gk->sg", self._groups_of_B(groups), block)
            return out
        kept = np.flatnonzero(vectors != 0)
        self.reads += kept.size / self.B.shape[1]
        V = scipy.sparse.csr_matrix((vectors[kept], (kept, self.groups[kept])),
                                    shape=(self.B.shape[1], self.n_groups))
        return np.asarray((V.T @ self.B.T).T)

    def hessian(self, values: np.ndarray, sigma: float) -> np.ndarray:
        """``I / 2 + sigma B P B'`` with ``P`` the prox's Jacobian at ``values``."""
        jacobian = self.regularizer.prox_jacobian(self.embed(values).T, sigma)
        scale, vectors = jacobian.scale.T[self.mask], jacobian.vectors.T[self.mask]
        H = self._diagonal_part(scale)
        if np.any(jacobian.weights != 0):
            W = self._rank_one_columns(vectors)
            H -= (W * jacobian.weights) @ W.T
        H *= sigma
        H[np.diag_indices_from(H)] += 0.5
        return H


def solve_model(prox: MixedNormProx, gradient: np.ndarray, B: np.ndarray, start: np.ndarray,
                mask: np.ndarray, forcing: float, max_iter: int) -> tuple[np.ndarray, int, float]:
    """``argmin_x <gradient, x - start> + ||B (x - start)[mask]||^2 + g(x)`` over ``x`` shaped like
    ``start`` (coef layout), equal to ``start`` (0) outside ``mask``; ``B`` (|S|, mask's entries).
    Stops when the model's gradient mapping (step ``1 / (2 ||B||^2)``) is at most ``forcing`` times
    its value at ``start``, or after ``max_iter`` Newton steps.  Returns ``x``, the Newton steps and
    the reads of ``B`` (products with it, and the Gram matrices formed)."""
    model = _Model(prox, B, start, mask)
    a, c = start[mask], gradient[mask]
    Ba = B @ a
    lipschitz = 2.0 * float(scipy.linalg.eigvalsh(B @ B.T, subset_by_index=[B.shape[0] - 1] * 2)[0]) \
        if B.shape[0] else 0.0
    reads = 2.0
    if lipschitz <= 0.0:  # no violator: the model is linear, its optimum one prox step away
        return model.embed(model.prox(a - c, 1.0)), 0, reads
    step = 1.0 / lipschitz

    def mapping(x: np.ndarray, Bx: np.ndarray) -> float:
        smooth = c + 2.0 * (B.T @ (Bx - Ba))
        return float(np.linalg.norm(x - model.prox(x - step * smooth, step)))

    target = forcing * float(np.linalg.norm(a - model.prox(a - step * c, step)))
    sigma = SIGMA_START * step
    x, y, Bty = a, np.zeros(B.shape[0]), np.zeros(a.size)
    newton = 0
    for _ in range(max_iter):  # proximal points; each takes a Newton step unless its dual is solved
        centre = x
        psi, v, x, Bx = model.dual(centre, sigma, c, Ba, y, Bty)
        reads += 1
        first = math.nan
        for _ in range(NEWTON_STEPS):
            residual = Ba + 0.5 * y - Bx  # the gradient of psi
            size = float(np.linalg.norm(residual))
            first = size if math.isnan(first) else first
            if size <= INNER_DECREASE * first or size == 0.0 or newton >= max_iter or expired():
                break
            direction = scipy.linalg.cho_solve(scipy.linalg.cho_factor(model.hessian(v, sigma)), -residual)
            Btd = B.T @ direction
            reads += 1
            newton += 1
            slope, t = float(np.dot(residual, direction)), 1.0
            for _ in range(MAX_HALVINGS):
                trial = model.dual(centre, sigma, c, Ba, y + t * direction, Bty + t * Btd)
                reads += 1
                if trial[0] <= psi + ARMIJO * t * slope:
                    break
                t *= 0.5
            y, Bty = y + t * direction, Bty + t * Btd
            psi, v, x, Bx = trial
        reads += 1
        if mapping(x, Bx) <= target or newton >= max_iter or expired():
            break
        sigma = min(sigma * SIGMA_GROWTH, SIGMA_MAX * step)
    return model.embed(x), newton, reads + model.reads
