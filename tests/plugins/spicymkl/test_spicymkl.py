"""SpicyMKL against the exact cvxpy optimum of l1_mkl, its parts on their own, and its certificate."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse import IncompatiblePartsError, Problem, ValidationError, get_registry
from kernelfuse.assembly.result import roundoff
from kernelfuse.parts.loss import Loss
from kernelfuse.plugins.spicymkl.proximal_point import ProximalPoint
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import feasible_dual_point, separable_lower_bound
from kernelfuse.testing import assert_within_certified

REL_TOL = 1e-6  # the tolerance for SpicyMKL against cvxpy
LOSSES = ["logistic", "squared", "squared-hinge", "hinge", "eps-insensitive"]


def small_problem(loss: str, seed: int, n: int = 50, m: int = 8) -> tuple[np.ndarray, np.ndarray]:
    K, y = breast_cancer_kernels(n=n, m=m, seed=seed)
    if loss in ("squared", "eps-insensitive"):  # real targets
        y = 0.7 * y + 0.3 * np.random.default_rng(seed).normal(size=y.size)
    return K, y


def check_against_cvxpy(K, y, loss, **params):
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, **params)
    result = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, **params)
    assert result.status == "converged" and result.gap <= 1e-6
    assert_within_certified(result, reference, REL_TOL)  # its lower bound valid too
    problem = Problem.create(K, y, "l1_mkl", loss=loss, **params)
    assert objectives.evaluate(problem, result.coef, result.intercept) == pytest.approx(
        result.objective, rel=1e-12)
    return reference, result


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("C", [0.02, 0.1, 0.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_spicymkl_reaches_the_cvxpy_optimum(loss, C, seed):
    K, y = small_problem(loss, seed)
    reference, result = check_against_cvxpy(K, y, loss, C=C)
    # The selected kernels match cvxpy's where its weights are clearly non-zero.
    clear = reference.kernel_weights > 1e-3
    assert np.all(result.kernel_weights[clear] > 1e-4)
    assert np.all(result.kernel_weights[reference.kernel_weights < 1e-7] < 1e-3)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("n, m, C, C2", [(40, 120, 0.02, 0.0), (50, 200, 0.1, 0.0), (40, 150, 0.05, 0.5)])
def test_screened_checks_reach_the_cvxpy_optimum_with_many_kernels(loss, n, m, C, C2):
    """With many kernels the checks read only the kernels whose norm bound could pass the threshold
    (kernelfuse.plugins.spicymkl.kernel_norm_bounds), and stop at ``cap`` joiners: the answer is still the optimum."""
    K, y = breast_cancer_kernels(n=n, m=m, seed=m)
    if loss in ("squared", "eps-insensitive"):
        y = 0.7 * y + 0.3 * np.random.default_rng(m).normal(size=y.size)
    params = {"C": C, "C2": C2} if C2 else {"C": C}
    reference, result = check_against_cvxpy(K, y, loss, **params)
    clear = reference.kernel_weights > 1e-3
    assert np.all(result.kernel_weights[clear] > 1e-4)
    assert np.all(result.kernel_weights[reference.kernel_weights < 1e-7] < 1e-3)
    # Once the iterates settle a check reads only the kernels near the threshold: the last outer
    # step reads at most a tenth of the kernels, and all checks together less than one pass per
    # outer step (without the bounds each step read every kernel at least once).
    per_step = np.diff([row.counters["check_passes"] for row in result.history])
    assert per_step[-1] <= 0.1 and per_step.sum() < per_step.size


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("C, C2", [(0.05, 0.2), (0.3, 1.0)])
def test_elastic_net_reaches_the_cvxpy_optimum(loss, C, C2):
    K, y = small_problem(loss, seed=2)
    check_against_cvxpy(K, y, loss, C=C, C2=C2)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("C2", [0.0, 0.4])
def test_lower_bound_is_valid_from_any_rho(loss, C2):
    K, y = small_problem(loss, seed=3, n=40, m=5)
    problem = Problem.create(K, y, "l1_mkl", loss=loss, C=0.1, C2=C2)
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss=loss, C=0.1, C2=C2)
    assert reference.status == "converged", reference.message
    upper = reference.interval[1] + roundoff(reference.interval[1], y.size)
    rng = np.random.default_rng(0)
    finite = 0
    for _ in range(20):
        bound, passes = separable_lower_bound(problem, rng.normal(size=y.size))
        assert passes == 1 and bound <= upper
        finite += np.isfinite(bound)
    assert finite == 20  # every rho is made feasible


@pytest.mark.parametrize("loss", ["hinge", "eps-insensitive", "squared-hinge", "squared"])
def test_feasible_dual_point_is_the_projection(loss):
    """Projection onto {sum = 0} and the domain box: by its KKT conditions, the clip of a shift
    of rho that sums to zero (and nothing else) is it."""
    K, y = small_problem(loss, seed=4, n=30, m=2)
    problem = Problem.create(K, y, "l1_mkl", loss=loss, C=0.1)
    rho = 2.0 * np.random.default_rng(1).normal(size=y.size)
    point, shift = feasible_dual_point(problem, rho)
    lower, upper = (problem.loss.conjugate_domain(y) if hasattr(problem.loss, "conjugate_domain")
                    else (np.full(y.size, -np.inf), np.full(y.size, np.inf)))
    assert abs(point.sum()) <= 1e-12
    np.testing.assert_array_equal(point, np.clip(rho - shift, lower, upper))
    assert np.isfinite(problem.loss.conjugate(y, point)).all()
    if loss != "squared":
        assert np.any(point != rho - shift)  # the box was active: not a plain mean removal


def test_the_oracle_answers_with_the_proximal_point():
    """The oracle on its own: its model solves the proximal problem (checked with cvxpy)."""
    import cvxpy as cp

    from kernelfuse.plugins.reference.cvxpy_solver import factor_kernel

    K, y = breast_cancer_kernels(n=30, m=4, seed=5)
    problem = Problem.create(K, y, "l1_mkl", loss="hinge", C=0.2)
    oracle = get_registry().create("oracle", "smoothed-dual-newton", newton_tol=1e-11, newton_rtol=0.0)
    start, state = oracle.init(problem)
    rng = np.random.default_rng(0)
    centre = ProximalPoint(0.05 * rng.normal(size=(4, 30)), 0.3, 0.5 * rng.normal(size=30), 2.0, 3.0)
    answer, _ = oracle.query(centre, state)
    # The same proximal step as a conic program, slack variables included (section 3.3).
    factors = [factor_kernel(k, 1e-10) for k in K]
    u = [cp.Variable(f.rank) for f in factors]
    b, z = cp.Variable(), cp.Variable(30)
    u0 = [f.L.T @ c for f, c in zip(factors, centre.coef)]
    f_expr = sum(f.L @ v for f, v in zip(factors, u)) + b
    objective = (cp.sum(cp.pos(1 - cp.multiply(y, z))) + 0.2 * sum(cp.norm(v) for v in u)
                 + sum(cp.sum_squares(v - v0) for v, v0 in zip(u, u0)) / (2 * centre.gamma)
                 + cp.square(b - centre.intercept) / (2 * centre.gamma_b)
                 + cp.sum_squares(z - centre.slack) / (2 * centre.gamma))
    program = cp.Problem(cp.Minimize(objective), [z == f_expr])
    program.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    f_answer = np.einsum("mij,mj->i", K, answer.coef) + answer.intercept
    np.testing.assert_allclose(f_answer, f_expr.value, atol=1e-5)
    assert answer.intercept == pytest.approx(b.value, abs=1e-5)
    assert answer.value == pytest.approx(program.value, rel=1e-6)  # the Moreau envelope
    # The envelope's gradient moves the slack centre to the loss arguments z+ = f+.
    moved = centre.advanced(answer.coef, answer.intercept, answer.gradient)
    np.testing.assert_allclose(moved.slack, z.value, atol=1e-5)
    assert start.gamma == 0.0 and start.slack is not None


def kernel_terms(hessian_tol: float):
    from kernelfuse.plugins.spicymkl.active_kernels import KernelTerms
    from kernelfuse.problem.regularizers import BlockL1

    K, _ = breast_cancer_kernels(n=20, m=6, seed=4)
    rng = np.random.default_rng(1)
    alpha, rho = 0.3 * rng.normal(size=(6, 20)), rng.normal(size=20)
    K_alpha = np.einsum("mij,mj->mi", K, alpha)
    return K, KernelTerms(K, np.arange(6), K_alpha, np.einsum("mi,mi->m", alpha, K_alpha), 0.7,
                          BlockL1(weight=1.0), rho, np.einsum("mij,j->mi", K, rho), hessian_tol)


def exact_hessian(K, terms) -> np.ndarray:
    """``gamma [sum_m s_m K_m + sum_m ((r'_m - s_m) / r_m^2) (K_m v_m)(K_m v_m)']``, term by term."""
    K_v = terms.K_v()
    H = sum(s * k for s, k in zip(terms.scale, K))
    H = H + sum(((d - s) / r**2) * np.outer(kv, kv)
                for d, s, r, kv in zip(terms.slope, terms.scale, terms.norms, K_v) if s > 0)
    return terms.gamma * H


def test_the_lazy_hessian_is_exact_at_zero_tolerance_and_reads_only_moved_weights():
    K, exact = kernel_terms(0.0)
    K, lazy = kernel_terms(0.5)
    assert 0 < np.count_nonzero(exact.scale) < 6  # some kernels active, some not
    np.testing.assert_allclose(exact.hessian(), exact_hessian(K, exact), rtol=1e-12, atol=1e-14)
    first = lazy.hessian()  # the first call reads every active kernel
    np.testing.assert_allclose(first, exact_hessian(K, lazy), rtol=1e-12, atol=1e-14)
    assert lazy.passes == pytest.approx(np.count_nonzero(lazy.scale) / 6)
    weights_before = lazy.scale.copy()
    d = 1e-3 * np.random.default_rng(2).normal(size=20)
    for terms in (exact, lazy):
        terms.move(d, terms.direction(d)[0], 1.0)
    read_before = lazy.passes
    assert not np.array_equal(weights_before, lazy.scale)  # the weights did move
    np.testing.assert_allclose(exact.hessian(), exact_hessian(K, exact), rtol=1e-12, atol=1e-14)
    H = lazy.hessian()
    # A small step moves no weight by half: no kernel is read again, the old weights are kept...
    assert lazy.passes == read_before
    kept = exact_hessian(K, lazy) + lazy.gamma * sum(
        (w - s) * k for w, s, k in zip(lazy._weights, lazy.scale, K))
    np.testing.assert_allclose(H, kept, rtol=1e-12, atol=1e-14)
    # ...and the approximation stays positive semi-definite and close to the exact Hessian.
    assert np.linalg.eigvalsh(H).min() > -1e-12
    assert np.abs(H - exact_hessian(K, lazy)).max() <= 0.5 * np.abs(exact_hessian(K, lazy)).max()


def test_the_lazy_hessian_tolerance_must_stay_below_one():
    """At 1 or above a kernel leaving the active set (s_m = 0) is never re-read: refused."""
    K, y = small_problem("logistic", seed=0)
    with pytest.raises(ValidationError, match=r"hessian_tol must be in \[0, 1\), got 1.5"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", hessian_tol=1.5)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_the_lazy_hessian_changes_the_path_not_the_answer(loss):
    K, y = small_problem(loss, seed=3, n=60, m=12)
    exact = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=0.05,
                             **{"oracle.hessian_tol": 0.0})
    lazy = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=0.05)
    assert exact.status == lazy.status == "converged"
    assert lazy.objective == pytest.approx(exact.objective, rel=2e-6)
    np.testing.assert_array_equal(lazy.kernel_weights > 1e-6, exact.kernel_weights > 1e-6)


def test_the_dual_starts_inside_the_feasible_ball():
    from kernelfuse.plugins.spicymkl.smoothed_dual_newton import _within_ball

    K, y = breast_cancer_kernels(n=25, m=5, seed=6)
    rho = -0.5 * y
    K_rho = np.einsum("mij,j->mi", K, rho)
    norms = np.sqrt(K_rho @ rho)
    scaled, K_scaled = _within_ball(rho, K_rho, 0.5 * norms.max())
    assert np.sqrt(K_scaled @ scaled).max() == pytest.approx(0.5 * norms.max(), rel=1e-12)
    np.testing.assert_allclose(K_scaled, np.einsum("mij,j->mi", K, scaled), rtol=1e-12)
    same, _ = _within_ball(rho, K_rho, 2 * norms.max())  # already inside: untouched
    assert same is rho


def test_the_optimizer_raises_the_penalties_geometrically():
    optimizer = get_registry().create("optimizer", "augmented-lagrangian", gamma0=2.0, growth=5.0,
                                      intercept_ratio=0.5, gamma_max=50.0)
    K, y = breast_cancer_kernels(n=3, m=2, seed=0)
    problem = Problem.create(K, y, "l1_mkl", loss="logistic", C=0.5)
    point = ProximalPoint(np.zeros((2, 3)))
    answer = kernelfuse.parts.oracle.OracleAnswer(value=0.0, gradient=np.zeros(7), coef=np.ones((2, 3)),
                                            objective=0.0, intercept=1.0)
    state = optimizer.init(problem, point, answer)  # the cap: gamma C <= gamma_max
    gammas = []
    for _ in range(5):
        point, _, state = optimizer.step(point, answer, state, lambda p: answer)
        gammas.append((point.gamma, point.gamma_b))
        assert np.array_equal(point.coef, answer.coef) and point.intercept == 1.0
    assert gammas == [(2.0, 1.0), (10.0, 5.0), (50.0, 25.0), (100.0, 50.0), (100.0, 50.0)]
    with pytest.raises(ValidationError, match="growth must be >= 1"):
        get_registry().create("optimizer", "augmented-lagrangian", growth=0.5)


def test_a_warm_centre_of_a_smooth_loss_starts_one_growth_step_up():
    """The first penalty is gamma0 / tr(K) at the zero centre and at a centre with a slack centre
    (the hinge's form); a centre away from zero without one (a warm start, smooth conjugate)
    starts at growth times it, still capped by gamma_max / C."""
    optimizer = get_registry().create("optimizer", "augmented-lagrangian", gamma0=2.0, growth=5.0,
                                      gamma_max=50.0)
    K, y = breast_cancer_kernels(n=3, m=2, seed=0)
    trace = float(np.einsum("mii->m", K).max())
    problem = Problem.create(K, y, "l1_mkl", loss="logistic", C=0.5)
    answer = kernelfuse.parts.oracle.OracleAnswer(value=0.0, gradient=np.zeros(7), coef=np.ones((2, 3)),
                                            objective=0.0, intercept=0.0)
    warm = np.ones((2, 3))
    cold_first, largest = optimizer.init(problem, ProximalPoint(np.zeros((2, 3))), answer)
    assert (cold_first, largest) == pytest.approx((min(2.0 / trace, 100.0), 100.0))
    assert optimizer.init(problem, ProximalPoint(warm), answer)[0] == pytest.approx(min(10.0 / trace, 100.0))
    assert optimizer.init(problem, ProximalPoint(warm, slack=np.zeros(3)), answer)[0] == cold_first


def test_parts_compose_by_name_and_parameters_route_to_them():
    K, y = breast_cancer_kernels(n=40, m=6, seed=6)
    slow = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=0.1,
                            growth=2.0, newton_rtol=0.0)
    fast = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=0.1)
    assert slow.converged and fast.converged and slow.n_iter > fast.n_iter
    assert slow.objective == pytest.approx(fast.objective, rel=1e-6)
    assert fast.counters["newton_steps"] > 0 and fast.counters["kernel_passes"] > 0


def test_the_penalty_is_the_problems_alone():
    """C and C2 are family parameters, read by the oracle from ``problem.regularizer``: no part
    holds a copy a caller could set to other values."""
    K, y = breast_cancer_kernels(n=30, m=3, seed=0)
    with pytest.raises(kernelfuse.UnknownNameError, match=r"'oracle.prox.C'(.|\n)*names: C, C2,"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=0.1,
                         **{"oracle.prox.C": 0.5})


def test_a_loss_without_a_conjugate_form_is_refused_clearly():
    @attrs.frozen
    class Cubic(Loss):
        name = "cubic"
        target = "real"

        def value(self, y, f):
            return np.abs(y - f) ** 3

        def derivative(self, y, f):
            return 3 * np.sign(f - y) * (f - y) ** 2

        def conjugate(self, y, rho):
            return np.abs(rho) ** 1.5 * 2 / (3 * np.sqrt(3)) + rho * y

    K, y = breast_cancer_kernels(n=30, m=3, seed=0)
    with pytest.raises(IncompatiblePartsError, match=r"lacks conjugate_prox\(\) or conjugate_second_derivative"):
        kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=Cubic(), C=0.1)
