"""What one solve costs besides the solver's own work: registry look-ups, parameter routing,
the stopping rule, and the passes over the kernel stack that score the returned model."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse.parts.registry import Registry, load_registry
from kernelfuse.parts.stopping import StoppingRule
from kernelfuse.problem import objectives


class AfterTwo(StoppingRule):
    """Stops at the third look (a rule only a private registry knows)."""

    name = "after-two"
    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.looks = 0

    def reached(self, tol, now, before):
        self.looks += 1
        return self.looks > 2


def test_a_stopping_rule_of_the_given_registry_is_used():
    """solve(registry=r) builds the stopping rule from r, not from the process-wide registry."""
    K, y = breast_cancer_kernels(n=30, m=3, seed=0)
    registry = load_registry()
    registry.add("stopping", AfterTwo.name, AfterTwo)
    with pytest.raises(kernelfuse.UnknownNameError, match="after-two"):
        kernelfuse.solve(K, y, solver="simplemkl", C=1.0, stop="after-two")
    AfterTwo.built = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)  # stalled unless certified
        result = kernelfuse.solve(K, y, solver="simplemkl", C=1.0, stop="after-two", tol=1e-12,
                                  registry=registry)
    assert result.n_iter == 2  # the rule held at its third look, after two steps
    assert result.status == ("converged" if result.gap <= 1e-12 else "stalled")
    assert AfterTwo.built == 1  # built once, as a part of the recipe


def test_one_solve_looks_each_part_up_once_and_scores_in_one_pass(monkeypatch):
    K, y = breast_cancer_kernels(n=30, m=3, seed=1)
    registry = load_registry()
    looked_up: Counter[tuple[str, str]] = Counter()
    original_get = Registry.get

    def get(self, kind, name):
        looked_up[kind, name] += 1
        return original_get(self, kind, name)

    monkeypatch.setattr(Registry, "get", get)
    passes = []
    original_products = objectives.kernel_products

    def products(K, coef, *args):
        passes.append(coef.shape)
        return original_products(K, coef, *args)

    monkeypatch.setattr(objectives, "kernel_products", products)
    result = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", loss="hinge", C=1.0,
                              stop="objective_change", tol=1e-3,
                              svm_solver="libsvm", registry=registry)
    assert looked_up == {("recipe", "mirror-vskl"): 1, ("loss", "hinge"): 1,
                         ("optimizer", "mirror-descent"): 1, ("mirror_map", "local-quadratic"): 1,
                         ("oracle", "vskl-bca"): 1,
                         ("svm_solver", "active-set"): 1, ("svm_solver", "libsvm"): 1,  # the recipe's, the pick
                         ("stopping", "gap"): 1, ("stopping", "objective_change"): 1}
    assert passes == [result.coef.shape]  # the objective and the kernel weights from one pass
    norms = objectives.rkhs_norms(K, result.coef)
    np.testing.assert_allclose(result.norm_shares, norms / norms.sum())
    d = result.kernel_weights  # mirror-vskl's own weights: coef[m] = d_m beta, one beta
    assert d.sum() == pytest.approx(1.0)
    used = d > 0
    beta = result.coef[used] / d[used, None]
    np.testing.assert_allclose(beta, np.broadcast_to(beta[0], beta.shape), rtol=1e-12, atol=1e-14)
