"""Every built-in loss: derivative, conjugate and cvxpy form against independent computations."""

from __future__ import annotations

import numpy as np
import pytest

from kernelfuse import get_registry

BINARY_OR_REAL = ["hinge", "squared-hinge", "logistic", "squared", "eps-insensitive"]


def targets(loss, rng, n):
    if loss.target == "real":
        return rng.normal(size=n)
    return rng.choice([-1.0, 1.0], size=n)


@pytest.mark.parametrize("name", BINARY_OR_REAL)
def test_derivative_matches_finite_differences(name):
    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(1)
    y = targets(loss, rng, 200)
    f = rng.normal(scale=2.0, size=200)
    h = 1e-6
    numeric = (loss.value(y, f + h) - loss.value(y, f - h)) / (2 * h)
    # Away from kinks the sub-gradient is the derivative.
    kinks = {"hinge": np.abs(y * f - 1), "squared-hinge": np.abs(y * f - 1),
             "eps-insensitive": np.abs(np.abs(y - f) - 0.1)}
    smooth = kinks.get(name, np.full(200, 1.0)) > 1e-3
    np.testing.assert_allclose(loss.derivative(y, f)[smooth], numeric[smooth], atol=1e-6)


@pytest.mark.parametrize("name", BINARY_OR_REAL)
def test_conjugate_is_the_supremum(name):
    """loss*(y, rho) = sup_z rho z - loss(y, z), computed on a fine grid of z."""
    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(2)
    y = targets(loss, rng, 40)
    for yi in y:
        # A fine grid plus every kink of the built-in losses.
        z = np.concatenate([np.linspace(-60, 60, 240001), [yi, 1 / yi, yi - 0.1, yi + 0.1]])
        for rho in np.linspace(-1.2, 1.2, 13):
            grid = np.max(rho * z - loss.value(np.full_like(z, yi), z))
            value = float(loss.conjugate(np.array([yi]), np.array([rho]))[0])
            if np.isinf(value):
                # Outside the domain the supremum grows without bound with the grid.
                assert grid > 5.0, (yi, rho, grid)
            else:
                assert value == pytest.approx(grid, abs=1e-6), (yi, rho)


@pytest.mark.parametrize("name", BINARY_OR_REAL)
def test_fenchel_young_equality_at_the_derivative(name):
    """loss(f) + loss*(g) = g f where g is a (sub)gradient at f."""
    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(3)
    y = targets(loss, rng, 100)
    f = rng.normal(size=100)
    g = loss.derivative(y, f)
    np.testing.assert_allclose(loss.value(y, f) + loss.conjugate(y, g), g * f, atol=1e-10)


@pytest.mark.parametrize("name", BINARY_OR_REAL + ["crammer-singer"])
def test_cvxpy_form_equals_value(name):
    import cvxpy as cp

    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(4)
    n = 25
    if name == "crammer-singer":
        y = rng.integers(0, 4, size=n)
        f0 = rng.normal(size=(n, 4))
    else:
        y = targets(loss, rng, n)
        f0 = rng.normal(size=n)
    f = cp.Variable(f0.shape)
    expression, constraints = loss.cvxpy_sum(y, f)
    problem = cp.Problem(cp.Minimize(expression), constraints + [f == f0])
    problem.solve(solver="CLARABEL")
    assert problem.value == pytest.approx(loss.total(y, f0), rel=1e-6, abs=1e-7)


def test_crammer_singer_value_against_a_loop():
    loss = get_registry().create("loss", "crammer-singer")
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, size=50)
    f = rng.normal(size=(50, 3))
    expected = [
        max(max(0.0, 1 - (f[i, y[i]] - f[i, c])) for c in range(3) if c != y[i])
        for i in range(50)
    ]
    np.testing.assert_allclose(loss.value(y, f), expected)
    # The sub-gradient is exact where the worst class is unique.
    h = 1e-7
    g = loss.derivative(y, f)
    for i in range(5):
        for c in range(3):
            e = np.zeros_like(f)
            e[i, c] = h
            numeric = (loss.total(y, f + e) - loss.total(y, f - e)) / (2 * h)
            assert g[i, c] == pytest.approx(numeric, abs=1e-5)


def test_eps_insensitive_rejects_negative_eps():
    from kernelfuse import ValidationError

    with pytest.raises(ValidationError, match="eps"):
        get_registry().create("loss", "eps-insensitive", eps=-0.1)


@pytest.mark.parametrize("name", ["squared", "squared-hinge", "logistic"])
def test_conjugate_derivatives(name):
    """Finite differences, and the inverse-gradient property: (loss*)'(loss'(f)) = f."""
    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(6)
    y = targets(loss, rng, 200)
    f = rng.normal(size=200)
    rho = loss.derivative(y, f)
    inside = np.isfinite(loss.conjugate_derivative(y, rho)) & (np.abs(rho) > 1e-6)
    if name == "squared-hinge":
        inside &= y * f < 1 - 1e-6  # at y f >= 1, rho = 0 and loss' is not invertible
    assert inside.sum() > 50
    np.testing.assert_allclose(loss.conjugate_derivative(y, rho)[inside], f[inside], rtol=1e-9, atol=1e-9)
    h = 1e-6
    numeric = (loss.conjugate(y, rho + h) - loss.conjugate(y, rho - h)) / (2 * h)
    ok = inside & np.isfinite(numeric)
    np.testing.assert_allclose(loss.conjugate_derivative(y, rho)[ok], numeric[ok], rtol=1e-5, atol=1e-6)
    numeric2 = (loss.conjugate_derivative(y, rho + h) - loss.conjugate_derivative(y, rho - h)) / (2 * h)
    ok &= np.isfinite(numeric2)
    np.testing.assert_allclose(loss.conjugate_second_derivative(y, rho)[ok], numeric2[ok], rtol=1e-4)


PROX_LOSSES = ["hinge", "squared-hinge", "eps-insensitive"]


@pytest.mark.parametrize("name", PROX_LOSSES)
@pytest.mark.parametrize("step", [0.05, 0.7, 3.0])
def test_conjugate_prox_is_the_minimiser(name, step):
    from scipy.optimize import minimize_scalar

    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(4)
    y, v = targets(loss, rng, 30), 1.5 * rng.normal(size=30)
    w = loss.conjugate_prox(y, v, step)
    lower, upper = loss.conjugate_domain(y)
    for i in range(30):
        def objective(t, i=i):
            return float(loss.conjugate(y[i:i + 1], np.array([t]))[0]) + (t - v[i]) ** 2 / (2 * step)
        best = minimize_scalar(objective, bounds=(max(lower[i], -60.0), min(upper[i], 60.0)),
                               method="bounded", options={"xatol": 1e-12})
        assert objective(w[i]) <= best.fun + 1e-9
    # Its derivative in v, against central differences away from the kinks.
    h = 1e-7
    centre = loss.conjugate_prox(y, v, step)
    left = (centre - loss.conjugate_prox(y, v - h, step)) / h
    right = (loss.conjugate_prox(y, v + h, step) - centre) / h
    smooth = np.abs(left - right) < 1e-6  # not straddling a kink
    assert smooth.sum() >= 20
    np.testing.assert_allclose(loss.conjugate_prox_derivative(y, v, step)[smooth], right[smooth],
                               atol=1e-6)


@pytest.mark.parametrize("name", BINARY_OR_REAL)
def test_conjugate_domain_is_where_the_conjugate_is_finite(name):
    loss = get_registry().create("loss", name)
    rng = np.random.default_rng(5)
    y = targets(loss, rng, 40)
    if not hasattr(loss, "conjugate_domain"):
        assert np.all(np.isfinite(loss.conjugate(y, 1e3 * rng.normal(size=40))))
        return
    lower, upper = loss.conjugate_domain(y)
    inside = np.clip(rng.normal(size=40) * 2, lower, upper)
    assert np.all(np.isfinite(loss.conjugate(y, inside)))
    assert np.all(np.isfinite(loss.conjugate(y, np.where(np.isfinite(lower), lower, upper))))
    for bound, offset in ((lower, -1e-3), (upper, 1e-3)):
        finite = np.isfinite(bound)
        assert np.all(np.isinf(loss.conjugate(y[finite], bound[finite] + offset)))
