"""The two-stage solvers and kernelfuse.metrics beside MKLpy 0.6 on the same kernels (skipped
without MKLpy, which kernelfuse does not depend on: the correctness tests are test_two_stage.py)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import metrics
from kernelfuse.numerics import geometry

pytestmark = pytest.mark.skipif(importlib.util.find_spec("MKLpy") is None,
                                reason="MKLpy (GPL-3, with torch and cvxopt) is not installed: "
                                       "`make bench-env` installs it (with a CPU build of torch) to compare")


def mklpy_weights(name: str, K: np.ndarray, y: np.ndarray, **params: object) -> np.ndarray:
    import contextlib
    import io

    import torch
    from MKLpy import algorithms
    from sklearn.svm import SVC

    learner = {} if name == "EasyMKL" else {"learner": SVC(C=10.0)}
    if name == "RMKL":   # its steps' own SVM C
        params = {**params, "C": 10.0}
    with contextlib.redirect_stdout(io.StringIO()):   # MKLpy's MEMO prints debugging lines
        model = getattr(algorithms, name)(**learner, **params).fit([torch.tensor(Km) for Km in K], torch.tensor(y))
    return np.asarray(model.solution.weights, dtype=float)   # a tensor (one-step) or an array (GRAM)


@pytest.mark.parametrize("solver, name, params", [
    ("fheuristic", "FHeuristic", {}), ("pwmk", "PWMK", {}), ("pwmk", "PWMK", {"delta": 0.5}),
    ("easymkl", "EasyMKL", {"lam": 0.1}), ("easymkl", "EasyMKL", {"lam": 0.6}), ("cka", "CKA", {}),
    ("gram", "GRAM", {"max_iter": 20, "learning_rate": 0.01}),
    ("memo", "MEMO", {"max_iter": 20, "theta": 0.5}),
    ("rmkl", "RMKL", {"max_iter": 20}),
])
def test_weights_match_mklpy(solver, name, params) -> None:
    K, y = breast_cancer_kernels(80, 3 if solver == "cka" else 5, seed=4)
    K = K * y.size   # unit diagonal (MKLpy's GRAM assumes it)
    theirs = mklpy_weights(name, K, y, **params)
    assert theirs.min() >= 0, "CKA's unconstrained solution is compared only where it is non-negative"
    ours = kernelfuse.solve(K, y, solver=solver, C=10.0, **params).kernel_weights
    np.testing.assert_allclose(ours, theirs / theirs.sum(), atol=1e-3)


def test_metrics_match_mklpy() -> None:
    import torch
    from MKLpy import metrics as theirs

    K, y = breast_cancer_kernels(60, 1, seed=5)
    K = K[0] * 60
    assert metrics.alignment(K, y) == pytest.approx(theirs.alignment_yy(torch.tensor(K), torch.tensor(y)), rel=1e-9)
    assert metrics.radius(K) == pytest.approx(theirs.radius(torch.tensor(K)), rel=1e-4)
    # MKLpy's margin is the distance D between the class hulls, twice the geometric margin; its
    # QP stops at cvxopt's absolute tolerance 1e-6 on D^2 (here 2.5e-5): it lies above the
    # certified interval of D, within 1 %
    hulls = geometry.hull_distance(K, y)
    distance = theirs.margin(torch.tensor(K), torch.tensor(y))
    assert np.sqrt(hulls.lower) <= distance and distance == pytest.approx(2 * metrics.margin(K, y), rel=1e-2)
