"""The mixed norms of kernelfuse.problem.regularizers: value against the formula, Holder and
Fenchel-Young with equality where it is known, prox against cvxpy, cvxpy expression against value."""

from __future__ import annotations

import itertools
import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

import kernelfuse
from kernelfuse.parts.regularizer import Regularizer
from kernelfuse.problem.conic import sum_squares_cone
from kernelfuse.problem.regularizers import BlockL1, BlockLp, MixedLpq, VSKLNorm

GROUPS = np.array([0, 0, 1, 2, 2, 2, 1])

#: (regulariser, shape of its input, whether inputs are kernel norms (>= 0), direct formula).
CASES: list[tuple[Regularizer, tuple[int, ...], bool, object]] = [
    (BlockL1(weight=0.7), (7,), True, lambda v: 0.7 * v.sum()),
    (BlockL1(weight=0.7, elastic=0.3), (7,), True, lambda v: 0.7 * v.sum() + 0.15 * np.sum(v**2)),
    (BlockL1(power=2.0, weight=1.3), (7,), True, lambda v: 0.65 * v.sum() ** 2),
    *[(VSKLNorm(GROUPS, q=q), (7,), True,
       lambda v, q=q: 0.5 * (np.max(np.bincount(GROUPS, v)) ** 2 if math.isinf(q)
                             else np.sum(np.bincount(GROUPS, v) ** (2 * q)) ** (1 / q)))
      for q in (1.0, 1.5, 3.0, math.inf)],
    (VSKLNorm(np.zeros(7, dtype=int), q=2.0), (7,), True, lambda v: 0.5 * v.sum() ** 2),
    *[(BlockLp(p=p, weight=0.4), (7,), True, lambda v, p=p: 0.2 * np.sum(v**p) ** (2 / p))
      for p in (1.2, 1.5, 2.0)],
    *[(MixedLpq(weight=0.6, p=p, q=q, r=r), (5, 3), False,
       lambda a, p=p, q=q, r=r: 0.6 / q * np.sum(np.sum(np.abs(a) ** p, axis=1 if r == 1 else 0) ** (q / p)))
      for p, q, r in itertools.product((1.0, 2.0), repeat=3)],
]
IDS = [f"{type(reg).__name__}-{i}" for i, (reg, *_) in enumerate(CASES)]


def draw(rng: np.random.Generator, shape: tuple[int, ...], norms: bool, wide: bool = False) -> np.ndarray:
    """Random input (entries spread over five decades when ``wide``: for numpy, not cvxpy)."""
    x = rng.normal(size=shape) * (rng.choice([1e-3, 1.0, 30.0], size=shape) if wide else 1.0)
    return np.abs(x) if norms else x


def minimum(objective, constraints) -> tuple[float, cp.Problem]:
    program = cp.Problem(cp.Minimize(objective), constraints)
    with warnings.catch_warnings():  # "may be inaccurate": the comparisons below decide
        warnings.simplefilter("ignore", UserWarning)
        program.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert program.status in ("optimal", "optimal_inaccurate")
    return float(program.value), program


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_value_is_the_formula_and_the_cvxpy_expression(case):
    regularizer, shape, norms, formula = case
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = draw(rng, shape, norms, wide=True)
        assert regularizer.value(x) == pytest.approx(formula(x), rel=1e-12)
    assert regularizer.value(np.zeros(shape)) == 0.0
    x = draw(rng, shape, norms)
    expression, constraints = regularizer.expression(cp.Constant(x))
    value, _ = minimum(expression, constraints)
    assert value == pytest.approx(regularizer.value(x), rel=1e-7)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_holder_with_equality_at_the_maximiser(case):
    """``<u, x> <= ||x|| ||u||_*``, tight at ``argmax_{||x|| <= 1} <u, x>`` (solved by cvxpy)."""
    regularizer, shape, norms, _ = case
    rng = np.random.default_rng(1)
    for _ in range(20):
        x, u = draw(rng, shape, norms, wide=True), draw(rng, shape, norms, wide=True)
        assert np.sum(u * x) <= regularizer.norm(x) * regularizer.dual_norm(u) * (1 + 1e-12)
    u = draw(rng, shape, norms)
    x = cp.Variable(shape, nonneg=norms)
    value, _ = minimum(-cp.sum(cp.multiply(u, x)), [regularizer.norm_expression(x) <= 1])  # type: ignore[attr-defined]
    assert -value == pytest.approx(regularizer.dual_norm(u), rel=1e-7)
    assert regularizer.norm(x.value) == pytest.approx(1.0, rel=1e-6)
    # Fenchel-Young with equality at a subgradient: at c x*, Omega has the subgradient weight c^(power-1) u/||u||_*.
    c, unit = 2.5, u / regularizer.dual_norm(u)
    point = c * np.asarray(x.value)
    gradient = regularizer.weight * c ** (regularizer.power - 1) * unit  # type: ignore[attr-defined]
    if isinstance(regularizer, BlockL1) and regularizer.elastic > 0:
        gradient = gradient + regularizer.elastic * point * (point > 1e-9)
    inner = float(np.sum(gradient * point))
    assert regularizer.value(point) + regularizer.conjugate(gradient) == pytest.approx(inner, rel=1e-6)
    other = draw(rng, shape, norms)
    assert regularizer.value(other) + regularizer.conjugate(gradient) >= np.sum(gradient * other) * (1 - 1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if hasattr(c[0], "prox")],
                         ids=[i for i, c in zip(IDS, CASES, strict=True) if hasattr(c[0], "prox")])
def test_prox_is_the_cvxpy_minimiser_with_fenchel_young_equality(case):
    regularizer, shape, norms, _ = case
    rng = np.random.default_rng(2)
    for step in (0.05, 0.8):
        x = draw(rng, shape, norms)
        z = regularizer.prox(x, step)  # type: ignore[attr-defined]
        variable = cp.Variable(shape, nonneg=norms)
        penalty, constraints = regularizer.expression(variable)
        square, cone = sum_squares_cone(cp.vec(variable - x, order="F"))  # Clarabel fails on sum_squares
        best, _ = minimum(penalty + square / (2 * step), [*constraints, *cone])
        prox_value = regularizer.value(z) + float(np.sum((z - x) ** 2)) / (2 * step)
        assert prox_value == pytest.approx(best, rel=1e-6, abs=1e-8)
        np.testing.assert_allclose(z, variable.value, atol=1e-4 * max(1.0, np.abs(x).max()))
        u = (x - z) / step  # in the subdifferential at z
        assert regularizer.value(z) + regularizer.conjugate(u) == pytest.approx(np.sum(u * z), rel=1e-9, abs=1e-9)


def test_values_do_not_overflow_where_the_penalty_is_finite():
    big = np.full(4, 1e170)
    assert BlockLp(p=1.5, weight=1e-300).value(big) == pytest.approx(0.5e40 * 4 ** (4 / 3), rel=1e-12)
    assert MixedLpq(weight=1e-300, p=2.0, q=2.0, r=1.0).value(big.reshape(2, 2)) == pytest.approx(2e40)


def test_families_hold_their_regularizer():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    K = np.stack([np.outer(X[:, j], X[:, j]) for j in range(3)])
    y = np.sign(X[:, 0] + 0.1)
    vskl = kernelfuse.Problem.create(K, y, "vskl", groups=[0, 1, 1], C=2.0, q=3.0)
    assert vskl.regularizer == VSKLNorm([0, 1, 1], q=3.0) and vskl.regularizer.groups.tolist() == [0, 1, 1]
    assert kernelfuse.Problem.create(K, y, "l1_mkl", C=0.5, C2=0.1).regularizer == BlockL1(weight=0.5, elastic=0.1)
    assert kernelfuse.Problem.create(K, y, "mikl", lam=3.0, p=1, q=2, r=1).regularizer == MixedLpq(3.0, 1, 2, 1)
    with pytest.raises(kernelfuse.ValidationError, match="no regulariser"):
        kernelfuse.Problem.create(K, np.column_stack([y, -y]), "mlmkl_sum").regularizer  # noqa: B018
    with pytest.raises(kernelfuse.ValidationError, match="elastic > 0 needs power 1"):
        BlockL1(power=2.0, elastic=0.1)
    with pytest.raises(kernelfuse.ValidationError, match="p must be"):
        BlockLp(p=0.5)


@pytest.mark.parametrize("p, q, r", list(itertools.product((1.0, 2.0), repeat=3)))
def test_prox_jacobian_is_the_derivative_of_the_prox(p, q, r):
    """``MixedLpq.prox_jacobian`` (the semismooth Newton solver's ``P``) equals the prox's central
    differences at random points (off the kinks, where the prox is differentiable), and is
    symmetric positive semi-definite with eigenvalues at most 1 (a prox is firmly non-expansive)."""
    rng = np.random.default_rng(int(8 * p + 4 * q + 2 * r))
    regularizer = MixedLpq(weight=float(rng.uniform(0.2, 1.5)), p=p, q=q, r=r)
    for _ in range(3):
        x, step = rng.normal(size=(6, 4)), float(rng.uniform(0.1, 1.0))
        jacobian = regularizer.prox_jacobian(x, step)
        dense = np.diag(jacobian.scale.ravel())
        group_of = np.indices(x.shape)[jacobian.group_axis].ravel()
        for g, weight in enumerate(jacobian.weights):
            v = np.where(group_of == g, jacobian.vectors.ravel(), 0.0)
            dense -= weight * np.outer(v, v)
        eps, numeric = 1e-7, np.empty((x.size, x.size))
        for k in range(x.size):
            e = np.zeros(x.size)
            e[k] = eps
            numeric[:, k] = (regularizer.prox(x + e.reshape(x.shape), step)
                             - regularizer.prox(x - e.reshape(x.shape), step)).ravel() / (2 * eps)
        np.testing.assert_allclose(dense, numeric, atol=1e-6)
        eigenvalues = np.linalg.eigvalsh(dense)
        assert np.allclose(dense, dense.T) and eigenvalues.min() >= -1e-12 and eigenvalues.max() <= 1 + 1e-12
