"""SpicyMKL from kernel factors (Woodbury Newton system) and from float32 stacks (no upcast)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

import kernelfuse
from helpers import breast_cancer_kernels, traced_peak
from kernelfuse import Problem, get_registry
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.plugins.kernels.nystrom import Nystrom
from kernelfuse.plugins.kernels.random_features import RandomFourierFeatures
from kernelfuse.problem import objectives
from kernelfuse.testing import assert_within_certified

REL_TOL = 1e-6  # as tests/plugins/spicymkl/test_spicymkl.py: SpicyMKL against cvxpy
LOSSES = ["logistic", "hinge", "squared"]


def low_rank_kernels(loss: str, seed: int) -> tuple[FactorKernels, np.ndarray, float]:
    """Random N in 40..120 rows of breast cancer, M in 3..6 Nystrom and random Fourier kernels of
    unequal ranks 2..10 on random feature subsets (unit trace), the targets, and C."""
    rng = np.random.default_rng(seed)
    data = load_breast_cancer()
    n, m = int(rng.integers(40, 121)), int(rng.integers(3, 7))
    rows = rng.permutation(data.target.size)[:n]
    X = StandardScaler().fit_transform(data.data)[rows]
    specs = []
    for k in range(m):
        cols = sorted(rng.choice(X.shape[1], size=int(rng.integers(2, 6)), replace=False).tolist())
        width, rank = rng.uniform(0.5, 3.0) * np.sqrt(len(cols)), int(rng.integers(2, 11))
        function = (Nystrom.fit(get_registry().create("kernel", "gaussian", width=width), X[:, cols], rank,
                                seed=k) if k % 2 == 0
                    else RandomFourierFeatures.draw(len(cols), width=width, n_features=rank, seed=k))
        specs.append(KernelSpec(function, features=cols))
    y = np.where(data.target[rows] == 1, 1.0, -1.0)
    if loss == "squared":  # real targets
        y = 0.7 * y + 0.3 * rng.normal(size=n)
    return FactorKernels.from_specs(specs, X), y, float(rng.choice([0.02, 0.1, 0.5]))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("seed", range(8))
def test_factors_reach_the_cvxpy_optimum_of_the_dense_stack(loss, seed):
    F, y, C = low_rank_kernels(loss, seed)
    assert len(set(F.ranks)) > 1  # unequal ranks
    K = np.stack([Phi @ Phi.T for Phi in F.factors])
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, C=C)
    dense = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C)
    result = kernelfuse.solve(F, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C)
    assert result.status == dense.status == "converged" and result.gap <= 1e-6
    assert_within_certified(result, reference, REL_TOL)  # its lower bound valid too
    assert_within_certified(result, dense)  # within the dense run's certified interval
    problem = Problem.create(K, y, "l1_mkl", loss=loss, C=C)
    assert objectives.evaluate(problem, result.coef, result.intercept) == pytest.approx(
        result.objective, rel=1e-10)


@pytest.mark.parametrize("loss", ["squared-hinge", "eps-insensitive", "logistic"])
def test_factors_with_the_elastic_net(loss):
    F, y, C = low_rank_kernels("squared" if loss == "eps-insensitive" else loss, seed=7)
    K = np.stack([Phi @ Phi.T for Phi in F.factors])
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, C=C, C2=0.3)
    result = kernelfuse.solve(F, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C, C2=0.3)
    assert result.status == "converged"
    assert_within_certified(result, reference, REL_TOL)


@pytest.mark.parametrize("loss", LOSSES)
def test_the_lower_bound_from_factors_is_the_stacks(loss):
    from kernelfuse.problem.duality import separable_lower_bound

    F, y, C = low_rank_kernels(loss, seed=9)
    K = np.stack([Phi @ Phi.T for Phi in F.factors])
    rho = np.random.default_rng(0).normal(size=y.size)
    from_factors = separable_lower_bound(Problem.create(F, y, "l1_mkl", loss=loss, C=C), rho)
    from_stack = separable_lower_bound(Problem.create(K, y, "l1_mkl", loss=loss, C=C), rho)
    assert from_factors[1] == from_stack[1] == 1
    assert from_factors[0] == pytest.approx(from_stack[0], rel=1e-12)


def test_the_woodbury_solve_is_the_dense_solve_with_signed_weights():
    from kernelfuse.plugins.spicymkl.newton_system import LowRankSystem

    rng = np.random.default_rng(0)
    N, k = 50, 12
    diagonal, columns = rng.uniform(0.1, 2.0, N), rng.normal(size=(N, k))
    weights = rng.uniform(0.0, 1.0, k)
    weights[[2, 7]] = [-0.5, 0.0]  # a negative weight (an indefinite core) and a dropped column
    H = np.diag(diagonal) + (columns * weights) @ columns.T
    assert np.linalg.eigvalsh(H)[0] < 0 < np.linalg.eigvalsh(H)[1]
    rhs = rng.normal(size=N)
    np.testing.assert_allclose(LowRankSystem(diagonal, columns, weights).solve(rhs),
                               np.linalg.solve(H, rhs), rtol=1e-9, atol=1e-12)


def test_factors_read_no_row_and_form_no_n_by_n_array(monkeypatch):
    N = 3000
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 6))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=N) > 0, 1.0, -1.0)
    gaussian = get_registry().create("kernel", "gaussian", width=2.0)
    specs = [KernelSpec(Nystrom.fit(gaussian, X, rank, seed=m)) for m, rank in enumerate((10, 6, 8))]
    F = FactorKernels.from_specs(specs + [KernelSpec(RandomFourierFeatures.draw(6, width=3.0, n_features=12))], X)

    def no_rows(i: int) -> np.ndarray:
        raise AssertionError("the factor path read a kernel row")

    monkeypatch.setattr(F, "rows", no_rows)
    problem = Problem.create(F, y, "l1_mkl", loss="logistic", C=0.05)
    solver = get_registry().create("recipe", "spicymkl")
    result, peak = traced_peak(lambda: solver.solve(problem))
    assert result.status == "converged"
    assert peak < 8 * N * N / 8  # an N x N float64 array takes 8 N^2 bytes


def float32_kernels() -> tuple[np.ndarray, np.ndarray]:
    """48 Gaussian kernels on 200 points, float32: the stack outweighs the solver's N x N arrays."""
    K, y = breast_cancer_kernels(n=200, m=48, seed=8)
    return K.astype(np.float32), y


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_a_float32_stack_gives_the_model_of_its_float64_copy(loss):
    K32, y = float32_kernels()
    settings = {"solver": "spicymkl", "family": "l1_mkl", "loss": loss, "C": 0.05,
                "check_psd": False}  # Gaussian kernels: PSD by construction
    assert Problem.create(K32, y, "l1_mkl", loss=loss, C=0.05, check_psd=False).K.dtype == np.float32
    single = kernelfuse.solve(K32, y, **settings)
    double = kernelfuse.solve(K32.astype(np.float64), y, **settings)
    assert single.status == double.status == "converged"
    # The same path up to rounding (a discrete choice may flip: then within the solver's tolerance).
    np.testing.assert_allclose(single.coef, double.coef, rtol=0, atol=1e-7 * np.abs(double.coef).max())
    f_single, f_double = (np.einsum("mij,mj->i", K32.astype(np.float64), r.coef) + r.intercept
                          for r in (single, double))
    np.testing.assert_allclose(f_single, f_double, rtol=0, atol=1e-7 * np.abs(f_double).max())
    np.testing.assert_allclose(single.kernel_weights, double.kernel_weights, rtol=0, atol=1e-9)
    assert single.objective == pytest.approx(double.objective, rel=1e-7)


def test_a_float32_stack_is_never_upcast():
    K32, y = float32_kernels()
    problem = Problem.create(K32, y, "l1_mkl", loss="hinge", C=0.05, check_psd=False)
    solver = get_registry().create("recipe", "spicymkl")
    result, peak = traced_peak(lambda: solver.solve(problem))
    assert result.status == "converged"
    assert peak < K32.nbytes  # half the float64 stack: not even one float64 copy of it
