"""Solving in the targets' own units: the target law of ``l1_mkl``, and far-off targets and C."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels, subset_kernels
from kernelfuse.problem import objectives
from kernelfuse.problem.families import FAMILIES
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.scaling import SCALE_BAND, SVM_C_LIMIT, rescale_targets, unit_scale
from kernelfuse.testing import small_problem

LAW = FAMILIES["l1_mkl"].target_scaling
LOSSES = {"squared": {}, "eps-insensitive": {"eps": 0.2}}


def regression(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Five unit-trace Gaussian kernels on breast-cancer rows, and a real target of unit scale
    (the standardised mean area, a feature the kernels do not all see)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    K, _ = subset_kernels(data, n, 5, 0)
    rows = np.random.default_rng(0).permutation(data.target.size)[:n]
    area = data.data[:, 3]
    return K, (area[rows] - area.mean()) / area.std()


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("t", [1e-7, 3.0, 1e8])
def test_the_target_law_maps_the_objective_exactly(loss, t):
    """P(y, coef, b) = factor * P'(y / t, coef / t, b / t) at random models: one problem in two units."""
    K, y = regression(20)
    problem = Problem.create(K, y, "l1_mkl", loss=loss, loss_params=LOSSES[loss], C=0.7, C2=0.3)
    scaled = rescale_targets(problem, t)
    rng = np.random.default_rng(0)
    for _ in range(5):
        coef, intercept = rng.normal(size=problem.coef_shape), rng.normal()
        here = objectives.evaluate(problem, coef, intercept)
        there = objectives.evaluate(scaled.problem, coef / t, intercept / t)
        assert here == pytest.approx(scaled.objective_factor * there, rel=1e-10)


def test_only_real_targets_outside_the_band_under_a_homogeneous_loss_are_rescaled():
    K, y = regression(20)
    y = y / np.abs(y).max()
    for t in (SCALE_BAND[0], 1.0, SCALE_BAND[1]):
        assert unit_scale(Problem.create(K, t * y, "l1_mkl", loss="squared")) is None
    far = unit_scale(Problem.create(K, 1e9 * y, "l1_mkl", loss="squared", C=2.0))
    assert far.target_scale == pytest.approx(1e9) and np.abs(far.problem.y).max() == pytest.approx(1.0)
    assert far.problem.params["C"] == pytest.approx(2e-9) and far.objective_factor == pytest.approx(1e18)
    labels = np.sign(y) + (y == 0)
    assert unit_scale(Problem.create(K, labels, "l1_mkl", loss="logistic")) is None  # labels: no law


def scaled_problem(loss: str, t: float, s: float) -> dict:  # type: ignore[type-arg]
    """``solve``'s arguments for the regression problem on ``s K`` and ``t y``, its parameters
    mapped by the laws (inverse maps: ``1 / t``, ``1 / s``) so that it is the same problem."""
    K, y = regression()
    degree = kernelfuse.get_registry().create("loss", loss, **LOSSES[loss]).in_units(t)[1]
    params, _ = LAW({"C": 0.1, "C2": 0.01}, 1.0 / t, degree)
    params, _ = FAMILIES["l1_mkl"].scaling(params, 1.0 / s)
    loss_params = {"eps": t * LOSSES[loss]["eps"]} if LOSSES[loss] else {}
    return {"K": s * K, "y": t * y, "family": "l1_mkl", "loss": loss, **loss_params, **params}


@pytest.mark.parametrize(("solver", "loss", "s"), [("spicymkl", "squared", 1.0), ("cvxpy", "squared", 1.0),
                                                   ("spicymkl", "eps-insensitive", 1.0),
                                                   ("spicymkl", "squared", 1e9)])
def test_targets_and_C_at_1e15_give_the_same_model_in_the_callers_units(solver, loss, s):
    """Targets times t = 1e15 and C by the law (times t for the squared loss; eps times t for
    the epsilon-insensitive one), on kernels times s: the problem is the unit one in other
    units, solved in the unit one's and answered in the caller's.  Both runs certify their
    gaps, so their objectives, in one unit, lie within the sum of the gaps; the squared loss
    is 2-strongly convex in the decision values, so ``||f - f*||^2 <= P(f) - P*`` bounds
    the distance of each model's decision values to the optimum's by its certified gap."""
    t = 1e15
    base = kernelfuse.solve(**scaled_problem(loss, 1.0, 1.0), solver=solver)
    far_args = scaled_problem(loss, t, s)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: neither C nor the run is far off
        far = kernelfuse.solve(**far_args, solver=solver)
    assert base.status == far.status == "converged"
    degree = 2 if loss == "squared" else 1
    factor = t**degree
    slack = {"base": base.gap * max(1.0, abs(base.objective)), "far": far.gap * max(1.0, abs(far.objective))}
    assert abs(far.objective / factor - base.objective) <= (slack["base"] + slack["far"] / factor) * (1 + 1e-6) \
        + 1e-12 * abs(base.objective)
    assert far.dual_objective <= far.objective * (1 + 1e-12)
    if loss == "squared":
        K = scaled_problem(loss, 1.0, 1.0)["K"]
        f_base = np.einsum("mij,mj->i", K, base.coef) + base.intercept
        f_far = np.einsum("mij,mj->i", far_args["K"], far.coef) + far.intercept
        distance = math.sqrt(slack["base"]) + math.sqrt(slack["far"] / factor)
        assert np.linalg.norm(f_far / t - f_base) <= distance * (1 + 1e-6) + 1e-9 * np.linalg.norm(f_base)


def test_C_far_above_unit_scale_is_warned_with_the_limit_in_the_callers_units():
    """A hinge problem at C far above :data:`SVM_C_LIMIT` at unit scale warns, naming C and the C
    that keeps the unit-scale C at the limit; the law maps C linearly, so that C is the limit
    itself on unit kernels."""
    K, y, _ = small_problem("l1_mkl_sq", seed=0)
    K = K / np.abs(K).max()
    with pytest.warns(UserWarning, match=r"C = 1e\+15 is 1e\+15 at unit scale .* C <= 1e\+08"):
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", C=1e15, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", C=SVM_C_LIMIT, max_iter=2)


def test_weighted_targets_far_from_unit_scale_are_solved_rescaled_too():
    """The weighted squared loss keeps the loss's law (weights unchanged): targets x 1e15 with C
    mapped by the law give the unscaled solve's objective times t^2, certified."""
    K, y = breast_cancer_kernels(n=40, m=3, seed=2)
    y = 0.7 * y + 0.3 * np.random.default_rng(2).normal(size=y.size)
    weight = np.random.default_rng(3).uniform(0.5, 2.0, size=y.size)
    t = 1e15
    base = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="squared", C=0.1,
                            sample_weight=weight, tol=1e-8)
    far = kernelfuse.solve(K, t * y, solver="spicymkl", family="l1_mkl", loss="squared", C=0.1 * t,
                           sample_weight=weight, tol=1e-8)
    assert base.converged and far.converged
    assert far.objective / t**2 == pytest.approx(base.objective, rel=1e-8 + far.gap + base.gap)
