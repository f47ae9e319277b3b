"""``WeightedLoss``: each capability is that of ``w * loss`` (weights 0 included)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from kernelfuse import get_registry
from kernelfuse.parts.loss import WeightedLoss

LOSSES = ["hinge", "squared-hinge", "logistic", "squared", "eps-insensitive"]


def data(name: str, n: int, seed: int) -> tuple[WeightedLoss, np.ndarray, np.ndarray]:
    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n) if loss.target == "real" else rng.choice([-1.0, 1.0], size=n)
    weight = rng.uniform(0.2, 3.0, size=n)
    weight[0] = 0.0
    return WeightedLoss(loss, weight), y, rng.normal(scale=2.0, size=n)


@pytest.mark.parametrize("name", LOSSES)
def test_value_derivative_and_name_are_the_weighted_loss(name):
    weighted, y, f = data(name, 12, 0)
    inner = weighted.loss
    assert weighted.name == inner.name and weighted.target == inner.target
    np.testing.assert_allclose(weighted.value(y, f), weighted.weight * inner.value(y, f))
    np.testing.assert_allclose(weighted.derivative(y, f), weighted.weight * inner.derivative(y, f))
    assert weighted.total(y, f) == pytest.approx(float(weighted.weight @ inner.value(y, f)))


@pytest.mark.parametrize("name", LOSSES)
def test_conjugate_is_the_supremum_and_fenchel_young_is_tight(name):
    """``(w loss)*(rho) = sup_z rho z - w loss(z)`` on a grid of z, and equality at rho = (w loss)'(f)."""
    weighted, y, f = data(name, 8, 1)
    z = np.linspace(-60.0, 60.0, 240_001)
    lower, upper = weighted.conjugate_domain(y)
    rng = np.random.default_rng(2)
    for i in range(y.size):
        one = WeightedLoss(weighted.loss, weighted.weight[i:i + 1])
        for rho in (lower[i] + 0.3 * (upper[i] - lower[i]) if np.isfinite(upper[i] - lower[i])
                    else rng.normal(), 0.0):
            if not lower[i] <= rho <= upper[i]:
                continue
            sup = float(np.max(rho * z - one.value(np.full(z.size, y[i]), z)))
            star = float(one.conjugate(y[i:i + 1], np.array([rho]))[0])
            assert star == pytest.approx(sup, abs=1e-3 * max(1.0, abs(sup)))
    g = weighted.derivative(y, f)
    equality = weighted.value(y, f) + weighted.conjugate(y, g) - g * f
    np.testing.assert_allclose(equality, 0.0, atol=1e-8)
    zero = WeightedLoss(weighted.loss, weighted.weight[:1])  # weight 0: the indicator of {0}
    assert np.isinf(zero.conjugate(y[:1], np.array([0.1]))[0]) and zero.conjugate(y[:1], np.zeros(1))[0] == 0.0
    assert lower[0] == upper[0] == 0.0


@pytest.mark.parametrize("name", ["hinge", "squared-hinge", "eps-insensitive"])
def test_conjugate_prox_is_the_minimiser(name):
    weighted, y, _ = data(name, 10, 3)
    lower, upper = weighted.conjugate_domain(y)
    v = np.random.default_rng(4).normal(scale=2.0, size=y.size)
    for step in (0.1, 1.0, 4.0):
        prox = weighted.conjugate_prox(y, v, step)
        for i in range(y.size):
            one = WeightedLoss(weighted.loss, weighted.weight[i:i + 1])

            def objective(t: float, i: int = i, one: WeightedLoss = one, step: float = step) -> float:
                return float(one.conjugate(y[i:i + 1], np.array([t]))[0]) + (t - v[i]) ** 2 / (2 * step)

            if lower[i] == upper[i]:
                assert prox[i] == 0.0
                continue
            best = minimize_scalar(objective, bounds=(max(lower[i], -50.0), min(upper[i], 50.0)),
                                   method="bounded", options={"xatol": 1e-12})
            assert objective(prox[i]) <= best.fun + 1e-8


@pytest.mark.parametrize("name", ["logistic", "squared"])
def test_conjugate_derivatives_match_differences_and_are_nan_at_weight_zero(name):
    weighted, y, f = data(name, 10, 5)
    rho = 0.5 * weighted.derivative(y, f)  # inside the domain (logistic: a fraction of its ends)
    h = 1e-6
    first = weighted.conjugate_derivative(y, rho)
    with np.errstate(invalid="ignore"):  # inf - inf at the example of weight 0
        numeric = (weighted.conjugate(y, rho + h) - weighted.conjugate(y, rho - h)) / (2 * h)
    np.testing.assert_allclose(first[1:], numeric[1:], rtol=1e-4, atol=1e-6)
    second = weighted.conjugate_second_derivative(y, rho)
    numeric = (weighted.conjugate_derivative(y, rho + h) - weighted.conjugate_derivative(y, rho - h)) / (2 * h)
    np.testing.assert_allclose(second[1:], numeric[1:], rtol=1e-4)
    assert np.isnan(first[0]) and np.isnan(second[0])


@pytest.mark.parametrize("name", ["logistic", "squared"])
def test_cvxpy_sum_is_the_weighted_total(name):
    import cvxpy as cp

    weighted, y, f = data(name, 9, 6)
    weighted = WeightedLoss(weighted.loss, np.round(weighted.weight))  # repeated weights: grouped
    variable = cp.Variable(f.size)
    expression, constraints = weighted.cvxpy_sum(y, variable)
    problem = cp.Problem(cp.Minimize(expression), [*constraints, variable == f])
    problem.solve(solver="CLARABEL")
    assert problem.value == pytest.approx(weighted.total(y, f), rel=1e-6, abs=1e-6)
