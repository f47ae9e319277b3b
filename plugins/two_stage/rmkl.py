"""R-MKL (Do, Kalousis, Woznica and Hilario 2009): kernel weights by gradient steps on the
radius-scaled margin term, as MKLpy 0.6's ``RMKL`` computes it.

Do, Kalousis, Woznica and Hilario, "Margin and radius based multiple kernel learning", ECML
PKDD 2009 (LNCS 5781), section 3: the SVM on ``K(d) = sum_m d_m K_m`` with each kernel's margin
term scaled by the squared radius ``R_m^2`` of its own minimum enclosing ball
(:func:`kernelfuse.numerics.geometry.enclosing_ball`, once per kernel).  From uniform weights,
each step solves the SVM on ``K(d)`` with the problem's ``C`` (the registered SVM solver part),
scales its dual ``alpha`` to sum 1 on each class (``g``), and takes

    d <- max(d + eta grad, 0) / sum(max(d + eta grad, 0)),
    grad_m = (g*y)'(K_m + (R_m^2 / C) I)(g*y),

``max_iter`` (1000) steps of ``learning_rate`` ``eta`` (0.01): MKLpy's defaults, which has no
other stopping rule.  MKLpy's SVM is libsvm at its default tolerance (1e-3), kernelfuse's the
registered solver at its own: their duals, and so the steps, differ by that tolerance.  The
solve's ``time_limit`` ends the steps (status ``time_limit``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.two_stage import KernelWeights, TwoStageMKL
from kernelfuse.kernels.combined import combined_kernel, quadratic_forms
from kernelfuse.numerics.geometry import enclosing_ball
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import deadline, expired
from kernelfuse.validation import count, positive, seconds


@attrs.define
class RMKL(TwoStageMKL):
    """Weights by gradient steps on the radius-scaled margin term (Do et al. 2009), then one SVM."""

    name: ClassVar[str] = "rmkl"
    #: The step size ``eta``.
    learning_rate: float = positive.field(0.01)
    #: The number of steps (MKLpy takes all of them).
    max_iter: int = count.field(1000)
    time_limit: float = seconds.field(math.inf)

    def weights(self, problem: Problem) -> KernelWeights:
        K, y, C = problem.K, problem.y, problem.params["C"]
        radii = np.array([enclosing_ball(Km).value for Km in K])
        d = np.full(K.shape[0], 1.0 / K.shape[0])
        steps, cut, warm = 0, False, None
        with deadline(self.time_limit):
            while steps < self.max_iter:
                if expired():
                    cut = True
                    break
                solution = self.svm_solver.solve(combined_kernel(K, d)[0], y, C, warm_start=warm)
                warm, alpha = solution, solution.alpha
                if not (alpha[y > 0].sum() > 0 and alpha[y < 0].sum() > 0):
                    break
                v = np.where(y > 0, alpha / alpha[y > 0].sum(), -alpha / alpha[y < 0].sum())
                gradient = quadratic_forms(K, v) + radii / C * float(v @ v)
                step = np.maximum(d + self.learning_rate * gradient, 0.0)
                d = step / step.sum()
                steps += 1
        return KernelWeights(d, {"svm_calls": float(steps), "kernel_passes": 3.0 * steps + 1},
                       n_iter=steps, cut=cut)
