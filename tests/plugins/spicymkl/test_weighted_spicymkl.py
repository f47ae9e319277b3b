"""SpicyMKL on weighted problems: inside the exact reference's certified interval."""

from __future__ import annotations

import pytest

import kernelfuse
from helpers import weighted_cancer_problem
from kernelfuse import ValidationError
from kernelfuse.testing import assert_within_certified


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared-hinge", "squared", "eps-insensitive"])
def test_spicymkl_is_inside_the_references_interval(loss, seed):
    K, y, weights = weighted_cancer_problem(seed, real=loss in ("squared", "eps-insensitive"))
    C = [0.3, 1.0, 3.0][seed]
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, C=C, sample_weight=weights)
    result = kernelfuse.solve(K, y, solver="spicymkl", loss=loss, C=C, sample_weight=weights)
    assert result.converged
    assert_within_certified(result, reference, label=f"{loss}, seed {seed}")


def test_weights_of_zero_are_the_rows_left_out():
    """With a conjugate prox (hinge) weights of 0 are solved in place, with the optimum of the
    problem without those rows (the representer theorem); Newton on a smooth conjugate (logistic)
    needs them > 0 and says so."""
    K, y, weights = weighted_cancer_problem(3)
    weights[:5] = 0.0
    keep = weights > 0
    inside = kernelfuse.solve(K, y, solver="spicymkl", loss="hinge", C=0.5, sample_weight=weights)
    without = kernelfuse.solve(K[:, keep][:, :, keep], y[keep], solver="cvxpy", family="l1_mkl", loss="hinge",
                               C=0.5, sample_weight=weights[keep])
    assert_within_certified(inside, without)
    with pytest.raises(ValidationError, match="sample_weight: spicymkl with loss 'logistic'"):
        kernelfuse.solve(K, y, solver="spicymkl", loss="logistic", sample_weight=weights)
