"""libsvm through scikit-learn's ``SVC(kernel="precomputed")`` (Chang and Lin, 2011)."""

from __future__ import annotations

import warnings

import attrs
import numpy as np

from kernelfuse.numerics.svm_dual import centred_kernel
from kernelfuse.parts.svm_solver import SVMSolution, SVMSolver
from kernelfuse.validation import positive, positive_count


def default_max_iter(n: int) -> int:
    """libsvm's iteration bound on ``n`` examples: ``max(100_000, 100 n)`` SMO steps.

    scikit-learn's default (-1) removes libsvm's own bound, and an SMO loop
    whose steps are lost in rounding never ends.  Healthy solves measured
    far below it (docs/reliability.md); one step costs O(n) on cached
    columns, so the bound is also what keeps one call short enough for the
    solve's deadline and an interrupt to be served.
    """
    return max(100_000, 100 * n)


@attrs.frozen
class LibSVM(SVMSolver):
    """libsvm's SMO via scikit-learn SVC on a precomputed kernel; no warm start, intercept only.

    libsvm caches kernel columns in single precision, so its solution is
    accurate to about 1e-7 relative; it solves on the centred kernel
    (:func:`~kernelfuse.numerics.svm_dual.centred_kernel`, the same dual), so that a
    large constant part of ``K`` cannot swamp the rest in that cache.
    scikit-learn adds about 3 ms of Python per call (partly removed here by
    skipping its input validation).  ``max_iter`` (default
    :func:`default_max_iter`) bounds the SMO steps; a solve it stops is
    returned with ``converged=False``.
    """

    name = "libsvm"
    tol: float = positive.field(1e-8)
    cache_size: float = positive.field(500.0)
    max_iter: int | None = positive_count.or_none("default_max_iter(N)").field(None)

    def solve(self, K: np.ndarray, y: np.ndarray, C: float, *, intercept: bool = True,
              warm_start: SVMSolution | None = None) -> SVMSolution:
        import sklearn
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.svm import SVC

        if not intercept:
            raise ValueError("libsvm always fits an intercept; use svm_solver 'active-set' or 'osqp'")
        bound = default_max_iter(y.shape[0]) if self.max_iter is None else self.max_iter
        model = SVC(C=C, kernel="precomputed", tol=self.tol, cache_size=self.cache_size, max_iter=bound)
        centred, rows = centred_kernel(K)
        with sklearn.config_context(assume_finite=True, skip_parameter_validation=True), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported as converged=False
            model.fit(centred, y)
        alpha = np.zeros(y.shape[0])
        # dual_coef_ holds y_i a_i of the support vectors; classes_ is [-1, +1].
        alpha[model.support_] = model.dual_coef_[0] * y[model.support_]
        alpha = np.clip(alpha, 0.0, C)
        n_iter = int(model.n_iter_[0])
        return SVMSolution(alpha, float(model.intercept_[0]) - float(rows @ (alpha * y)), n_iter,
                           converged=n_iter < bound)
