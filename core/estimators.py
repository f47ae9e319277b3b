"""scikit-learn estimators: MKL from feature matrices (or precomputed kernel stacks).

``MKLClassifier(kernels="grid", solver="mirror-vskl", family="l1_mkl_sq", C=100.0)``
builds the kernel stack from the features with kernel specs (by default the
papers' grid, :mod:`kernelfuse.kernel_grid`), normalises it on the training
set (:mod:`kernelfuse.kernel_normalization`), solves the MKL problem with a
registered solver, and predicts with the learnt expansion.  Multiclass
targets are fitted one-vs-rest with the binary family.

``kernels="precomputed"``: ``X`` is a kernel stack laid out ``(n, n, M)``
(kernel axis last), so that scikit-learn's cross-validation, which slices a
pairwise ``X`` as ``X[np.ix_(test, train)]``, cuts every kernel alike; at
predict time ``X`` is ``(n_test, n_train, M)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from kernelfuse.errors import ValidationError
from kernelfuse.progress import ProgressPrinter
from kernelfuse.kernel import KernelSpec, compute_kernels
from kernelfuse.kernel_grid import kernel_grid
from kernelfuse.kernel_normalization import KernelNormalizer
from kernelfuse.result import Result

#: Family parameters an estimator passes on when set (None: the family's default).
_FAMILY_PARAMS = ("C", "C2", "lam", "p", "q", "r", "eps")


class MKLClassifier(ClassifierMixin, BaseEstimator):
    """Multiple kernel learning classifier (binary; multiclass one-vs-rest).

    Parameters
    ----------
    kernels : "grid", a sequence of :class:`~kernelfuse.kernel.KernelSpec`, or "precomputed"
    solver : registered solver name (see ``kernelfuse plugins --kind solver``)
    family : problem family of OBJECTIVES.md solved for each binary problem
    C, C2, lam, p, q, r, eps : family (and loss) parameters; None keeps the family default
    loss : registered loss name for family ``l1_mkl`` (None: the family default)
    groups : group of each kernel for ``vskl`` (None: the specs' groups)
    normalization : "unit-trace", "spherical" or "none"
    standardize : scale every feature to zero mean and unit variance on the
        training set first (the kernel grid's widths assume it)
    tol : relative duality gap at which the solver stops (1e-3, as scikit-learn's
        SVC; the solvers' own default is 1e-6); None keeps the solver's default
    max_iter : passed to the solver when set
    solver_params : other solver keywords (e.g. ``{"svm_solver": "libsvm"}``)
    verbose : print progress (iteration, objective, gap, time) to stderr

    Attributes
    ----------
    classes_, n_features_in_, kernels_ (the specs used), results_ (one
    :class:`~kernelfuse.result.Result` per binary problem), result_ (the
    first), coef_ (M, n_train) or (n_problems, M, n_train), intercept_,
    kernel_weights_ (mean over the binary problems), n_iter_ (the most iterations
    any binary problem recorded, the starting point included).
    """

    def __init__(
        self,
        kernels: str | Sequence[KernelSpec] = "grid",
        solver: str = "mirror-vskl",
        family: str = "l1_mkl_sq",
        C: float | None = 100.0,
        C2: float | None = None,
        lam: float | None = None,
        p: float | None = None,
        q: float | None = None,
        r: float | None = None,
        eps: float | None = None,
        loss: str | None = None,
        groups: Sequence[int] | None = None,
        normalization: str = "unit-trace",
        standardize: bool = False,
        tol: float | None = 1e-3,
        max_iter: int | None = None,
        solver_params: dict[str, Any] | None = None,
        verbose: bool = False,
    ) -> None:
        self.kernels = kernels
        self.solver = solver
        self.family = family
        self.C = C
        self.C2 = C2
        self.lam = lam
        self.p = p
        self.q = q
        self.r = r
        self.eps = eps
        self.loss = loss
        self.groups = groups
        self.normalization = normalization
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.solver_params = solver_params
        self.verbose = verbose

    # ------------------------------------------------------------------ kernels
    def _precomputed(self) -> bool:
        return isinstance(self.kernels, str) and self.kernels == "precomputed"

    def _check_precomputed_standardize(self) -> None:
        if self.standardize and self._precomputed():
            raise ValidationError("standardize=True has no features to scale with kernels='precomputed'")

    def _train_stack(self, X: np.ndarray) -> np.ndarray:
        if self._precomputed():
            if X.ndim != 3 or X.shape[0] != X.shape[1]:
                raise ValidationError(
                    f"kernels='precomputed' needs X of shape (n, n, M), got {X.shape}"
                )
            return np.ascontiguousarray(np.moveaxis(X, 2, 0))
        if self.standardize:
            self.feature_mean_ = X.mean(axis=0)
            scale = X.std(axis=0)
            self.feature_scale_ = np.where(scale > 0, scale, 1.0)
            X = (X - self.feature_mean_) / self.feature_scale_
        if isinstance(self.kernels, str):
            if self.kernels != "grid":
                raise ValidationError(
                    f"kernels must be 'grid', 'precomputed' or a list of KernelSpec, got {self.kernels!r}"
                )
            specs = kernel_grid(X.shape[1])
        else:
            specs = list(self.kernels)
            if not specs or not all(isinstance(s, KernelSpec) for s in specs):
                raise ValidationError("kernels must be a non-empty list of KernelSpec")
        self.kernels_ = specs
        self.X_fit_ = X  # the (standardised) training features the test kernels pair with
        self.normalizer_ = KernelNormalizer(self.normalization).fit(specs, X)
        return self.normalizer_.transform(compute_kernels(specs, X))

    def _test_stack(self, X: np.ndarray) -> np.ndarray:
        if self._precomputed():
            return np.ascontiguousarray(np.moveaxis(X, 2, 0))
        if self.standardize:
            X = (X - self.feature_mean_) / self.feature_scale_
        K = compute_kernels(self.kernels_, self.X_fit_, X)
        return self.normalizer_.transform(K, self.kernels_, X)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> MKLClassifier:
        from kernelfuse.api import solve

        if self._precomputed():
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 3:
                raise ValueError(f"kernels='precomputed' needs X of shape (n, n, M), got {X.shape}")
            y = np.asarray(y)
            self.n_features_in_ = X.shape[1]
        else:
            X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, encoded = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"MKLClassifier needs samples of at least 2 classes; got 1 class ({self.classes_[0]!r})"
            )
        self._check_precomputed_standardize()
        K = self._train_stack(X)
        params = {name: getattr(self, name) for name in _FAMILY_PARAMS if getattr(self, name) is not None}
        for name in ("tol", "max_iter"):
            if getattr(self, name) is not None:
                params[name] = getattr(self, name)
        params.update(self.solver_params or {})
        groups = self.groups
        if groups is None and not self._precomputed() and self.family == "vskl":
            groups = [spec.group for spec in self.kernels_]
        problems = ([1] if self.classes_.size == 2 else range(self.classes_.size))
        results: list[Result] = []
        for positive in problems:
            target = np.where(encoded == positive, 1.0, -1.0)
            results.append(solve(
                K, target, solver=self.solver, family=self.family, loss=self.loss,
                groups=groups, check_psd=self._precomputed(),
                callback=ProgressPrinter() if self.verbose else None, **params,
            ))
        self._adopt_results(results)
        return self

    def _adopt_results(self, results: Sequence[Result]) -> None:
        """Fitted attributes from one solver result per binary problem."""
        coefs = np.stack([r.coef for r in results])
        self.results_ = list(results)
        self.result_ = self.results_[0]
        self.n_train_ = coefs.shape[-1]
        self.coef_ = coefs[0] if len(results) == 1 else coefs
        self.intercept_ = np.array([r.intercept for r in results])
        weights = [r.kernel_weights for r in results if r.kernel_weights is not None]
        self.kernel_weights_ = np.mean(weights, axis=0) if weights else None
        self.n_iter_ = max(len(r.history) for r in results)

    # ------------------------------------------------------------------ predict
    def decision_function(self, X: Any) -> np.ndarray:
        """Decision values: (n,) for two classes (positive: ``classes_[1]``), else (n, n_classes)."""
        check_is_fitted(self)
        if self._precomputed():
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 3 or X.shape[1] != self.n_train_ or X.shape[2] != self.result_.coef.shape[0]:
                raise ValueError(
                    f"kernels='precomputed' needs X of shape (n_test, {self.n_train_}, "
                    f"{self.result_.coef.shape[0]}), got {X.shape}"
                )
        else:
            X = validate_data(self, X, dtype=np.float64, reset=False)
        K = self._test_stack(X)
        scores = np.stack([r.decision_function(K) for r in self.results_], axis=1)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def save(self, path: Any) -> None:
        """Write the fitted model to ``path`` (.npz: arrays + JSON, no pickle)."""
        from kernelfuse.persistence import save_model

        save_model(self, path)

    def predict(self, X: Any) -> np.ndarray:
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed()
        return tags
