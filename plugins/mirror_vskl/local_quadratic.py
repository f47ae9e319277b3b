"""The local quadratic mirror map on a product of simplices: mirror descent as projected Newton.

At a point ``lam`` where the oracle reports its curvature (a factor ``R``, ``R'R`` the Hessian of
the outer function), the map for the step is ``h(x) = 0.5 x'(R'R + mu I) x`` on the product of
simplices, so the mirror step at ``s = 1`` is the Newton step on the second-order model, projected
in the model's own metric (a QP, :mod:`kernelfuse.numerics.simplex_qp`); smaller ``s``
shortens it.  ``mu = ridge * max_k (R'R)_kk`` makes the map strongly convex (the SVM's Hessian has
rank at most its margin support vectors); without curvature the step is a projected gradient
step.  Why: the entropic map's steps grow with ``log M`` on near-duplicate kernels, where this
step sets weights to 0 and back in one move (docs/methods/mirror-vskl.md, with measurements).
"""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.errors import IncompatiblePartsError
from kernelfuse.numerics.simplex_qp import SimplexQP
from kernelfuse.parts.mirror_map import MirrorMap, simplex_initial_step
from kernelfuse.parts.oracle import OracleAnswer
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
                "(vskl-bca does, and label-svms for mlmkl_sum); use mirror_map='entropic' with this oracle")
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
