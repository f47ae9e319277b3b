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

from kernelfuse.kernels.products import gram, is_float64, product, transpose_product
from kernelfuse.problem.regularizers import MixedLpq
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
    diagonal constant on each) one per group, formed when the group first turns active, where
    they take no more bytes than ``B'`` (else ``B diag(scale) B'`` is formed at each step); for
    p = 1 the kept entries' Gram, updated by the entries that enter or leave.  ``reads``
    counts the reads of ``B`` (a full read is 1)."""

    def __init__(self, penalty: MixedLpq, rows: np.ndarray, start: np.ndarray, mask: np.ndarray) -> None:
        self.regularizer, self.rows, self.start, self.mask = penalty, rows, start, mask
        entries, violators = rows.shape
        self.axis = 1 if penalty.r == 1 else 0  # the block's axis indexing the groups
        self.uniform = penalty.p == 2.0 and penalty.q == 2.0  # l2: P = I / (1 + t) everywhere
        self.binary = penalty.p == 1.0  # P's diagonal is 0 or 1
        # l21: one Gram per group where they take no more bytes than B' itself
        self.by_group = (penalty.p == 2.0 and penalty.q == 1.0 and bool(mask.all())
                         and 8 * violators * mask.shape[self.axis] <= rows.itemsize * entries)
        kernels, samples = np.nonzero(mask)
        self.groups = (kernels, samples)[self.axis]
        self.n_groups = mask.shape[self.axis]
        self.grams = np.zeros((self.n_groups, violators, violators) if self.by_group else (0, 0, 0))
        self.formed = np.zeros(self.n_groups, dtype=bool)
        self.kept = np.zeros(entries, dtype=bool)
        self.gram = np.zeros((violators, violators) if self.uniform or self.binary else (0, 0))
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
        return float(np.dot(y, Ba) + np.dot(y, y) / 4.0) - Phi, v, x, transpose_product(self.rows, x)

    def _group_rows(self) -> np.ndarray:
        """``B'`` by group: (groups, group size, |S|), a view."""
        cube = self.rows.reshape(*self.mask.shape, self.rows.shape[1])  # (|T|, |R|, |S|)
        return np.moveaxis(cube, self.axis, 0)

    def _form_grams(self, groups: np.ndarray) -> None:
        """``B_g B_g'`` of ``groups``: batched on a float64 stack, one group at a time by float64
        blocks on a float32 one (no float64 copy of the rows)."""
        self.reads += groups.size / self.n_groups
        by_group = self._group_rows()
        if is_float64(self.rows):
            block = by_group[groups]
            self.grams[groups] = block.transpose(0, 2, 1) @ block
        else:
            for g in groups:
                self.grams[g] = gram(by_group[g])

    def _diagonal_part(self, scale: np.ndarray) -> np.ndarray:
        """``B diag(scale) B'``."""
        if self.uniform:
            if not self.kept.any():
                self.gram, self.kept[:] = gram(self.rows), True
                self.reads += 1.0
            return scale[0] * self.gram
        if self.by_group:  # sum_g scale_g B_g B_g'
            per_group = self.embed(scale).max(axis=1 - self.axis)
            active = np.flatnonzero(per_group > 0)
            new = active[~self.formed[active]]
            if new.size:
                self._form_grams(new)
                self.formed[new] = True
            return np.tensordot(per_group[active], self.grams[active], axes=1)
        if not self.binary:  # l21 with groups smaller than |S|: B diag(scale) B' afresh
            self.reads += 1.0
            return gram(self.rows, scale)
        kept = scale > 0
        for entries, sign in ((kept & ~self.kept, 1.0), (self.kept & ~kept, -1.0)):
            if entries.any():
                self.reads += np.count_nonzero(entries) / self.rows.shape[0]
                self.gram += sign * gram(self.rows[entries])
        self.kept = kept
        return self.gram.copy()

    def _rank_one_columns(self, vectors: np.ndarray) -> np.ndarray:
        """``B v_g`` for every group, (|S|, groups)."""
        out = np.zeros((self.rows.shape[1], self.n_groups))
        kept = vectors != 0
        self.reads += np.count_nonzero(kept) / self.rows.shape[0]
        if self.by_group and is_float64(self.rows):
            by_group = np.moveaxis(self.embed(vectors), self.axis, 0)  # (groups, group size)
            groups = np.flatnonzero(np.any(by_group != 0, axis=1))
            block = by_group[groups]
            out[:, groups] = np.einsum("gks,gk->sg", self._group_rows()[groups], block)
            return out
        for g in np.unique(self.groups[kept]):
            entries = np.flatnonzero(kept & (self.groups == g))
            out[:, g] = transpose_product(self.rows[entries], vectors[entries])
        return out

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


def solve_model(penalty: MixedLpq, gradient: np.ndarray, rows: np.ndarray, start: np.ndarray,
                mask: np.ndarray, forcing: float, max_iter: int) -> tuple[np.ndarray, int, float]:
    """``argmin_x <gradient, x - start> + ||B (x - start)[mask]||^2 + g(x)`` over ``x`` shaped like
    ``start`` (coef layout), equal to ``start`` (0) outside ``mask``; ``rows = B'`` (mask's entries,
    |S|) in the stack's dtype (products in float64, by blocks on a float32 stack).
    Stops when the model's gradient mapping (step ``1 / (2 ||B||^2)``) is at most ``forcing`` times
    its value at ``start``, or after ``max_iter`` Newton steps.  Returns ``x``, the Newton steps and
    the reads of ``B`` (products with it, and the Gram matrices formed)."""
    model = _Model(penalty, rows, start, mask)
    a, c = start[mask], gradient[mask]
    Ba = transpose_product(rows, a)
    violators = rows.shape[1]
    lipschitz = 2.0 * float(scipy.linalg.eigvalsh(gram(rows), subset_by_index=[violators - 1] * 2,
                                                  overwrite_a=True, check_finite=False)[0]) if violators else 0.0
    reads = 2.0
    if lipschitz <= 0.0:  # no violator: the model is linear, its optimum one prox step away
        return model.embed(model.prox(a - c, 1.0)), 0, reads
    step = 1.0 / lipschitz

    def mapping(x: np.ndarray, Bx: np.ndarray) -> float:
        smooth = c + 2.0 * product(rows, Bx - Ba)
        return float(np.linalg.norm(x - model.prox(x - step * smooth, step)))

    target = forcing * float(np.linalg.norm(a - model.prox(a - step * c, step)))
    sigma = SIGMA_START * step
    x, y, Bty = a, np.zeros(violators), np.zeros(a.size)
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
            factor = scipy.linalg.cho_factor(model.hessian(v, sigma), overwrite_a=True, check_finite=False)
            direction = scipy.linalg.cho_solve(factor, -residual)
            Btd = product(rows, direction)
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
