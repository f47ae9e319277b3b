"""``ProxOperator``: one of prox / prox_conjugate gives the other by the Moreau identity; the
registered group operators at exactly zero blocks (no 0/0, no floating-point warning)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from kernelfuse import ProxOperator


class SoftThreshold(ProxOperator):
    """prox of g = lam ||x||_1 (soft thresholding)."""

    name = "l1"

    def __init__(self, lam: float) -> None:
        self.lam = lam

    def prox(self, x, step):
        return np.sign(x) * np.maximum(np.abs(x) - step * self.lam, 0.0)


class BoxProjection(ProxOperator):
    """prox of the conjugate of lam ||x||_1: projection onto the l_inf ball of radius lam."""

    name = "linf-ball"

    def __init__(self, lam: float) -> None:
        self.lam = lam

    def prox_conjugate(self, x, step):
        return np.clip(x, -self.lam, self.lam)


def test_moreau_identity_both_ways():
    rng = np.random.default_rng(0)
    x = rng.normal(scale=3.0, size=50)
    for step in (0.1, 1.0, 7.5):
        st, box = SoftThreshold(0.8), BoxProjection(0.8)
        # The conjugate of 0.8 ||.||_1 is the indicator of the l_inf ball: its prox projects.
        np.testing.assert_allclose(st.prox_conjugate(x, step), np.clip(x, -0.8, 0.8), atol=1e-12)
        # And the other way round: prox from prox_conjugate is soft thresholding.
        np.testing.assert_allclose(box.prox(x, step), st.prox(x, step), atol=1e-12)
        # x = prox_{step g}(x) + step * prox_{g*/step}(x / step)
        np.testing.assert_allclose(st.prox(x, step) + step * st.prox_conjugate(x / step, 1 / step), x)


def test_an_operator_must_implement_one_of_them():
    class Nothing(ProxOperator):
        name = "nothing"

    with pytest.raises(NotImplementedError, match="neither prox nor prox_conjugate"):
        Nothing().prox(np.zeros(3), 1.0)
    with pytest.raises(NotImplementedError, match="neither prox nor prox_conjugate"):
        Nothing().prox_conjugate(np.zeros(3), 1.0)


def test_block_soft_threshold_is_the_prox_of_the_group_norm():
    from kernelfuse import get_registry

    rng = np.random.default_rng(1)
    op = get_registry().create("prox", "block-soft-threshold", C=0.7)
    x = rng.normal(size=(6, 4))
    x[2] *= 0.05  # a block below the threshold
    for step in (0.3, 1.0, 2.0):
        z = op.prox(x, step)
        norms = np.linalg.norm(x, axis=1)
        assert np.all(z[norms <= step * 0.7] == 0.0)
        # Optimality: (x - z) / step is in the sub-differential of C sum ||z_m||.
        g = (x - z) / step
        for m in range(6):
            if np.linalg.norm(z[m]) > 0:
                np.testing.assert_allclose(g[m], 0.7 * z[m] / np.linalg.norm(z[m]), atol=1e-12)
            else:
                assert np.linalg.norm(g[m]) <= 0.7 + 1e-12
        # Moreau: the conjugate's prox projects every block onto the ball of radius C.
        w = rng.normal(size=(6, 4)) * 2
        scale = np.minimum(1.0, 0.7 / np.linalg.norm(w, axis=1, keepdims=True))
        np.testing.assert_allclose(op.prox_conjugate(w, step), w * scale, atol=1e-12)
        # Non-expansive.
        y = rng.normal(size=(6, 4))
        assert np.linalg.norm(op.prox(x, step) - op.prox(y, step)) <= np.linalg.norm(x - y) + 1e-12


def test_block_soft_threshold_with_the_elastic_net_term():
    from kernelfuse import get_registry

    rng = np.random.default_rng(2)
    op = get_registry().create("prox", "block-soft-threshold", C=0.5, C2=0.8)
    x = rng.normal(size=(5, 3))
    x[1] *= 0.1
    step = 0.6
    z = op.prox(x, step)
    # Optimality: (x - z) / step = C z/||z|| + C2 z for every block kept, ||x|| <= step C for the others.
    for m in range(5):
        norm = np.linalg.norm(z[m])
        if norm > 0:
            np.testing.assert_allclose((x[m] - z[m]) / step, 0.5 * z[m] / norm + 0.8 * z[m], atol=1e-12)
        else:
            assert np.linalg.norm(x[m]) <= step * 0.5
    # The radial map is the prox on the norms, with its derivative.
    norms = np.linalg.norm(x, axis=1)
    shrunk, slope = op.regularizer.radial_prox(norms, step)
    np.testing.assert_allclose(shrunk, np.linalg.norm(z, axis=1), atol=1e-12)
    h = 1e-7
    radial = op.regularizer.radial_prox
    numeric = (radial(norms + h, step)[0] - radial(norms - h, step)[0]) / (2 * h)
    np.testing.assert_allclose(slope, numeric, atol=1e-6)
    assert op.regularizer.value(norms) == pytest.approx(np.sum(0.5 * norms + 0.4 * norms**2), rel=1e-14)


#: Rows 0 and 2 and column 2 are zero: zero blocks for the row groups and the column groups.
WITH_ZERO_BLOCKS = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0], [0.0, 0.0, 0.0], [3.0, 0.5, 0.0]])


def quietly(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with every floating-point exception raised and every warning an error."""
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        return function(*args)


@pytest.mark.parametrize("C2", [0.0, 0.3])
def test_block_soft_threshold_at_zero_blocks(C2):
    from kernelfuse.plugins.prox.block_soft_threshold import BlockSoftThreshold

    op = BlockSoftThreshold(C=0.5, C2=C2)
    x, zero = WITH_ZERO_BLOCKS, np.zeros_like(WITH_ZERO_BLOCKS)
    z = quietly(op.prox, x, 0.7)
    assert np.all(z[[0, 2]] == 0.0) and np.isfinite(z).all()
    np.testing.assert_allclose(z[1], x[1] * (1 - 0.35 / np.linalg.norm(x[1])) / (1 + 0.7 * C2))
    assert np.all(quietly(op.prox, zero, 0.7) == 0.0)
    assert np.all(quietly(op.prox_conjugate, zero, 0.7) == 0.0)
    shrunk, slope = quietly(op.regularizer.radial_prox, np.zeros(3), 0.7)
    assert np.all(shrunk == 0.0) and np.all(slope == 0.0)
    np.testing.assert_allclose(z + 0.7 * quietly(op.prox_conjugate, x / 0.7, 1 / 0.7), x, atol=1e-15)


@pytest.mark.parametrize("p, q, r", list(itertools.product((1.0, 2.0), repeat=3)))
def test_mixed_norm_prox_at_zero_groups(p, q, r):
    from kernelfuse.plugins.mikl.mixed_norm_prox import MixedNormProx

    op = MixedNormProx(lam=0.7, p=p, q=q, r=r)
    x, zero = WITH_ZERO_BLOCKS, np.zeros_like(WITH_ZERO_BLOCKS)
    z = quietly(op.prox, x, 0.5)
    assert np.isfinite(z).all() and np.all(z[[0, 2]] == 0.0) and np.all(z[:, 2] == 0.0)
    np.testing.assert_allclose(z + 0.5 * quietly(op.prox_conjugate, x / 0.5, 1 / 0.5), x, atol=1e-15)
    assert np.all(quietly(op.prox, zero, 0.5) == 0.0) and np.all(quietly(op.prox_conjugate, zero, 0.5) == 0.0)
    assert quietly(op.value, zero) == 0.0 and quietly(op.conjugate, zero) == 0.0
    assert quietly(op.regularizer.dual_norm, zero) == 0.0
    w = (x - z) / 0.5  # Fenchel-Young with equality at the prox, zero groups included
    assert quietly(op.value, z) + quietly(op.conjugate, w) == pytest.approx(np.sum(z * w), abs=1e-12)
