"""Evaluation of multi-label results: area under the precision-recall curve per label.

The area under label k's precision-recall curve is estimated by its
average precision ``AP_k = sum_n (R_n - R_{n-1}) P_n`` over the thresholds
of the decision values (scikit-learn's ``average_precision_score``, no
interpolation), the measure ML-MKL-SA reports (Bucak, Jin and Jain,
section 4).  Targets may be 0/1 or -1/+1 indicators.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kernelfuse.errors import ValidationError


def _check(Y_true: object, scores: object) -> tuple[np.ndarray, np.ndarray]:
    Y = np.asarray(Y_true, dtype=float)
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
