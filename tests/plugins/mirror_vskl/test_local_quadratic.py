"""The local-quadratic mirror map: its QP, the SVM curvature it reads, and mirror-vskl's steps.

Tolerances: the simplex QP within 1e-7 (relative) of cvxpy's optimum of the
same QP (Clarabel's own accuracy); the curvature factor equal to central
differences of the oracle's gradient to 1e-5 (the active sets hold over
the difference step); mirror-vskl against cvxpy in test_vskl_solvers.py.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import IncompatiblePartsError, get_registry
from kernelfuse.numerics.simplex_qp import SimplexQP, project_simplices
from kernelfuse.plugins.mirror_vskl.vskl_bca import VSKLBlockCoordinateAscent
from kernelfuse.plugins.svm.active_set import ActiveSetSVM
from kernelfuse.problem.instance import Problem
from kernelfuse.testing import check_mirror_map


def random_qp(rng: np.random.Generator, duplicates: bool):
    n, r, n_groups = int(rng.integers(2, 80)), int(rng.integers(1, 25)), int(rng.integers(1, 4))
    groups = np.unique(np.sort(rng.integers(0, n_groups, n)), return_inverse=True)[1]
    R = rng.standard_normal((r, n)) * rng.uniform(0.1, 10.0)
    if duplicates:  # near-duplicate kernels: columns within 1e-4 of one another
        R[:, 1:] = R[:, :1] + 1e-4 * R[:, 1:]
    mu = 1e-8 * float(np.max(np.sum(R * R, axis=0)))
    return SimplexQP(R, mu, groups), 5.0 * rng.standard_normal(n)


def cvxpy_qp(qp: SimplexQP, theta: np.ndarray) -> float:
    x = cp.Variable(theta.size)
    objective = 0.5 * cp.sum_squares(qp.R @ x) + 0.5 * qp.mu * cp.sum_squares(x) - theta @ x
    sums = [cp.sum(x[qp.groups == j]) == 1 for j in range(qp.n_groups)]
    problem = cp.Problem(cp.Minimize(objective), [x >= 0, *sums])
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


@pytest.mark.parametrize("seed", range(40))
def test_simplex_qp_reaches_the_cvxpy_optimum(seed):
    rng = np.random.default_rng(seed)
    qp, theta = random_qp(rng, duplicates=seed % 3 == 0)
    start = 1.0 / np.bincount(qp.groups)[qp.groups]
    solution = qp.solve(theta, start)
    assert not solution.fallback
    x = solution.x
    assert np.all(x >= 0)
    np.testing.assert_allclose(np.bincount(qp.groups, weights=x), 1.0, rtol=1e-12)
    reference = cvxpy_qp(qp, theta)
    assert qp.value(x, theta) <= reference + 1e-7 * max(1.0, abs(reference))


def test_simplex_qp_fallback_is_the_same_optimum():
    rng = np.random.default_rng(5)
    qp, theta = random_qp(rng, duplicates=False)
    start = 1.0 / np.bincount(qp.groups)[qp.groups]
    exact = qp.solve(theta, start)
    forced = SimplexQP(qp.R, qp.mu, qp.groups, max_iter=1).solve(theta, start)
    assert forced.fallback
    assert qp.value(forced.x, theta) == pytest.approx(qp.value(exact.x, theta), rel=1e-6, abs=1e-9)


def test_projection_onto_simplices():
    groups = np.array([0, 0, 0, 1, 1])
    x = project_simplices(np.array([0.5, 0.5, 0.5, 3.0, -3.0]), groups)
    np.testing.assert_allclose(x, [1 / 3, 1 / 3, 1 / 3, 1.0, 0.0])


def oracle_answer(point: np.ndarray, K: np.ndarray, y: np.ndarray, C: float, q: float = 1.0,
                  groups: np.ndarray | None = None):
    problem = Problem.create(K, y, "vskl", groups=groups, C=C, q=q)
    oracle = VSKLBlockCoordinateAscent(svm_solver=ActiveSetSVM(kkt_tol=1e-12))
    _, state = oracle.init(problem)
    return oracle.query(point, state)[0]


def test_curvature_is_the_hessian_of_the_svm_optimum():
    """R'R equals central differences of the oracle's (Danskin) gradient."""
    K, y = breast_cancer_kernels(n=50, m=5, seed=0)
    point = np.array([0.3, 0.1, 0.25, 0.15, 0.2])
    answer = oracle_answer(point, K, y, C=5.0)
    R = answer.curvature()
    assert R.shape[1] == 5 and R.shape[0] >= 1
    hessian = R.T @ R
    h = 1e-6
    for j in range(5):
        step = np.zeros(5)
        step[j] = h
        plus = oracle_answer(point + step, K, y, C=5.0).gradient
        minus = oracle_answer(point - step, K, y, C=5.0).gradient
        np.testing.assert_allclose(hessian[:, j], (plus - minus) / (2 * h),
                                   rtol=1e-5, atol=1e-5 * np.abs(hessian).max())


def test_bound_map_is_a_mirror_map_and_its_step_minimises_the_model():
    K, y = breast_cancer_kernels(n=50, m=6, seed=1)
    groups = np.array([0, 0, 0, 1, 1, 1])
    point = np.full(6, 1 / 3)
    answer = oracle_answer(point, K, y, C=10.0, groups=groups)
    geometry = get_registry().create("mirror_map", "local-quadratic").at(point, answer)
    rng = np.random.default_rng(0)
    points = [point] + [np.concatenate([rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))])
                        for _ in range(4)]
    assert check_mirror_map(geometry, points, groups) == ["inverse", "divergence"]
    # The step at s = 1 minimises g'(x - lam) + 0.5 (x - lam)'(R'R + mu I)(x - lam) over the set.
    g = answer.gradient
    step = geometry.grad_h_conjugate(geometry.grad_h(point) - g, groups)
    x = cp.Variable(6)
    model = g @ (x - point) + 0.5 * cp.sum_squares(geometry.factor @ (x - point)) \
        + 0.5 * geometry.mu * cp.sum_squares(x - point)
    reference = cp.Problem(cp.Minimize(model), [x >= 0, cp.sum(x[:3]) == 1, cp.sum(x[3:]) == 1])
    reference.solve(solver=cp.CLARABEL)
    d = step - point
    ours = g @ d + geometry.divergence(step, point)
    assert ours <= reference.value + 1e-7 * abs(reference.value)


def test_newton_steps_need_few_svm_calls_whatever_the_number_of_kernels():
    """A grid of near-duplicate widths: entropic steps grow with log M, Newton steps do not."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics.pairwise import euclidean_distances
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer()
    X = StandardScaler().fit_transform(data.data)[:120]
    y = np.where(data.target[:120] == 1, 1.0, -1.0)
    D2 = euclidean_distances(X, squared=True)
    calls = {}
    for M in (5, 200):
        widths = np.geomspace(2.0, 40.0, M)
        K = np.exp(-D2[None] / (2 * widths[:, None, None] ** 2 * X.shape[1] / 30))
        K /= np.trace(K, axis1=1, axis2=2)[:, None, None]
        newton = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=100.0)
        assert newton.status == "converged" and newton.gap <= 1e-6
        calls["newton", M] = newton.counters["svm_calls"]
        # the paper's entropic steps, to a looser gap (to 1e-6 they take thousands at M = 200)
        entropic = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=100.0,
                                    mirror_map="entropic", tol=1e-4, max_iter=2000)
        assert entropic.status == "converged"
        assert newton.objective <= entropic.objective * (1 + 1e-9)
        calls["entropic", M] = entropic.counters["svm_calls"]
    assert calls["newton", 200] <= 10
    assert calls["newton", 200] <= 2 * calls["newton", 5]
    assert calls["entropic", 200] > 10 * calls["newton", 200]


def test_an_oracle_without_curvature_is_named():
    """The worst label's SVM (``mlmkl_max``) is not smooth where labels tie: no curvature."""
    from kernelfuse import Recipe
    from kernelfuse.assembly.outer_loop import OuterLoop

    K, y = breast_cancer_kernels(n=30, m=3, seed=0)
    Y = np.stack([y, -y, y], axis=1)
    recipe = Recipe("newton-worst-label", OuterLoop,
                    parts={"optimizer": ("optimizer", "mirror-descent"),
                           "optimizer.mirror_map": ("mirror_map", "local-quadratic"),
                           "oracle": ("oracle", "label-svms"),
                           "oracle.svm_solver": ("svm_solver", "active-set")})
    with pytest.raises(IncompatiblePartsError, match="reports its curvature.*entropic"):
        kernelfuse.solve(K, Y, solver=recipe.build(), family="mlmkl_max", C=1.0)


def test_paper_step_rules_need_the_entropic_map():
    K, y = breast_cancer_kernels(n=30, m=3, seed=0)
    with pytest.raises(kernelfuse.ValidationError, match="theorem-3.1.*mirror_map='entropic'"):
        kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", step_rule="theorem-3.1")
    r = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", mirror_map="entropic",
                         step_rule="theorem-3.1", max_iter=5000, tol=1e-4)
    assert math.isfinite(r.objective)
