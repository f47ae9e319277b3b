"""The local quadratic mirror map on a product of simplices: mirror descent as projected Newton.

At a point ``lam`` where the oracle reports its curvature, a factor ``R``
with ``R'R`` the Hessian of the outer function (:class:`~kernelfuse.parts.oracle.OracleAnswer`),
the map for the step is

    ``h(x) = 0.5 x'(R'R + mu I) x``  on  ``{x >= 0, sum_{k in group j} x_k = 1}``,

so ``grad h(x) = (R'R + mu I) x``, the Bregman divergence is
``0.5 (x - z)'(R'R + mu I)(x - z)``, and the mirror step
``x+ = grad h*(grad h(lam) - s g)`` is the minimiser over the set of

    ``s g'(x - lam) + 0.5 (x - lam)'(R'R + mu I)(x - lam)``:

at ``s = 1`` the Newton step on the second-order model of the outer
function, projected onto the product of simplices in the model's own metric
(a QP, :mod:`kernelfuse.plugins.mirror_vskl.simplex_qp`).  Smaller ``s`` shortens the step along
the model's curvature, so the Armijo rule of ``mirror-descent`` (accept when
``G(x+) <= G(lam) + g'(x+ - lam) + D_h(x+, lam) / s``, else halve ``s``) is
a line search of the model.  ``mu = ridge * max_k (R'R)_kk`` makes the map
strongly convex (the Hessian of an SVM's optimum in the kernel weights has
rank at most the number of margin support vectors); without curvature
(``R = 0``: no margin support vector) ``mu`` is the gradient's spread and
the step is a projected gradient step.

Why it is here: entropic mirror descent moves the weights of near-duplicate
kernels (neighbouring widths of a grid) by factors ``exp(-s (g_k - g_k'))``
with nearly equal gradients, so its steps grow with ``log M``; the model's
step sets them to exactly 0 when the model says so, and brings a weight
back from 0 as readily (the QP is over the whole set).  Measured on the
mirrorVSKL benchmarks: docs/methods/mirror-vskl.md.
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.errors import IncompatiblePartsError
from kernelfuse.parts.mirror_map import MirrorMap, simplex_initial_step
from kernelfuse.parts.oracle import OracleAnswer
from kernelfuse.plugins.mirror_vskl.simplex_qp import SimplexQP
from kernelfuse.validation import nonnegative


@attrs.frozen
class LocalQuadraticSimplices(MirrorMap):
    """``0.5 x'(R'R + mu I)x`` from the oracle's curvature at the step's point: a projected Newton step."""

    name = "local-quadratic"
    max_step = 1.0
    local = True
    #: ``mu`` relative to the largest diagonal entry of ``R'R``.
    ridge: float = nonnegative.field(1e-8)
    #: The factor of the step's point (None until :meth:`at` binds one).
    factor: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)
    mu: float = 1.0
    #: The step's point: the QP starts from its support.
    anchor: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)

    def at(self, point: np.ndarray, answer: OracleAnswer) -> LocalQuadraticSimplices:
        if answer.curvature is None:
            raise IncompatiblePartsError(
                f"mirror map {self.name!r} needs an oracle that reports its curvature "
                "(vskl-bca does); use mirror_map='entropic' with this oracle")
        R = np.atleast_2d(np.asarray(answer.curvature(), dtype=float))
        top = float(np.max(np.einsum("ij,ij->j", R, R), initial=0.0))
        if top > 0:
            mu = self.ridge * top
        else:
            mu = 1.0 / simplex_initial_step(answer.gradient, np.zeros(point.size, int))
        return attrs.evolve(self, factor=R, mu=mu, anchor=point)

    def _qp(self, groups: np.ndarray) -> SimplexQP:
        R = self.factor if self.factor is not None else np.zeros((0, groups.size))
        return SimplexQP(R, self.mu, groups)

    def grad_h(self, x: np.ndarray) -> np.ndarray:
        return self._qp(np.zeros(x.size, int)).hessian_times(x)

    def grad_h_conjugate(self, theta: np.ndarray, groups: np.ndarray) -> np.ndarray:
        start = self.anchor if self.anchor is not None else 1.0 / np.bincount(groups)[groups]
        return self._qp(groups).solve(theta, start).x

    def divergence(self, x: np.ndarray, z: np.ndarray) -> float:
        d = x - z
        return float(0.5 * d @ self._qp(np.zeros(d.size, int)).hessian_times(d))
