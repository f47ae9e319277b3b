"""Solving in the kernels' own units: every family's scaling law, and solvers on far-off scales."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernelfuse
from kernelfuse.problem import objectives
from kernelfuse.problem.families import FAMILIES
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.scaling import SCALE_BAND, rescale, unit_scale
from kernelfuse.testing import small_problem

PARAMS = {"l1_mkl": {"C": 0.7, "C2": 0.3}, "l1_mkl_sq": {"C": 2.0}, "vskl": {"C": 2.0, "q": 3.0},
          "pnorm_mkl": {"lam": 0.4, "p": 1.5}, "mikl": {"lam": 0.4, "q": 2.0, "p": 1.0, "r": 1.0},
          "mlmkl_sum": {"C": 2.0}, "mlmkl_max": {"C": 2.0}}


def test_every_family_is_tested():
    assert set(FAMILIES) == set(PARAMS)


@pytest.mark.parametrize("family", sorted(PARAMS))
@pytest.mark.parametrize("scale", [1e-7, 3.0, 1e8])
def test_the_law_maps_the_objective_exactly(family, scale):
    """P(K, coef) = factor * P'(K / s, s coef) at random models (kernel weights where the family
    has them), i.e. the two problems are one problem in two units."""
    K, y, extra = small_problem(family, seed=4, n=15, n_kernels=3)
    problem = Problem.create(K, y, family, **extra, **PARAMS[family])
    scaled = rescale(problem, scale)
    rng = np.random.default_rng(0)
    for _ in range(5):
        coef = rng.normal(size=problem.coef_shape)
        weights = rng.dirichlet(np.ones(3)) if family.startswith("mlmkl") else None
        intercept = rng.normal() if problem.family.has_intercept else 0.0
        here = objectives.evaluate(problem, coef, intercept, weights)
        there = objectives.evaluate(scaled.problem, scale * coef, intercept, weights)
        assert here == pytest.approx(scaled.objective_factor * there, rel=1e-10)


def test_only_kernels_outside_the_band_are_rescaled():
    K, y, _ = small_problem("l1_mkl_sq", seed=0)
    for scale in (SCALE_BAND[0], 1.0, SCALE_BAND[1]):
        assert unit_scale(Problem.create(scale * K, y, "l1_mkl_sq")) is None
    far = unit_scale(Problem.create(1e9 * K, y, "l1_mkl_sq"))
    assert far.scale == pytest.approx(1e9) and np.abs(far.problem.K).max() == pytest.approx(1.0)
    # The validation's reading of the largest entry, carried into the rescaled problem.
    assert Problem.create(1e9 * K, y, "l1_mkl_sq").largest_entry == np.abs(1e9 * K).max()
    assert far.problem.largest_entry == pytest.approx(np.abs(far.problem.K).max(), rel=1e-15)


@pytest.mark.parametrize("solver, family", [("spicymkl", "l1_mkl"), ("mirror-vskl", "vskl"),
                                            ("cvxpy", "l1_mkl_sq"), ("mikl", "mikl")])
def test_a_far_off_scale_gives_the_same_model_in_the_problems_units(solver, family):
    K, y, extra = small_problem(family, seed=2)
    params = dict(PARAMS[family])
    base = kernelfuse.solve(K, y, solver=solver, family=family, **extra, **params)
    scale = 1e9
    law_params, factor = FAMILIES[family].scaling(params, 1.0 / scale)  # on scale * K: P = factor P'
    # The gap is relative to max(1, |P|) (OBJECTIVES.md): P of vskl on scale * K is 1e-8, so
    # the tolerance asks for what tol = 1e-6 asks of the unit problem.
    tol = {} if solver == "cvxpy" else {"tol": 1e-6 * min(1.0, abs(base.objective / factor))}
    far = kernelfuse.solve(scale * K, y, solver=solver, family=family, **extra, **law_params, **tol)
    assert far.status == base.status == "converged"
    assert far.objective == pytest.approx(base.objective / factor, rel=1e-5)
    assert np.allclose(scale * far.coef, base.coef, rtol=1e-3, atol=1e-4 * np.abs(base.coef).max())
    assert far.history[-1].objective == pytest.approx(far.objective, rel=1e-5)  # rows in its units


@pytest.mark.filterwarnings("ignore::kernelfuse.ConvergenceWarning")  # obscure: 50 epochs on purpose
@pytest.mark.parametrize("solver, family", [("spicymkl", "l1_mkl"), ("obscure", "pnorm_mkl")])
def test_far_off_factors_are_rescaled_as_factors(solver, family):
    """Factors far off scale are solved as ``Phi / sqrt(s)`` (their largest entry, on the
    diagonal of ``Phi Phi'``, made 1): the model of the far-off dense stack, which is rescaled
    the same way, in the problem's units."""
    from kernelfuse.kernels.factors import FactorKernels

    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    scale = 1e8
    factors = [np.sqrt(scale) * Phi for Phi in (np.c_[X[:, :2], np.ones(40)] / 3.0, np.tanh(X) / 2.0)]
    law_params, _ = FAMILIES[family].scaling(dict(PARAMS[family]), 1.0 / scale)
    rescaled = unit_scale(Problem.create(FactorKernels(factors), y, family, **law_params))
    assert isinstance(rescaled.problem.K, FactorKernels) and rescaled.scale == pytest.approx(
        max(np.einsum("ij,ij->i", Phi, Phi).max() for Phi in factors))
    assert rescaled.problem.K.diagonal().max() == pytest.approx(1.0)
    extra = {"seed": 0, "max_iter": 50} if solver == "obscure" else {"tol": 1e-9}
    on_factors = kernelfuse.solve(FactorKernels(factors), y, solver=solver, family=family, **law_params, **extra)
    on_stack = kernelfuse.solve(np.stack([Phi @ Phi.T for Phi in factors]), y, solver=solver, family=family,
                                **law_params, **extra)
    assert on_factors.objective == pytest.approx(on_stack.objective, rel=1e-7)
    assert np.allclose(on_factors.coef, on_stack.coef, rtol=1e-4, atol=1e-6 * np.abs(on_stack.coef).max())


def test_the_mikl_law_divides_by_s_q_times_without_forming_s_to_the_q():
    """``lam / s^q`` at s = 1e-200, q = 2: s^q underflows to 0 (a ZeroDivisionError before);
    ``lam / s / s`` is 1e100, as exact as one division."""
    params = {"lam": 1e-300, "q": 2.0, "p": 1.0, "r": 1.0}
    assert FAMILIES["mikl"].scaling(params, 1e-200)[0]["lam"] == pytest.approx(1e100, rel=1e-15)


@pytest.mark.parametrize("scale, lam", [(1e-200, 1e-300), (1e-155, 4e-311)])
def test_mikl_at_tiny_scales_is_the_unit_problem_with_lam_scaled_by_the_law(scale, lam):
    """``mikl`` (q = 2) on K * s is the problem on K with lam / s^2 (factor 1, coef = coef' / s).
    At s = 1e-200 every float lam gives lam' >= 5e76: the model is zero to the floats' precision
    on both sides (f underflows); at s = 1e-155 (s^2 subnormal) lam' = 0.4, a model of its own."""
    K, y, extra = small_problem("mikl", seed=2)
    params = {"q": 2.0, "p": 1.0, "r": 1.0}
    unit_lam = FAMILIES["mikl"].scaling({"lam": lam, **params}, scale)[0]["lam"]
    base = kernelfuse.solve(K, y, solver="mikl", family="mikl", lam=unit_lam, tol=1e-9, **params, **extra)
    far = kernelfuse.solve(scale * K, y, solver="mikl", family="mikl", lam=lam, tol=1e-9, **params, **extra)
    assert far.status == base.status == "converged"
    assert far.objective == pytest.approx(base.objective, rel=1e-9)
    assert np.allclose(scale * far.coef, base.coef, rtol=1e-4, atol=1e-4 * np.abs(base.coef).max())
    assert (np.abs(base.coef).max() > 0.1) == (scale > 1e-160)


def test_a_unit_scale_beyond_the_floats_solves_at_the_nearest_representable_scale():
    """lam = 1 at 1e-200 (q = 2) needs lam' = 1e400 on unit kernels: the solver gets the
    kernels divided by the scale nearest 1e-200 whose lam' is finite.  The optimum is the
    zero model to the floats' precision (f underflows): P = N, certified."""
    K, y, extra = small_problem("mikl", seed=2)
    params = {"q": 2.0, "p": 1.0, "r": 1.0, "lam": 1.0}
    rescaled = unit_scale(Problem.create(1e-200 * K, y, "mikl", **params, **extra))
    assert 1e-200 < rescaled.scale < 1e-150 and np.isfinite(rescaled.problem.params["lam"])
    assert rescaled.problem.params["lam"] > 1e300
    result = kernelfuse.solve(1e-200 * K, y, solver="mikl", family="mikl", **params, **extra)
    assert result.status == "converged" and result.objective == pytest.approx(len(y), rel=1e-12)
    assert result.dual_objective <= result.objective and result.gap <= 1e-6


@pytest.mark.filterwarnings("ignore::kernelfuse.ConvergenceWarning")
def test_cvxpy_on_mikl_at_1e_170():
    """q = 1: the reference certifies an interval and mikl lands in it, the model's
    coefficients near 1e170 (the penalty evaluated without forming |alpha|^2 = 1e340).
    q = 2: the smallest lam there is (5e-324) makes lam' >= 5e16 on unit kernels, where
    Clarabel reports infeasible: an honest SolverError, no ZeroDivisionError."""
    from kernelfuse.testing import assert_within_certified

    K, y, extra = small_problem("mikl", seed=2)
    params = {"q": 1.0, "p": 2.0, "r": 1.0, "lam": 1e-300}
    reference = kernelfuse.solve(1e-170 * K, y, solver="cvxpy", family="mikl", **params, **extra)
    result = kernelfuse.solve(1e-170 * K, y, solver="mikl", family="mikl", **params, **extra)
    assert reference.status == result.status == "converged" and np.abs(result.coef).max() > 1e169
    assert_within_certified(result, reference)
    with pytest.raises(kernelfuse.SolverError, match="Clarabel"):
        kernelfuse.solve(1e-170 * K, y, solver="cvxpy", family="mikl", q=2.0, p=1.0, r=1.0, lam=1e-320, **extra)


@pytest.mark.parametrize("solver", ["cvxpy", "mirror-vskl", "simplemkl"])
def test_converged_at_the_unit_scale_is_converged_in_the_problems_units(solver):
    """The gap's unit max(1, |P|) is not scale invariant: on kernels at 1e-150 the unit problem's
    optimum is tiny, and an absolute gap below tol there was a relative gap of 1 once scaled back
    (cvxpy reported 'converged' with gap 1). Whatever a solver reaches, 'converged' keeps its
    promise in the caller's units."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 3))
    K = 1e-150 * np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))[None]
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(K, y, solver=solver, family="l1_mkl_sq")
    assert np.isfinite(result.objective) and result.objective >= result.dual_objective - 1e-9
    if result.status == "converged":
        assert result.gap <= 1e-6, result.message
    else:
        assert result.status == "stalled" and "in the problem's units" in result.message
