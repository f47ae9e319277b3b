"""libsvm through scikit-learn's ``SVC(kernel="precomputed")`` (Chang and Lin, 2011)."""

from __future__ import annotations

import attrs
import numpy as np

from kernelfuse.svm_solver import SVMSolution, SVMSolver
from kernelfuse.validation import positive


@attrs.frozen
class LibSVM(SVMSolver):
    """libsvm's SMO via scikit-learn SVC on a precomputed kernel; no warm start, intercept only.

    libsvm caches kernel columns in single precision, so its solution is
    accurate to about 1e-7 relative; scikit-learn adds about 3 ms of Python
    per call (partly removed here by skipping its input validation).
    """

    name = "libsvm"
    supports_no_intercept = False
    warm_starts = False
    tol: float = attrs.field(default=1e-8, converter=float, validator=positive)
    cache_size: float = attrs.field(default=500.0, converter=float, validator=positive)

    def solve(self, K, y, C, *, intercept=True, warm_start=None):  # type: ignore[no-untyped-def]
        import sklearn
        from sklearn.svm import SVC

        if not intercept:
            raise ValueError("libsvm always fits an intercept; use svm_solver 'active-set' or 'osqp'")
        model = SVC(C=C, kernel="precomputed", tol=self.tol, cache_size=self.cache_size)
        with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
            model.fit(K, y)
        alpha = np.zeros(y.shape[0])
        # dual_coef_ holds y_i a_i of the support vectors; classes_ is [-1, +1].
        alpha[model.support_] = model.dual_coef_[0] * y[model.support_]
        return SVMSolution(np.clip(alpha, 0.0, C), float(model.intercept_[0]), int(model.n_iter_[0]))
