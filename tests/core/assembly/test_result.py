"""Results: saved and loaded without pickle, history and callbacks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import Result, ValidationError
from kernelfuse.assembly.result import relative_gap
from kernelfuse.runtime.npz_file import write_npz


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
                  "solver", "family", "history", "message", "loss"):
        assert getattr(loaded, field) == getattr(result, field), field
    assert loaded.loss == "hinge"  # the family's loss, kept for a warm start's check
    with np.load(path, allow_pickle=False) as raw:  # nothing pickled
        assert set(raw.files) >= {"coef", "objective", "history_gap"}


def test_load_refuses_other_files(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, coef=np.zeros(3))
    with pytest.raises(ValidationError, match="has no kernelfuse digest"):
        Result.load(path)
    write_npz(path, {"coef": np.zeros(3)})  # written with a digest, but not a result
    with pytest.raises(ValidationError, match="not a kernelfuse result"):
        Result.load(path)


def test_relative_gap_units():
    assert relative_gap(10.0, 9.0) == pytest.approx(0.1)
    assert relative_gap(0.5, 0.25) == pytest.approx(0.25)  # max(1, |P|) = 1
    assert math.isnan(relative_gap(1.0, math.nan))


def test_decision_function_on_new_points():
    K, y = breast_cancer_kernels(n=40, m=3, seed=2)
    train, test = np.arange(30), np.arange(30, 40)
    result = kernelfuse.solve(K[:, train][:, :, train], y[train], solver="mirror-vskl",
                              family="l1_mkl_sq", C=5.0)
    K_test = K[:, test][:, :, train]
    expected = sum(K_test[m] @ result.coef[m] for m in range(3)) + result.intercept
    np.testing.assert_allclose(result.decision_function(K_test), expected)
    # On the training points it reproduces the model's own decision values.
    f_train = result.decision_function(K[:, train][:, :, train])
    hinge = np.maximum(0, 1 - y[train] * f_train).sum()
    norms = np.sqrt([result.coef[m] @ K[m][np.ix_(train, train)] @ result.coef[m] for m in range(3)])
    assert 0.5 * norms.sum() ** 2 + 5.0 * hinge == pytest.approx(result.objective, rel=1e-10)
    with pytest.raises(ValidationError, match="K_test must have shape"):
        result.decision_function(K_test[:2])


def test_multiclass_decision_function():
    K, _ = breast_cancer_kernels(n=30, m=2, seed=3)
    labels = np.arange(30) % 3
    result = kernelfuse.solve(K, labels, solver="cvxpy", family="pnorm_mkl", lam=0.1, p=1.5)
    scores = result.decision_function(K)
    assert scores.shape == (30, 3)
    expected = np.stack([sum(K[m] @ result.coef[m, c] for m in range(2)) for c in range(3)], axis=1)
    np.testing.assert_allclose(scores, expected, atol=1e-12)


def test_repr_is_one_line_of_the_figures_and_shapes():
    K, y = breast_cancer_kernels(n=100, m=3, seed=1)
    result = kernelfuse.solve(K, y, solver="spicymkl", C=0.1)
    text = repr(result)
    assert str(result) == text and "\n" not in text and len(text) < 400
    for part in (f"status={result.status!r}", f"objective={result.objective:.10g}", f"gap={result.gap:.3g}",
                 f"n_iter={result.n_iter}", "coef=(3, 100)",
                 f"kernel_weights=(3,), {np.count_nonzero(result.kernel_weights)} nonzero",
                 f"history={len(result.history)} rows"):
        assert part in text, part
