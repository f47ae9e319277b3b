"""Kernel and result metrics: a kernel's alignment, centred alignment, radius and margin;
the area under the precision-recall curve per label of multi-label results.

The kernel metrics take one kernel matrix ``K`` (n, n), symmetric PSD, and binary labels (any
two values, the larger one the class ``+1``), as MKLpy's ``MKLpy.metrics`` do; their
mathematics (and the certified intervals of the two quadratic programs) is in
:mod:`kernelfuse.numerics.geometry`, their differences from MKLpy's in docs/estimators.md
("Coming from MKLpy").

The area under label k's precision-recall curve is estimated by its
average precision ``AP_k = sum_n (R_n - R_{n-1}) P_n`` over the thresholds
of the decision values (scikit-learn's ``average_precision_score``, no
interpolation), the measure ML-MKL-SA reports (Bucak, Jin and Jain,
section 4).  Targets may be 0/1 or -1/+1 indicators, dense or SciPy sparse.
"""

from __future__ import annotations

import math
import reprlib
import warnings

import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.numerics import geometry
from kernelfuse.validation import dense_targets


def _check(Y_true: object, scores: object) -> tuple[np.ndarray, np.ndarray]:
    Y = np.asarray(dense_targets(Y_true), dtype=float)
    S = np.asarray(scores, dtype=float)
    given = (Y.shape, S.shape)
    if Y.ndim == 1:
        Y = Y[:, None]
    if S.ndim == 1:
        S = S[:, None]
    if Y.ndim != 2 or Y.shape != S.shape:
        raise ValidationError(f"Y_true and scores must have the same shape (n, L), got "
                              f"{given[0]} and {given[1]}")
    if not np.all(np.isin(Y, (0.0, 1.0))) and not np.all(np.isin(Y, (-1.0, 1.0))):
        raise ValidationError("Y_true must hold 0/1 or -1/+1 indicators")
    if not np.isfinite(S).all():
        raise ValidationError("scores contain NaN or infinite values")
    return Y > 0, S


def average_precision_per_label(Y_true: object, scores: object) -> np.ndarray:
    """Average precision (area under the precision-recall curve) of every label, shape (L,).

    A label without a positive example has no precision-recall curve: its
    entry is nan, with a warning naming it.
    """
    from sklearn.metrics import average_precision_score

    Y, S = _check(Y_true, scores)
    result = np.full(Y.shape[1], math.nan)
    empty = [k for k in range(Y.shape[1]) if not Y[:, k].any()]
    if empty:
        warnings.warn(f"labels {empty} have no positive example: their average precision is nan",
                      stacklevel=2)
    for k in range(Y.shape[1]):
        if k not in empty:
            result[k] = average_precision_score(Y[:, k], S[:, k])
    return result


def mean_average_precision(Y_true: object, scores: object) -> float:
    """The mean over labels of :func:`average_precision_per_label` (labels without positives skipped)."""
    per_label = average_precision_per_label(Y_true, scores)
    if np.isnan(per_label).all():
        raise ValidationError("no label has a positive example")
    return float(np.nanmean(per_label))


def binary_signs(y: object, n_samples: int) -> np.ndarray:
    """Labels of exactly two values as -1/+1 (the larger value +1), checked against ``n_samples``."""
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != n_samples:
        raise ValidationError(f"y must have shape ({n_samples},) to match K, got {labels.shape}")
    classes = np.unique(labels)
    if classes.size != 2:
        raise ValidationError(f"y must hold exactly two classes (binary labels), got {classes.size}: "
                              f"{reprlib.repr(classes.tolist())}")
    return np.where(labels == classes[1], 1.0, -1.0)


def _kernel(K: object) -> np.ndarray:
    """One kernel matrix (n, n), checked finite, symmetric and PSD."""
    from kernelfuse.validation import check_kernels

    array = np.asarray(K)
    if array.ndim != 2:
        raise ValidationError(f"K must be one kernel matrix of shape (n, n), got shape {array.shape}")
    return check_kernels(array, require_psd=True, check_psd="auto")[0][0]


def _target(target: object, n_samples: int) -> np.ndarray:
    """The target kernel: ``y y'`` of binary labels (1-D), or a kernel matrix (2-D)."""
    array = np.asarray(target)
    if array.ndim == 2:
        if array.shape != (n_samples, n_samples) or array.dtype.kind not in "biuf" \
                or not np.isfinite(array).all():
            raise ValidationError(f"a target kernel must be a finite ({n_samples}, {n_samples}) matrix, "
                                  f"got shape {array.shape}")
        return array.astype(float)
    y = binary_signs(array, n_samples)
    return np.outer(y, y)


def alignment(K: object, target: object) -> float:
    """Kernel alignment ``A(K, T) = <K, T>_F / (||K||_F ||T||_F)`` (Cristianini et al., 2001).

    ``target``: binary labels ``y`` (the ideal kernel ``T = y y'`` with ``y`` in {-1, +1}) or a
    second kernel matrix.  In [-1, 1]; with ``T = y y'`` and ``K`` PSD, in [0, 1].  MKLpy's
    ``alignment_yy(K, y)`` and ``alignment(K1, K2)``.
    """
    K = _kernel(K)
    return geometry.alignment(K, _target(target, K.shape[0]))


def centered_alignment(K: object, target: object) -> float:
    """Centred alignment ``rho(K, T) = A(K^c, T^c)`` (Cortes, Mohri and Rostamizadeh, JMLR 2012,
    definition 1), ``K^c = H K H`` with ``H = I - 11'/n``: the alignment of the kernels of the
    features centred on their mean.  ``target`` as for :func:`alignment`.
    """
    K = _kernel(K)
    return geometry.alignment(geometry.centered(K), geometry.centered(_target(target, K.shape[0])))


def radius(K: object) -> float:
    """Radius ``R`` of the minimum enclosing ball of the examples in feature space.

    ``R^2 = min_c max_i ||phi(x_i) - c||^2 = max_{g >= 0, sum g = 1} sum_i g_i K_ii - g'Kg``
    (the dual), solved as a QP: the square root of the dual's value at its solution, within the
    certified interval of :func:`kernelfuse.numerics.geometry.enclosing_ball`.  MKLpy's ``radius(K)``.
    """
    return float(np.sqrt(geometry.enclosing_ball(_kernel(K)).value))


def margin(K: object, y: object, C: float | None = None) -> float:
    """Geometric margin ``rho = 1 / ||w||`` of the SVM with bias on ``K`` and the labels ``y``.

    ``C=None``: the hard margin, half the distance between the convex hulls of the classes,
    ``rho = D / 2`` with ``D^2 = min ||sum_i g_i y_i phi(x_i)||^2`` over ``g >= 0`` summing to 1
    on each class (0 when the hulls meet: no hard-margin separator exists);
    MKLpy's ``margin(K, y)`` returns ``D``, twice this.  ``C > 0``: the soft margin
    ``1 / ||w||`` at the optimum of the C-SVM ``min 1/2 ||w||^2 + C sum_i max(0, 1 - y_i f(x_i))``,
    ``||w||^2 = beta' K beta`` with ``beta = alpha * y`` its dual expansion (libsvm, tolerance 1e-10).
    """
    K = _kernel(K)
    signs = binary_signs(y, K.shape[0])
    if C is None:
        return float(np.sqrt(geometry.hull_distance(K, signs).value)) / 2
    from sklearn.svm import SVC

    from kernelfuse.validation import positive

    svm = SVC(C=positive.check("C", C), kernel="precomputed", tol=1e-10).fit(K, signs)
    beta = np.zeros(K.shape[0])
    beta[svm.support_] = svm.dual_coef_[0]
    return float(1.0 / np.sqrt(beta @ K @ beta))
