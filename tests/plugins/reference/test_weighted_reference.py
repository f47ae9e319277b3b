"""The weighted problem solved by the exact reference: integer weights are repeated rows."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from helpers import weighted_cancer_problem
from kernelfuse.testing import assert_within_certified


@pytest.mark.parametrize("family, loss", [("l1_mkl", "logistic"), ("l1_mkl", "hinge"), ("l1_mkl", "squared"),
                                          ("l1_mkl_sq", "hinge"), ("vskl", "hinge")])
def test_integer_weights_have_the_optimum_of_repeated_rows(family, loss):
    """A weight of ``k`` on row i is row i repeated ``k`` times (a maths identity): the two
    certified intervals of the optimum overlap."""
    K, y, _ = weighted_cancer_problem(seed=7, n=30, real=loss == "squared")
    weights = np.random.default_rng(8).integers(1, 4, size=y.size).astype(float)
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = kernelfuse.solve(K, y, solver="cvxpy", family=family, loss=loss, C=0.5, sample_weight=weights)
    repeated = kernelfuse.solve(K[:, rows][:, :, rows], y[rows], solver="cvxpy", family=family, loss=loss, C=0.5)
    assert weighted.converged and repeated.converged
    assert_within_certified(weighted, repeated, label="weighted in the repeated interval")
    assert_within_certified(repeated, weighted, label="repeated in the weighted interval")
