"""kernelfuse-alignment: discovered by name, the alignment weights, an honest l1_mkl_sq report."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import kernelfuse
from kernelfuse import Problem, evaluate
from kernelfuse.testing import assert_within_certified
from kernelfuse_alignment import alignment_weights, centred_alignments


def data(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(y), n, replace=False)
    X = (X[rows] - X[rows].mean(0)) / X[rows].std(0)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    noise = rng.normal(size=(n, n))
    K = np.stack([np.exp(-D / (w * D.mean())) for w in (0.1, 1.0, 10.0)] + [noise @ noise.T / n])
    return K, np.where(y[rows] == 1, 1.0, -1.0)


def test_alignment_matches_its_definition():
    K, y = data()
    N = len(y)
    H = np.eye(N) - np.ones((N, N)) / N
    for m in range(K.shape[0]):
        Kc = H @ K[m] @ H
        expected = (y @ Kc @ y) / (np.linalg.norm(Kc) * np.linalg.norm(np.outer(y, y)))
        assert centred_alignments(K, y)[m] == pytest.approx(expected, rel=1e-10)
    d = alignment_weights(K, y)
    assert d.sum() == pytest.approx(1.0) and d[3] < d[:3].min()  # the noise kernel aligns worst


def test_solver_by_name_reports_an_upper_bound_and_a_certified_gap():
    K, y = data()
    assert kernelfuse.get_registry().get("recipe", "alignment").provider == "kernelfuse-alignment"
    with warnings.catch_warnings():  # not the MKL optimum: completed, the gap as information
        warnings.simplefilter("error")
        result = kernelfuse.solve(K, y, solver="alignment", family="l1_mkl_sq", C=1.0)
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=1.0)
    recomputed = evaluate(Problem.create(K, y, "l1_mkl_sq", C=1.0), result.coef,
                                     result.intercept, result.kernel_weights)
    assert result.objective == pytest.approx(recomputed, rel=1e-9)
    assert result.status == "completed" and result.gap > 1e-6
    # Above the optimum's certified interval by at most its own certified gap; a valid bound.
    assert_within_certified(result, reference)
    np.testing.assert_allclose(result.kernel_weights, alignment_weights(K, y))
    with pytest.raises(kernelfuse.KernelfuseError, match="vskl"):
        kernelfuse.solve(K, y, solver="alignment", family="vskl", C=1.0, groups=np.zeros(4, int))


def test_selected_by_name_from_the_command_line(tmp_path):
    import subprocess
    import sys

    K, y = data()
    np.savez(tmp_path / "problem.npz", K=K, y=y)
    done = subprocess.run([sys.executable, "-m", "kernelfuse", "solve", str(tmp_path / "problem.npz"),
                           "--solver", "alignment", "--family", "l1_mkl_sq", "--C", "1",
                           "--output", str(tmp_path / "result.npz")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    saved = kernelfuse.Result.load(tmp_path / "result.npz")
    assert saved.solver == "alignment" and saved.gap > 0
    np.testing.assert_allclose(saved.kernel_weights, alignment_weights(K, y))
