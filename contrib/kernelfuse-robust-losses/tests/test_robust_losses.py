"""kernelfuse-robust-losses: discovered through its entry point, conforming, usable by name."""

from __future__ import annotations

import numpy as np
import pytest

import kernelfuse
from kernelfuse.testing import check_loss


@pytest.mark.parametrize("name, params", [("huber", {"delta": 0.7}), ("pinball", {"tau": 0.2}),
                                          ("pinball", {"tau": 0.5})])
def test_losses_are_discovered_and_conform(name, params):
    registry = kernelfuse.get_registry()
    entry = registry.get("loss", name)
    assert entry.provider == "kernelfuse-robust-losses"
    assert check_loss(registry.create("loss", name, **params)) == [
        "value", "derivative", "conjugate", "cvxpy_sum"]


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(kernelfuse.ValidationError, match="tau"):
        kernelfuse.get_registry().create("loss", "pinball", tau=1.5)
    with pytest.raises(kernelfuse.ValidationError, match="delta"):
        kernelfuse.get_registry().create("loss", "huber", delta=0.0)


def test_quantile_regression_by_name_with_the_exact_solver():
    """l1-MKL with the pinball loss: the optimality condition in the intercept puts at most
    tau of the points strictly below the fit and at least tau below or on it."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(80, 1))
    y = np.sin(X[:, 0]) + rng.normal(scale=0.3, size=80)
    K = np.stack([np.exp(-(X - X.T) ** 2 / w) for w in (0.3, 1.0, 3.0)])
    for tau in (0.2, 0.8):
        result = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss="pinball", tau=tau, C=0.05)
        f = np.einsum("mij,mi->j", K, result.coef) + result.intercept
        below, on = float(np.mean(y < f - 1e-5)), float(np.mean(np.abs(y - f) <= 1e-5))
        assert below <= tau + 1e-9 <= below + on + 1.0 / 80, (tau, below, on)
        assert result.gap < 1e-6
