"""Kernel weights: the combination weights d (f = sum_m d_m K_m alpha) beside the norm shares."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse.assembly.result import Result
from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.frontends.persistence import load_model
from kernelfuse.problem import objectives
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.regularizers import lp_norm


@pytest.fixture(scope="module")
def problem():
    K, y = breast_cancer_kernels(60, 6, 3)
    return K * 60, y  # unit diagonal: the papers' default parameters fit


def test_l1_weights_equal_simplemkl_d_at_the_optimum(problem):
    """SimpleMKL reports its own d; cvxpy (l1_mkl_sq) and SpicyMKL (l1_mkl at the equivalent
    C' = sum_m ||f_m*|| / C) report d from the norms: all three agree at certified optima."""
    K, y = problem
    simple = kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", C=1.0, tol=1e-8, max_iter=2000)
    exact = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=1.0, tol=1e-8)
    assert simple.converged and exact.converged
    C_prime = objectives.rkhs_norms(K, simple.coef).sum() / 1.0
    spicy = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="hinge", C=C_prime, tol=1e-8)
    assert spicy.converged
    for result in (simple, exact, spicy):
        assert result.kernel_weights.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(result.kernel_weights, simple.kernel_weights, atol=1e-6)
    # at an l1 optimum the norm shares are the weights too
    np.testing.assert_allclose(exact.norm_shares, exact.kernel_weights, atol=1e-6)


@pytest.mark.parametrize("p", [1.2, 1.5, 2.0])
def test_pnorm_weights_are_kloft_d(problem, p):
    """``||d||_(p/(2-p)) = 1``; OBSCURE's model is ``coef[m] = d_m alpha`` with one alpha; its d
    matches the cvxpy optimum's (from the norms) to the accuracy of its gap (1e-4)."""
    K, y = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", p=p, lam=1e-2, tol=1e-4,
                                  max_iter=5000)
    exact = kernelfuse.solve(K, y, solver="cvxpy", family="pnorm_mkl", p=p, lam=1e-2, tol=1e-8)
    exponent = math.inf if p == 2.0 else p / (2.0 - p)
    for d in (result.kernel_weights, exact.kernel_weights):
        assert lp_norm(d, exponent) == pytest.approx(1.0)
    alpha = result.coef / result.kernel_weights[:, None]
    np.testing.assert_allclose(alpha, np.broadcast_to(alpha[0], alpha.shape), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(result.kernel_weights, exact.kernel_weights, atol=5e-3)
    assert result.norm_shares.sum() == pytest.approx(1.0)


def test_combination_weights_of_norms():
    """The rule of each family on given norms: l1_mkl with elastic net, vskl (large q without
    overflow, q = inf), the zero model, and mikl (none)."""
    rng = np.random.default_rng(0)
    K, y = breast_cancer_kernels(20, 4, 1)
    norms = np.array([2.0, 0.0, 1.0, 3.0])
    elastic = Problem.create(K, y, "l1_mkl", C=1.0, C2=0.5)
    d = norms / (1.0 + 0.5 * norms)
    np.testing.assert_allclose(objectives.combination_weights(elastic, norms), d / d.sum())
    for q in (1.0, 2.0, 400.0, math.inf):
        vskl = Problem.create(K, y, "vskl", C=1.0, q=q, groups=[0, 0, 1, 1])
        d = objectives.combination_weights(vskl, norms)
        s = np.array([2.0, 2.0, 4.0, 4.0])
        expected = norms * (s[0] / s) ** (1.0 if math.isinf(q) else 2 * q - 1)
        np.testing.assert_allclose(d, expected / expected.sum(), atol=1e-300)
    sq = Problem.create(K, y, "l1_mkl_sq", C=1.0)
    np.testing.assert_array_equal(objectives.combination_weights(sq, np.zeros(4)), np.full(4, 0.25))
    mikl = Problem.create(rng.normal(size=(4, 20, 20)), y, "mikl")
    assert objectives.combination_weights(mikl, norms) is None


def test_estimator_weights_average_is_uniform_and_shares_kept(tmp_path):
    """The average-kernel baseline's weights are exactly 1/M; its norm shares are not uniform;
    both come back from a model file."""
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:120, :3]
    specs = kernel_grid(3, widths=(1.0, 5.0), degrees=(1,))
    clf = MKLClassifier(kernels=specs, solver="average", family="l1_mkl_sq", tol=None,
                        standardize=True).fit(X, y[:120])
    np.testing.assert_array_equal(clf.kernel_weights_, np.full(len(specs), 1.0 / len(specs)))
    assert clf.norm_shares_.sum() == pytest.approx(1.0)
    assert np.ptp(clf.norm_shares_) > 1e-3
    clf.save(tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz")
    np.testing.assert_array_equal(loaded.kernel_weights_, clf.kernel_weights_)
    np.testing.assert_array_equal(loaded.norm_shares_, clf.norm_shares_)


def test_result_files_with_and_without_norm_shares(problem, tmp_path):
    K, y = problem
    result = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=1.0)
    result.save(tmp_path / "new.npz")
    np.testing.assert_array_equal(Result.load(tmp_path / "new.npz").norm_shares, result.norm_shares)
    arrays = result.to_arrays()
    del arrays["norm_shares"]  # a file written before norm_shares were reported
    old = Result.from_arrays(arrays)
    assert old.norm_shares is None
    np.testing.assert_array_equal(old.kernel_weights, result.kernel_weights)
