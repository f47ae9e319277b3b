"""OBSCURE / Pegasos-MKL: the (2,p) mirror map, the kernelised iterate, the stages, and the cvxpy optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels, pnorm_reference, wine_kernels
from kernelfuse import Problem, get_registry
from kernelfuse.plugins.obscure.group_norm_map import GroupNormMirrorMap
from kernelfuse.plugins.obscure.kernel_expansion import KernelExpansion
from kernelfuse.problem import objectives
from kernelfuse.problem.regularizers import lp_norm
from kernelfuse.testing import assert_within_certified

#: Runs stopped by max_iter on purpose (a fixed number of epochs) warn; expected here.
pytestmark = pytest.mark.filterwarnings("ignore:solver .* stopped with status 'max_iter'")

REL_TOL = 1e-3  # the tolerance for OBSCURE against cvxpy
PS = [1.01, 1.25, 1.5, 2.0]
LAM = 0.003  # unit-trace kernels on 40 points: an optimum well inside (0, P(0))


@pytest.mark.parametrize("p", PS)
def test_the_mirror_map_and_its_conjugate(p):
    mirror_map = GroupNormMirrorMap(p)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(5, 3))
    w = mirror_map.grad_h_conjugate(theta)
    np.testing.assert_allclose(mirror_map.grad_h(w), theta, rtol=1e-9, atol=1e-12)  # inverse maps
    block_norms = np.linalg.norm(theta, axis=1)
    # ||grad h*(theta)||_{2,p} = ||theta||_{2,q} / q, and h(w) + h*(theta) = <w, theta> (Fenchel).
    assert lp_norm(np.linalg.norm(w, axis=1), p) == pytest.approx(mirror_map.dual_norm(block_norms) / mirror_map.q)
    assert mirror_map.h(w) + mirror_map.dual_norm(block_norms) ** 2 / (2 * mirror_map.q) == \
        pytest.approx(np.sum(w * theta))
    z = mirror_map.grad_h_conjugate(rng.normal(size=(5, 3)))
    assert mirror_map.divergence(w, z) > 0 and mirror_map.divergence(w, w) == pytest.approx(0, abs=1e-12)
    # Lemma 1: scaling theta projects w onto the ball, and is the Bregman projection.
    radius = 0.3 * lp_norm(np.linalg.norm(w, axis=1), p)
    factor = mirror_map.projection_factor(mirror_map.dual_norm(block_norms), radius)
    projected = mirror_map.grad_h_conjugate(factor * theta)
    assert lp_norm(np.linalg.norm(projected, axis=1), p) == pytest.approx(radius)
    for _ in range(20):  # no point of the ball is closer to w in D_h
        other = rng.normal(size=(5, 3))
        other *= radius / lp_norm(np.linalg.norm(other, axis=1), p) * rng.uniform(0.2, 1.0)
        assert mirror_map.divergence(other, w) >= mirror_map.divergence(projected, w) - 1e-12
    assert mirror_map.projection_factor(mirror_map.dual_norm(block_norms), 10 * radius / 0.3) == 1.0


def test_the_kernel_expansion_matches_explicit_products():
    K, _ = wine_kernels(n=30, m=4, seed=1)
    expansion = KernelExpansion.zeros(3, K)
    rng = np.random.default_rng(2)
    A = np.zeros((3, 30))
    for step in range(40):
        i, u = int(rng.integers(30)), rng.normal(size=3) * (rng.random(3) < 0.6)
        expansion.add(i, u)
        A[:, i] += u
        factor = rng.uniform(0.5, 1.0) if step % 3 else 0.9
        expansion.shrink(factor)
        A *= factor
    weights = rng.uniform(0.1, 1.0, size=4)
    products = np.einsum("mij,cj->cmi", K, A)
    np.testing.assert_allclose(expansion.scale * expansion.image, products, atol=1e-12)
    np.testing.assert_allclose(expansion.squared_norms, np.einsum("cmi,ci->m", products, A), rtol=1e-9)
    coef = expansion.coef(weights)
    np.testing.assert_allclose(coef, weights[:, None, None] * A[None], atol=1e-14)
    np.testing.assert_allclose(expansion.decision_values(weights), np.einsum("mij,mcj->ic", K, coef), atol=1e-12)
    np.testing.assert_allclose(expansion.values_at(weights, 7), expansion.decision_values(weights)[7])
    assert expansion.rows_read == 40 * 4
    fresh = expansion.copy()
    assert fresh.scale == 1.0 and fresh.rows_read == 0
    np.testing.assert_allclose(fresh.decision_values(weights), expansion.decision_values(weights))



@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("solver", ["obscure", "pegasos-mkl"])
@pytest.mark.parametrize("data, seed", [("binary", 0), ("binary", 1), ("multiclass", 0)])
def test_reaches_the_cvxpy_optimum(p, solver, data, seed):
    K, y = (breast_cancer_kernels if data == "binary" else wine_kernels)(n=40, m=4, seed=seed)
    best = pnorm_reference(K, y, p, LAM)
    result = kernelfuse.solve(K, y, solver=solver, family="pnorm_mkl", p=p, lam=LAM,
                              max_iter=300, tol=1e-12, seed=seed)
    # Within REL_TOL of the certified optimum, never below its lower bound.
    assert_within_certified(result, best, REL_TOL, scale=abs(best.interval[1]))
    assert_within_certified(result, best)  # and within its own certified gap
    problem = Problem.create(K, y, "pnorm_mkl", p=p, lam=LAM)
    assert objectives.evaluate(problem, result.coef) == pytest.approx(result.objective, rel=1e-12)
    assert result.coef.shape == problem.coef_shape
    assert result.counters["examples"] == result.n_iter * 40 and result.counters["kernel_passes"] > 0
    assert result.status == ("converged" if result.gap <= 1e-12 else "max_iter")  # a status is a promise


def test_the_online_stage_bounds_the_optimum():
    """R = sqrt(2 P(w_1) / lam) >= ||w*||_{2,p}, checked against cvxpy's optimum."""
    registry = get_registry()
    for seed, p in ((0, 1.25), (1, 2.0), (2, 1.01)):
        K, y = breast_cancer_kernels(n=40, m=4, seed=seed)
        problem = Problem.create(K, y, "pnorm_mkl", p=p, lam=LAM)
        oracle = registry.create("oracle", "expansion-model")
        optimizer = registry.create("optimizer", "online-batch", online_epochs=3, seed=seed)
        point, oracle_state = oracle.init(problem)

        def evaluate(trial, oracle=oracle, oracle_state=oracle_state):
            return oracle.query(trial, oracle_state)[0]

        answer = evaluate(point)
        state = optimizer.init(problem, point, answer)
        assert answer.objective == pytest.approx(1.0)  # P(0): the hinge at f = 0
        while state.stage == "online":
            point, answer, state = optimizer.step(point, answer, state, evaluate)
        assert state.online_epochs_done == 3 and state.t == 3 * 40
        assert state.radius == pytest.approx(math.sqrt(2 * min(answer.objective, 1.0) / LAM))
        best = pnorm_reference(K, y, p, LAM)
        optimum_norm = lp_norm(objectives.rkhs_norms(K, best.coef), p)
        assert optimum_norm <= state.radius
        point, answer, state = optimizer.step(point, answer, state, evaluate)  # stochastic epochs stay in the ball
        norms = objectives.rkhs_norms(K, answer.coef)
        assert lp_norm(norms, p) <= state.radius * (1 + 1e-9)


def test_p_two_is_the_svm_on_the_sum_kernel():
    """p = 2: (lam/2) sum_m ||f_m||^2 + mean hinge is an SVM (no intercept) on sum_m K_m."""
    import cvxpy as cp

    K, y = breast_cancer_kernels(n=40, m=4, seed=3)
    result = kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", p=2.0, lam=LAM,
                              max_iter=300, tol=1e-12, seed=0)
    total = K.sum(axis=0)
    L = np.linalg.cholesky(total + 1e-12 * np.eye(40))
    a = cp.Variable(40)
    svm = cp.Problem(cp.Minimize(LAM / 2 * cp.sum_squares(L.T @ a)
                                 + cp.sum(cp.pos(1 - cp.multiply(y, total @ a))) / 40))
    svm.solve(solver="CLARABEL")
    f = np.einsum("mij,mj->i", K, result.coef)
    assert result.objective == pytest.approx(svm.value, rel=REL_TOL)
    assert np.mean(np.sign(f) == np.sign(total @ a.value)) >= 0.95
    assert np.linalg.norm(f - total @ a.value) <= 0.1 * np.linalg.norm(total @ a.value)


def test_runs_are_reproducible_with_a_seed_and_pegasos_is_one_option():
    K, y = wine_kernels(n=40, m=4, seed=0)
    runs = [kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", p=1.5, lam=LAM,
                             max_iter=5, seed=seed) for seed in (7, 7, 8)]
    np.testing.assert_array_equal(runs[0].coef, runs[1].coef)
    assert not np.array_equal(runs[0].coef, runs[2].coef)
    recipe = get_registry().get("recipe", "pegasos-mkl").factory
    optimizer = recipe.build().optimizer
    assert optimizer.adaptive is False and optimizer.online_epochs == 0 and optimizer.stochastic_epochs is None
    assert recipe.build().stop.name == "gap"


def test_bad_parameters_are_refused():
    with pytest.raises(kernelfuse.ValidationError, match="p must be in"):
        GroupNormMirrorMap(1.0)
    K, y = breast_cancer_kernels(n=20, m=2, seed=0)
    with pytest.raises(kernelfuse.IncompatiblePartsError, match="does not solve family 'l1_mkl'"):
        kernelfuse.solve(K, y, solver="obscure", family="l1_mkl")
    with pytest.raises(kernelfuse.UnknownNameError, match="did you mean 'online_epochs'"):
        kernelfuse.solve(K, y, solver="obscure", family="pnorm_mkl", online_epoch=3)


@pytest.mark.parametrize("normalization", ["unit-trace", "spherical", "none"])
def test_kernel_rows_on_demand_match_the_stack(normalization):
    from sklearn.datasets import load_wine

    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.functions import compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer
    from kernelfuse.kernels.rows import SpecKernelRows

    X, y = load_wine(return_X_y=True)
    rows_taken = np.random.default_rng(5).permutation(y.size)[:50]
    X, y = X[rows_taken], y[rows_taken]
    X = (X - X.mean(0)) / X.std(0)
    specs = kernel_grid(X.shape[1], widths=(2.0,), degrees=(2,))[-4:] + kernel_grid(3, widths=(1.0,))[:2]
    stack = KernelNormalizer(normalization).fit(specs, X).transform(compute_kernels(specs, X))
    rows = SpecKernelRows(specs, X, normalization)
    assert rows.shape == stack.shape
    np.testing.assert_allclose(rows.rows(7), stack[:, 7, :], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rows.diagonal(), np.diagonal(stack, axis1=1, axis2=2), rtol=1e-12)
    coef = np.zeros((len(specs), 3, 50))
    coef[:, :, [2, 9, 31]] = np.random.default_rng(0).normal(size=(len(specs), 3, 3))
    np.testing.assert_allclose(objectives.kernel_products(rows, coef),
                               objectives.kernel_products(stack, coef), atol=1e-12)
    # The same run from rows as from the stack; the objective is evaluated from rows too.
    on_rows = kernelfuse.solve(rows, y, solver="obscure", family="pnorm_mkl", lam=1e-3, max_iter=4, seed=1)
    on_stack = kernelfuse.solve(stack, y, solver="obscure", family="pnorm_mkl", lam=1e-3, max_iter=4, seed=1)
    np.testing.assert_allclose(on_rows.coef, on_stack.coef, rtol=1e-9, atol=1e-12)
    assert on_rows.objective == pytest.approx(on_stack.objective, rel=1e-9)
    with pytest.raises(kernelfuse.IncompatiblePartsError, match="needs the kernel stack in memory"):
        kernelfuse.solve(rows, np.where(y == 0, 1.0, -1.0), solver="spicymkl", family="l1_mkl")


def test_rows_prefetched_in_blocks_are_the_rows_and_obscure_prefetches_the_examples_that_will_update():
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.rows import SpecKernelRows

    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=150) > 0, 1.0, -1.0)
    specs = kernel_grid(4, widths=(1.0, 4.0), degrees=(2,))
    one_by_one = SpecKernelRows(specs, X, "spherical", cache_bytes=0)
    blocks = SpecKernelRows(specs, X, "spherical")
    blocks.prefetch(np.array([5, 9, 5, 140]))  # duplicates computed once
    assert sorted(blocks._cache) == [5, 9, 140]
    for i in (5, 9, 140):
        np.testing.assert_allclose(blocks.rows(i), one_by_one.rows(i), rtol=1e-13, atol=1e-15)
    tight = SpecKernelRows(specs, X, "spherical", cache_bytes=8 * len(specs) * 150 * 3)  # 3 row sets
    tight.prefetch(np.arange(4))  # a block the cache cannot hold: nothing computed
    assert len(tight._cache) == 0

    # Count, per run, the row sets computed in blocks and those computed one at a time.
    computed = {"block": 0, "single": 0}
    original_prefetch, original_rows = SpecKernelRows.prefetch, SpecKernelRows.rows

    def counting_prefetch(self, indices):
        computed["block"] += len(self._missing(indices))
        return original_prefetch(self, indices)

    def counting_rows(self, i):
        computed["single"] += i not in self._cache
        return original_rows(self, i)

    SpecKernelRows.prefetch, SpecKernelRows.rows = counting_prefetch, counting_rows
    runs, counts = {}, {}
    try:
        for size in (0, 32):
            computed.update(block=0, single=0)
            runs[size] = kernelfuse.solve(SpecKernelRows(specs, X, "spherical"), y, solver="obscure",
                                          family="pnorm_mkl", lam=1e-2, max_iter=6, seed=0, prefetch=size)
            counts[size] = dict(computed)
    finally:
        SpecKernelRows.prefetch, SpecKernelRows.rows = original_prefetch, original_rows
    # The same iterates (rows in a block differ from single rows in the last bit only): the
    # prediction only chooses which rows are computed early.
    np.testing.assert_allclose(runs[32].coef, runs[0].coef, rtol=1e-10, atol=1e-13)
    assert counts[0]["block"] == 0 and counts[0]["single"] > 0
    # Predicted from the block's decision values: most rows come in blocks, few are missed
    # (computed alone when their example updates), and few are computed for nothing.
    needed = counts[0]["single"]
    assert counts[32]["block"] >= 4 * counts[32]["single"]
    assert needed <= counts[32]["block"] + counts[32]["single"] <= 1.25 * needed


def test_kernel_rows_reuse_the_buffers_of_row_sets_the_cache_dropped_unless_held():
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.rows import SpecKernelRows

    X = np.random.default_rng(1).normal(size=(40, 3))
    specs = kernel_grid(3, widths=(1.0,), degrees=(1,))
    exact = SpecKernelRows(specs, X, cache_bytes=0)
    rows = SpecKernelRows(specs, X, cache_bytes=8 * len(specs) * 40 * 2)  # room for two row sets
    first = rows.rows(0)
    held = first.copy()
    rows.rows(1)
    rows.rows(2)  # drops row set 0, which `first` still holds: not reused
    assert not rows._spare
    np.testing.assert_array_equal(first, held)
    del first
    rows.rows(3)  # drops row set 1, held by no one: its buffer is kept for the next row set
    assert len(rows._spare) == 1
    spare = rows._spare[0]
    fourth = rows.rows(4)  # computed into that buffer; caching it drops row set 2, now the spare
    assert fourth is spare and not fourth.flags.writeable
    assert len(rows._spare) == 1 and rows._spare[0] is not fourth
    for i in (2, 3, 4, 0, 1):
        np.testing.assert_array_equal(rows.rows(i), exact.rows(i))


def test_kernel_rows_keep_a_bounded_cache_of_recent_rows():
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.rows import SpecKernelRows

    X = np.random.default_rng(0).normal(size=(30, 3))
    specs = kernel_grid(3, widths=(1.0,), degrees=(1,))
    row_set_bytes = 8 * len(specs) * 30
    rows = SpecKernelRows(specs, X, cache_bytes=2 * row_set_bytes)  # room for two row sets
    first = rows.rows(0)
    assert rows.rows(0) is first and not first.flags.writeable  # served from the cache
    rows.rows(1)
    rows.rows(2)  # evicts 0, the least recently used
    again = rows.rows(0)
    assert again is not first
    np.testing.assert_array_equal(again, first)
    assert len(rows._cache) == 2
    uncached = SpecKernelRows(specs, X, cache_bytes=0)
    np.testing.assert_array_equal(uncached.rows(0), first)
    assert uncached.rows(0) is not uncached.rows(0)


def test_kernel_entries_are_the_rows_entries():
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.rows import KernelRows, SpecKernelRows, kernel_entries

    X = np.random.default_rng(2).normal(size=(60, 3))
    rows = SpecKernelRows(kernel_grid(3, widths=(1.0, 3.0), degrees=(2,)), X, "spherical", cache_bytes=0)
    indices, columns = np.array([4, 17, 59]), np.array([0, 17, 33, 4])
    expected = np.stack([rows.rows(int(i))[:, columns] for i in indices], axis=1)
    np.testing.assert_allclose(rows.entries(indices, columns), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(KernelRows.entries(rows, indices, columns), expected, rtol=1e-13, atol=1e-15)
    stack = np.stack([np.stack([rows.rows(i)[m] for i in range(60)]) for m in range(rows.shape[0])])
    np.testing.assert_array_equal(kernel_entries(stack, indices, columns), stack[:, indices][:, :, columns])


def test_kernel_rows_on_two_blas_threads_are_the_same_numbers(monkeypatch):
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.rows import SpecKernelRows
    from kernelfuse.runtime import parallel

    X = np.random.default_rng(4).normal(size=(300, 40))
    specs = kernel_grid(40, widths=(1.0, 3.0), degrees=(2,))
    one = SpecKernelRows(specs, X, "spherical", cache_bytes=0, blas_threads=1)
    two = SpecKernelRows(specs, X, "spherical", cache_bytes=0, blas_threads=2)
    for indices in (np.array([7]), np.arange(0, 300, 9)):
        for a, b in zip(one._compute(indices), two._compute(indices)):
            np.testing.assert_array_equal(a, b)
    # The default: a worker's own limit, one inside a parallel run, else the cores.
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert parallel.large_product_threads() == 3
    monkeypatch.setattr(parallel, "_PINNED_RUNS", 1)
    assert parallel.large_product_threads() == 1
