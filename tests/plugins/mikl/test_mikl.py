"""MIKL: the mixed-norm proximal maps (Proposition 3), forward-backward (plain and FISTA), and the cvxpy optimum."""

from __future__ import annotations

import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import Problem
from kernelfuse.plugins.mikl.mixed_norm_prox import MixedNormProx
from kernelfuse.problem import objectives
from kernelfuse.testing import assert_within_certified

REL_TOL = 1e-6  # the tolerance for MIKL against cvxpy
NORMS = list(itertools.product((1.0, 2.0), (1.0, 2.0), (1.0, 2.0)))  # (p, q, r)


def cvxpy_prox(penalty: MixedNormProx, v: np.ndarray, step: float) -> np.ndarray:
    z = cp.Variable(v.shape)
    grouped = z if penalty.r == 1.0 else z.T
    norms = cp.hstack([cp.norm(grouped[g, :], int(penalty.p)) for g in range(grouped.shape[0])])
    g = penalty.lam / penalty.q * (cp.sum(norms) if penalty.q == 1.0 else cp.sum_squares(norms))
    with warnings.catch_warnings():  # Clarabel may call a tight solve "inaccurate"; the values are checked
        warnings.simplefilter("ignore")
        cp.Problem(cp.Minimize(g + cp.sum_squares(z - v) / (2 * step))).solve(
            solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return z.value


@pytest.mark.parametrize("p, q, r", NORMS)
def test_each_proximal_map(p, q, r):
    penalty = MixedNormProx(lam=0.7, p=p, q=q, r=r)
    rng = np.random.default_rng(int(10 * p + 3 * q + r))
    for _ in range(3):
        v, step = rng.normal(size=(6, 4)), rng.uniform(0.2, 2.0)
        z = penalty.prox(v, step)
        # Exact values against cvxpy.
        np.testing.assert_allclose(z, cvxpy_prox(penalty, v, step), atol=1e-6)
        # Optimality: the residual w = (v - z)/step is a subgradient of g at z, i.e.
        # Fenchel-Young holds with equality: g(z) + g*(w) = <z, w> (w in the dual ball for q = 1).
        w = (v - z) / step
        assert penalty.value(z) + penalty.conjugate(w) == pytest.approx(np.sum(z * w), abs=1e-10)
        # Moreau decomposition: v = prox_{s g}(v) + s prox_{g*/s}(v / s).
        np.testing.assert_allclose(penalty.prox(v, step) + step * penalty.prox_conjugate(v / step, 1 / step),
                                   v, atol=1e-12)
        # Non-expansive.
        other = rng.normal(size=(6, 4))
        assert np.linalg.norm(penalty.prox(other, step) - z) <= np.linalg.norm(other - v) + 1e-12


def test_the_norms_and_their_groups():
    x = np.array([[3.0, -4.0], [0.0, 1.0], [2.0, 0.0]])  # 3 samples, 2 kernels
    assert MixedNormProx(lam=2.0, p=2, q=1, r=1).value(x) == pytest.approx(2 * (5 + 1 + 2))  # rows
    assert MixedNormProx(lam=2.0, p=2, q=1, r=2).value(x) == pytest.approx(2 * (np.sqrt(13) + np.sqrt(17)))
    assert MixedNormProx(lam=2.0, p=1, q=2, r=2).value(x) == pytest.approx(5 ** 2 + 5 ** 2)  # (2/2)(5^2+5^2)
    problem = Problem.create(np.stack([np.eye(3), np.eye(3)]), [1, -1, 1], "mikl", p=1, q=2, r=2, lam=2.0)
    assert objectives.evaluate(problem, x.T) == pytest.approx(
        problem.loss.total(problem.y, x.sum(axis=1)) + MixedNormProx(lam=2.0, p=1, q=2, r=2).value(x))
    with pytest.raises(kernelfuse.ValidationError, match="p must be 1 or 2"):
        MixedNormProx(p=1.5)


def problems():
    K, y = breast_cancer_kernels(n=40, m=3, seed=0)
    indefinite = K + 0.02 * np.random.default_rng(1).normal(size=K.shape)  # neither PSD nor symmetric
    assert np.linalg.eigvalsh(0.5 * (indefinite[0] + indefinite[0].T)).min() < 0
    return {"psd": (K, y), "indefinite": (indefinite, y)}


@pytest.mark.parametrize("kernels", ["psd", "indefinite"])
@pytest.mark.parametrize("p, q, r", NORMS)
def test_reaches_the_cvxpy_optimum_plain_and_accelerated(kernels, p, q, r):
    K, y = problems()[kernels]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = kernelfuse.solve(K, y, solver="cvxpy", family="mikl", p=p, q=q, r=r, lam=0.5)
    assert reference.status == "converged"
    problem = Problem.create(K, y, "mikl", p=p, q=q, r=r, lam=0.5)
    iterations = {}
    for accelerated in (True, False):
        result = kernelfuse.solve(K, y, solver="mikl-forward-backward", family="mikl", p=p, q=q, r=r, lam=0.5,
                                  accelerated=accelerated, tol=1e-8)
        assert result.status == "converged" and result.gap <= 1e-8
        assert_within_certified(result, reference, REL_TOL, scale=abs(reference.interval[1]))
        assert objectives.evaluate(problem, result.coef) == pytest.approx(result.objective, rel=1e-12)
        iterations[accelerated] = result.n_iter
    assert iterations[True] < iterations[False]


def test_bad_settings_are_refused():
    K, y = problems()["psd"]
    with pytest.raises(kernelfuse.ValidationError, match="step_scale <= 1"):
        kernelfuse.solve(K, y, solver="mikl-forward-backward", family="mikl", step_scale=1.5)
    with pytest.raises(kernelfuse.ValidationError, match="step_scale < 2"):
        kernelfuse.solve(K, y, solver="mikl-forward-backward", family="mikl", accelerated=False, step_scale=2.0)
    with pytest.raises(kernelfuse.UnknownNameError, match=r"'optimizer.prox.lam'(.|\n)*names: .*\blam\b"):
        kernelfuse.solve(K, y, solver="mikl", family="mikl", lam=0.5, **{"optimizer.prox.lam": 3.0})
    with pytest.raises(kernelfuse.ValidationError, match="symmetric"):  # PSD families still refuse them
        kernelfuse.solve(problems()["indefinite"][0], y, solver="spicymkl", family="l1_mkl")


def test_a_constant_kernel_gives_mikl_a_bias():
    from kernelfuse.kernels.functions import with_constant_kernel

    K, y = problems()["indefinite"]
    y = np.where(np.arange(y.size) % 4 == 0, -1.0, 1.0)  # unbalanced: a bias helps
    biased = with_constant_kernel(K)
    assert biased.shape == (4, 40, 40) and np.all(biased[-1] == 1.0)
    plain = kernelfuse.solve(K, y, solver="mikl", family="mikl", lam=0.5)
    with_bias = kernelfuse.solve(biased, y, solver="mikl", family="mikl", lam=0.5)
    assert with_bias.objective < plain.objective  # the bias kernel lowers the optimum
    assert np.any(with_bias.coef[-1] != 0)  # and is used
    spec_kernel = kernelfuse.get_registry().create("kernel", "constant", value=2.0)
    np.testing.assert_array_equal(spec_kernel(np.zeros((2, 3)), np.zeros((4, 3))), np.full((2, 4), 2.0))
