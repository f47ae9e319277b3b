"""``objectives.evaluate`` against the formulas of OBJECTIVES.md written as plain loops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelfuse import Problem, ValidationError
from kernelfuse.problem import objectives


def psd_stack(rng, m, n):
    X = rng.normal(size=(m, n, 3))
    return np.einsum("mik,mjk->mij", X, X) + 0.1 * np.eye(n)


def norms_loop(K, coef):
    return np.array([math.sqrt(coef[m] @ K[m] @ coef[m]) for m in range(K.shape[0])])


def f_loop(K, coef, b=0.0):
    return sum(K[m].T @ coef[m] for m in range(K.shape[0])) + b


@pytest.mark.parametrize("loss", ["hinge", "squared-hinge", "logistic", "squared", "eps-insensitive"])
def test_l1_mkl(loss):
    rng = np.random.default_rng(0)
    K, coef, b = psd_stack(rng, 4, 12), rng.normal(size=(4, 12)), 0.3
    y = rng.choice([-1.0, 1.0], size=12)
    p = Problem.create(K, y, "l1_mkl", loss=loss, C=0.7, C2=0.2)
    f = f_loop(K, coef, b)
    norms = norms_loop(K, coef)
    losses = {
        "hinge": np.maximum(0, 1 - y * f), "squared-hinge": np.maximum(0, 1 - y * f) ** 2,
        "logistic": np.log1p(np.exp(-y * f)), "squared": (y - f) ** 2,
        "eps-insensitive": np.maximum(0, np.abs(y - f) - 0.1),
    }[loss]
    expected = losses.sum() + 0.7 * norms.sum() + 0.1 * (norms**2).sum()
    assert objectives.evaluate(p, coef, b) == pytest.approx(expected, rel=1e-12)


def test_l1_mkl_sq_and_kernel_weights():
    rng = np.random.default_rng(1)
    K, coef = psd_stack(rng, 3, 10), rng.normal(size=(3, 10))
    y = rng.choice([-1.0, 1.0], size=10)
    p = Problem.create(K, y, "l1_mkl_sq", C=2.0)
    f = f_loop(K, coef, -0.2)
    norms = norms_loop(K, coef)
    expected = 0.5 * norms.sum() ** 2 + 2.0 * np.maximum(0, 1 - y * f).sum()
    assert objectives.evaluate(p, coef, -0.2) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(objectives.model_kernel_weights(p, coef), norms / norms.sum())


@pytest.mark.parametrize("q", [1.0, 2.0, 3.0, 400.0, math.inf])
def test_vskl(q):
    rng = np.random.default_rng(2)
    K, coef = psd_stack(rng, 5, 9), rng.normal(size=(5, 9)) * 3
    y = rng.choice([-1.0, 1.0], size=9)
    groups = np.array([2, 0, 2, 1, 0])
    p = Problem.create(K, y, "vskl", groups=groups, C=1.5, q=q)
    norms = norms_loop(K, coef)
    sums = [sum(norms[k] for k in range(5) if groups[k] == j) for j in (0, 1, 2)]
    if math.isinf(q):
        reg = 0.5 * max(sums) ** 2
    else:
        top = max(sums)  # the loop's own overflow guard
        reg = 0.5 * top**2 * sum((s / top) ** (2 * q) for s in sums) ** (1 / q)
    expected = reg + 1.5 * np.maximum(0, 1 - y * f_loop(K, coef, 0.1)).sum()
    assert objectives.evaluate(p, coef, 0.1) == pytest.approx(expected, rel=1e-12)


def test_vskl_one_group_is_l1_mkl_sq():
    rng = np.random.default_rng(3)
    K, coef = psd_stack(rng, 4, 8), rng.normal(size=(4, 8))
    y = rng.choice([-1.0, 1.0], size=8)
    for q in (1.0, 2.5, math.inf):
        a = objectives.evaluate(Problem.create(K, y, "vskl", groups=np.zeros(4, int), q=q), coef, 0.4)
        b = objectives.evaluate(Problem.create(K, y, "l1_mkl_sq"), coef, 0.4)
        assert a == pytest.approx(b, rel=1e-12)


def test_pnorm_binary_and_multiclass():
    rng = np.random.default_rng(4)
    K = psd_stack(rng, 3, 10)
    y = rng.choice([-1.0, 1.0], size=10)
    coef = rng.normal(size=(3, 10))
    p = Problem.create(K, y, "pnorm_mkl", lam=0.3, p=1.25)
    norms = norms_loop(K, coef)
    expected = 0.15 * (norms**1.25).sum() ** (2 / 1.25) + np.maximum(0, 1 - y * f_loop(K, coef)).mean()
    assert objectives.evaluate(p, coef) == pytest.approx(expected, rel=1e-12)

    labels = rng.choice([3, 7, 9], size=10)
    coef3 = rng.normal(size=(3, 3, 10))
    p3 = Problem.create(K, labels, "pnorm_mkl", lam=0.3, p=1.5)
    assert p3.loss.name == "crammer-singer"
    np.testing.assert_array_equal(p3.classes, [3, 7, 9])
    idx = np.searchsorted([3, 7, 9], labels)
    F = np.stack([sum(K[m] @ coef3[m, c] for m in range(3)) for c in range(3)], axis=1)
    norms3 = np.array([math.sqrt(sum(coef3[m, c] @ K[m] @ coef3[m, c] for c in range(3))) for m in range(3)])
    cs = [max(max(0.0, 1 - (F[i, idx[i]] - F[i, c])) for c in range(3) if c != idx[i]) for i in range(10)]
    expected3 = 0.15 * (norms3**1.5).sum() ** (2 / 1.5) + np.mean(cs)
    assert objectives.evaluate(p3, coef3) == pytest.approx(expected3, rel=1e-12)


@pytest.mark.parametrize("pqr", [(p, q, r) for p in (1, 2) for q in (1, 2) for r in (1, 2)])
def test_mikl_on_indefinite_nonsymmetric_kernels(pqr):
    p_, q_, r_ = pqr
    rng = np.random.default_rng(5)
    K = rng.normal(size=(3, 7, 7))  # neither symmetric nor PSD
    coef = rng.normal(size=(3, 7))
    y = rng.choice([-1.0, 1.0], size=7)
    prob = Problem.create(K, y, "mikl", lam=0.8, p=p_, q=q_, r=r_)
    alpha = coef.T
    if r_ == 1:
        groups = [alpha[i, :] for i in range(7)]
    else:
        groups = [alpha[:, t] for t in range(3)]
    norm_q = sum(np.sum(np.abs(g) ** p_) ** (q_ / p_) for g in groups)
    expected = np.sum(np.maximum(0, 1 - y * f_loop(K, coef)) ** 2) + 0.8 / q_ * norm_q
    assert objectives.evaluate(prob, coef) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("family", ["mlmkl_sum", "mlmkl_max"])
def test_mlmkl_primal_terms(family):
    rng = np.random.default_rng(6)
    K = psd_stack(rng, 3, 9)
    Y = rng.choice([-1.0, 1.0], size=(9, 4))
    Y[0], Y[1] = 1.0, -1.0
    d = np.array([0.5, 0.0, 0.5])
    coef = rng.normal(size=(3, 4, 9))
    coef[1] = 0.0
    prob = Problem.create(K, Y, family, C=1.3)
    terms = []
    for k in range(4):
        fk = sum(K[m] @ coef[m, k] for m in range(3))
        reg = sum(coef[m, k] @ K[m] @ coef[m, k] / d[m] for m in (0, 2))
        terms.append(0.5 * reg + 1.3 * np.maximum(0, 1 - Y[:, k] * fk).sum())
    expected = sum(terms) if family == "mlmkl_sum" else max(terms)
    assert objectives.evaluate(prob, coef, 0.0, d) == pytest.approx(expected, rel=1e-12)
    coef[1, 0, 0] = 1.0  # mass on a kernel of weight 0: infinite objective
    assert objectives.evaluate(prob, coef, 0.0, d) == math.inf
    with pytest.raises(ValidationError, match="sum to 1"):
        objectives.evaluate(prob, coef, 0.0, [0.5, 0.1, 0.5])
    with pytest.raises(ValidationError, match="kernel_weights"):
        objectives.evaluate(prob, coef, 0.0, None)


def test_model_shape_and_intercept_are_checked():
    rng = np.random.default_rng(7)
    K = psd_stack(rng, 2, 6)
    y = np.array([1.0, -1, 1, -1, 1, -1])
    p = Problem.create(K, y, "l1_mkl_sq")
    with pytest.raises(ValidationError, match=r"coef must have shape \(2, 6\)"):
        objectives.evaluate(p, np.zeros((6, 2)))
    with pytest.raises(ValidationError, match="NaN"):
        objectives.evaluate(p, np.full((2, 6), np.nan))
    with pytest.raises(ValidationError, match="no intercept"):
        objectives.evaluate(Problem.create(K, y, "pnorm_mkl"), np.zeros((2, 6)), 1.0)


@pytest.mark.parametrize("outputs", [None, 3])
def test_kernel_products_read_only_kernels_with_coefficients(outputs):
    """A kernel whose coefficients are all zero is never read: NaN there does not reach the
    products, which equal the full ones (a sparse model of 16 of 3,000 kernels reads 16)."""
    from kernelfuse.kernels.products import kernel_products

    rng = np.random.default_rng(0)
    K = rng.normal(size=(5, 7, 7))
    coef = rng.normal(size=(5, 7) if outputs is None else (5, outputs, 7))
    coef[[1, 3]] = 0.0
    full = kernel_products(K, coef)
    np.testing.assert_allclose(full[[0, 2, 4]], np.einsum("mji,m...j->m...i", K, coef)[[0, 2, 4]],
                               rtol=1e-13)
    K[[1, 3]] = np.nan
    sparse = kernel_products(K, coef)
    assert np.array_equal(sparse, full) and not sparse[[1, 3]].any()
