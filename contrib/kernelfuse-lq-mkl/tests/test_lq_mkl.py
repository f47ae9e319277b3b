"""kernelfuse-lq-mkl: a family registered by a plugin, solved by the exact reference and by
SpicyMKL with certified gaps, and passing the conformance kit."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
from kernelfuse_lq_mkl import LQ_MKL, BlockLq
from sklearn.datasets import load_breast_cancer

import kernelfuse
from kernelfuse.testing import assert_within_certified, check_regularizer, check_solver

#: Exponents the cone programs write exactly (rationals of small denominator).
EXPONENTS = (1.25, 1.5, 1.75, 2.0)
LOSSES = ("logistic", "hinge", "squared", "squared-hinge")


def test_the_family_is_discovered_and_listed():
    entry = kernelfuse.get_registry().get("family", "lq_mkl")
    assert entry.provider == "kernelfuse-lq-mkl" and entry.factory is LQ_MKL
    assert kernelfuse.get_family("lq_mkl") is LQ_MKL and "lq_mkl" in kernelfuse.all_families()
    listed = subprocess.run([sys.executable, "-m", "kernelfuse", "plugins", "--kind", "family"],
                            capture_output=True, text=True, check=True).stdout
    assert "lq-mkl" in listed and "kernelfuse-lq-mkl" in listed


@pytest.mark.parametrize("q", EXPONENTS)
def test_the_regularizer_conforms(q):
    assert check_regularizer(BlockLq(weight=0.3 * q, q=q), seed=int(4 * q))[-4:] == [
        "kernel-values", "radial-prox", "slope", "dual-radius"]


def test_bad_parameters_are_refused_by_name():
    K = np.stack([np.eye(4), np.ones((4, 4))])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    for bad in (1.0, 2.5):
        with pytest.raises(kernelfuse.ValidationError, match="parameter q"):
            kernelfuse.solve(K, y, solver="spicymkl", family="lq_mkl", q=bad)
    with pytest.raises(kernelfuse.UnknownNameError, match="lq_mkl"):
        kernelfuse.solve(K, y, solver="spicymkl", family="lq_mk")


@pytest.mark.parametrize("loss", LOSSES)
def test_spicymkl_reaches_the_reference_on_the_kits_problems(loss):
    differences = check_solver("spicymkl", "lq_mkl", seeds=(0, 1), loss=loss, C=0.4, q=1.5, tol=1e-7)
    assert len(differences) == 2


def _generated(seed: int) -> tuple[np.ndarray, np.ndarray, dict[str, object]]:
    """A random subset of breast cancer, a random grid of Gaussian kernels on standardised
    features (all features or a random few), and random C, q and loss."""
    rng = np.random.default_rng(seed)
    X, y = load_breast_cancer(return_X_y=True)
    rows = rng.choice(len(y), size=int(rng.integers(30, 61)), replace=False)
    X = (X[rows] - X[rows].mean(0)) / (X[rows].std(0) + 1e-12)
    kernels = []
    for _ in range(int(rng.integers(2, 7))):
        columns = rng.choice(X.shape[1], size=int(rng.integers(1, X.shape[1] + 1)), replace=False)
        Z = X[:, columns]
        D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
        kernels.append(np.exp(-D / (2 * columns.size * 10 ** rng.uniform(-0.5, 1.0))))
    params = {"C": float(10 ** rng.uniform(-2, 1)), "q": float(rng.choice(EXPONENTS)),
              "loss": str(rng.choice(LOSSES))}
    return np.stack(kernels), np.where(y[rows] == 1, 1.0, -1.0), params


@pytest.mark.parametrize("seed", range(6))
def test_spicymkl_certifies_generated_problems_inside_the_reference_interval(seed):
    K, y, params = _generated(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(K, y, solver="spicymkl", family="lq_mkl", tol=1e-6, **params)
        with contextlib.redirect_stdout(io.StringIO()):
            reference = kernelfuse.solve(K, y, solver="cvxpy", family="lq_mkl", **params)
    assert result.status == "converged" and result.gap <= 1e-6, (params, result.message)
    assert_within_certified(result, reference, label=f"seed {seed} {params}")
    assert np.isclose(result.kernel_weights.sum(), 1.0)


def test_the_scaling_law_maps_the_optimum():
    """Kernels K / s at C' = C s^(-q/2): the same optimum (factor 1), within both certified gaps."""
    K, y, params = _generated(7)
    s = 10.0
    scaled, factor = LQ_MKL.scaling({"C": params["C"], "q": params["q"]}, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        here = kernelfuse.solve(K, y, solver="spicymkl", family="lq_mkl", loss=params["loss"], tol=1e-8,
                                C=params["C"], q=params["q"])
        there = kernelfuse.solve(K / s, y, solver="spicymkl", family="lq_mkl", loss=params["loss"], tol=1e-8,
                                 **scaled)
    lower, upper = factor * there.dual_objective, factor * there.objective
    assert lower - 1e-9 * max(1.0, abs(upper)) <= here.objective
    assert here.dual_objective <= upper + 1e-9 * max(1.0, abs(upper))
