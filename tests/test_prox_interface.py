"""``ProxOperator``: one of prox / prox_conjugate gives the other by the Moreau identity."""

from __future__ import annotations

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
