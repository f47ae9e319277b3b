"""Kernel normalisation fitted on the training set, applied identically to test kernels.

* ``"unit-trace"`` (the papers' default): ``K_m / trace(K_m on the training set)``;
  the test kernel ``K_m(x_test, x_train)`` is divided by the same training trace.
* ``"spherical"`` (cosine): ``k(x, z) / sqrt(k(x, x) k(z, z))``, so every
  training point has unit norm in each feature space; test rows use their own
  ``k(x, x)``.
* ``"none"``.

Only the diagonals ``k(x, x)`` are needed to fit, computed without forming
any N x N matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.kernels.functions import KernelSpec

METHODS = ("unit-trace", "spherical", "none")


def _check_method(instance: Any, attribute: Any, value: str) -> None:
    if value not in METHODS:
        raise ValidationError(f"normalisation must be one of {', '.join(METHODS)}, got {value!r}")


def diagonals(specs: Sequence[KernelSpec], X: np.ndarray) -> np.ndarray:
    """``k_m(x_i, x_i)`` for every spec and row: shape (M, N)."""
    out = np.empty((len(specs), X.shape[0]))
    for m, spec in enumerate(specs):
        out[m] = spec.function.diagonal(spec.columns(X))
    return out


@attrs.define
class KernelNormalizer:
    """Fit on the training features, then transform training and test stacks alike."""

    method: str = attrs.field(default="unit-trace", validator=_check_method)
    train_diagonal_: np.ndarray | None = attrs.field(default=None, init=False)

    def fit(self, specs: Sequence[KernelSpec], X_train: np.ndarray) -> KernelNormalizer:
        return self.fit_diagonal(diagonals(specs, np.asarray(X_train, dtype=float)))

    def fit_diagonal(self, diag: np.ndarray) -> KernelNormalizer:
        """Fit from the training diagonals ``k_m(x_i, x_i)`` (M, N), where they are already known."""
        if self.method != "none" and (diag <= 0).any():
            m = int(np.argwhere(diag <= 0)[0, 0])
            raise ValidationError(
                f"kernel {m} has k(x, x) <= 0 on the training set: cannot normalise it "
                f"'{self.method}'; use normalisation 'none'"
            )
        self.train_diagonal_ = diag
        return self

    def training_scales(self) -> np.ndarray:
        """``s`` (M, N) with normalised training kernels ``s_mi K_m[i, j] s_mj``.

        ``1 / sqrt(trace)`` for unit trace, ``1 / sqrt(k(x_i, x_i))`` for
        spherical, 1 for none: training rows can be normalised one at a time."""
        if self.train_diagonal_ is None:
            raise ValidationError("KernelNormalizer.training_scales called before fit")
        diag = self.train_diagonal_
        if self.method == "unit-trace":
            return np.broadcast_to(1.0 / np.sqrt(diag.sum(axis=1, keepdims=True)), diag.shape).copy()
        if self.method == "spherical":
            return 1.0 / np.sqrt(diag)
        return np.ones_like(diag)

    def test_scales(self, test_diagonal: np.ndarray) -> np.ndarray:
        """``t`` (M, n) with normalised test kernels ``t_mi k_m(x_i, x_j) s_mj``
        (:meth:`training_scales` ``s``), from the test points' ``k_m(x_i, x_i)`` (M, n):
        the training ``1 / sqrt(trace)`` for unit trace, ``1 / sqrt(k(x_i, x_i))`` for
        spherical, 1 for none."""
        if self.train_diagonal_ is None:
            raise ValidationError("KernelNormalizer.test_scales called before fit")
        if self.method == "unit-trace":
            trace = self.train_diagonal_.sum(axis=1, keepdims=True)
            return np.broadcast_to(1.0 / np.sqrt(trace), test_diagonal.shape).copy()
        if self.method == "spherical":
            if (test_diagonal <= 0).any():
                raise ValidationError("a test point has k(x, x) <= 0: cannot normalise it")
            return 1.0 / np.sqrt(test_diagonal)
        return np.ones_like(test_diagonal)

    def transform(
        self, K: np.ndarray, specs: Sequence[KernelSpec] | None = None,
        X_rows: np.ndarray | None = None,
    ) -> np.ndarray:
        """Normalise ``K`` (M, n_rows, N_train) in place and return it.

        ``X_rows`` are the rows' features (test points); None means the rows are
        the training points.  Spherical normalisation of test rows needs ``specs``.
        """
        if self.train_diagonal_ is None:
            raise ValidationError("KernelNormalizer.transform called before fit")
        diag = self.train_diagonal_
        if K.shape[0] != diag.shape[0] or K.shape[2] != diag.shape[1]:
            raise ValidationError(
                f"kernel stack of shape {K.shape} does not match the fitted "
                f"{diag.shape[0]} kernels on {diag.shape[1]} training points"
            )
        if self.method == "unit-trace":
            K *= (1.0 / diag.sum(axis=1))[:, None, None].astype(K.dtype)
        elif self.method == "spherical":
            if X_rows is None:
                rows = diag
            else:
                if specs is None:
                    raise ValidationError("spherical normalisation of test rows needs the specs")
                rows = diagonals(specs, np.asarray(X_rows, dtype=float))
                if (rows <= 0).any():
                    raise ValidationError("a test point has k(x, x) <= 0: cannot normalise it")
            K /= np.sqrt(rows[:, :, None] * diag[:, None, :]).astype(K.dtype)
        return K
