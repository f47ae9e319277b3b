"""Results: saved and loaded without pickle, history and callbacks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kernelfuse
from kernelfuse import Result, ValidationError
from kernelfuse.result import relative_gap

from helpers import breast_cancer_kernels


def test_save_load_round_trip_and_callback(tmp_path):
    K, y = breast_cancer_kernels(n=30, m=3, seed=1)
    seen = []
    result = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=3.0, callback=seen.append)
    assert [row.objective for row in seen] == [row.objective for row in result.history]
    assert seen[-1].objective == pytest.approx(result.objective, rel=1e-7)
    path = tmp_path / "result.npz"
    result.save(path)
    loaded = Result.load(path)
    np.testing.assert_array_equal(loaded.coef, result.coef)
    np.testing.assert_array_equal(loaded.kernel_weights, result.kernel_weights)
    for field in ("intercept", "objective", "dual_objective", "gap", "n_iter", "status",
                  "solver", "family", "history", "message"):
        assert getattr(loaded, field) == getattr(result, field), field
    with np.load(path, allow_pickle=False) as raw:  # nothing pickled
        assert set(raw.files) >= {"coef", "objective", "history_gap"}


def test_load_refuses_other_files(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, coef=np.zeros(3))
    with pytest.raises(ValidationError, match="not a kernelfuse result"):
        Result.load(path)


def test_relative_gap_units():
    assert relative_gap(10.0, 9.0) == pytest.approx(0.1)
    assert relative_gap(0.5, 0.25) == pytest.approx(0.25)  # max(1, |P|) = 1
    assert math.isnan(relative_gap(1.0, math.nan))
