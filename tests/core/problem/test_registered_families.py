"""A family registered by a plugin (kind ``family``): found through the registry given, solved by
the exact reference and by SpicyMKL (any penalty separable in the kernel norms) with certified
gaps, refused clearly where it does not fit."""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

import kernelfuse
from kernelfuse import IncompatiblePartsError, Registry, UnknownNameError, ValidationError, get_registry
from kernelfuse.problem import objectives, scaling
from kernelfuse.problem.families import FAMILIES, Family, Param, all_families, get_family
from kernelfuse.problem.regularizers import BlockLp
from kernelfuse.testing import assert_within_certified, check_regularizer, small_problem
from kernelfuse.validation import positive


@attrs.frozen
class HalfSquares(kernelfuse.SeparablePenalty):
    """``(C / 2) sum_m v_m^2``: ``h(v) = C v^2 / 2``, ``h*(s) = s^2 / (2 C)``."""

    name: ClassVar[str] = "half-squares"
    weight: float = 1.0

    def value(self, x: np.ndarray) -> float:
        return 0.5 * self.weight * float(np.sum(x * x))

    def norm(self, x: np.ndarray) -> float:
        return float(np.linalg.norm(x))

    def dual_norm(self, u: np.ndarray) -> float:
        return float(np.linalg.norm(u))

    def conjugate(self, u: np.ndarray) -> float:
        return float(np.sum(u * u)) / (2.0 * self.weight)

    def expression(self, x: Any) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        return 0.5 * self.weight * cp.sum_squares(x), []

    def radial_prox(self, norms: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        return norms / (1.0 + step * self.weight), np.full(norms.shape, 1.0 / (1.0 + step * self.weight))

    def slope(self, norms: np.ndarray) -> np.ndarray:
        return self.weight * norms

    @property
    def dual_radius(self) -> float:
        return math.inf


def _family(name: str, regularizer: Any) -> Family:
    return Family(name, f"{name}: sum_i loss + Omega(||f_1||, ..., ||f_M||)", target="loss",
                  params=(Param("C", 1.0, "penalty weight", positive),), losses=None, default_loss="logistic",
                  objective=objectives.norm_penalised, scaling=scaling.degree_two_law, dual="loss_conjugate",
                  regularizer=regularizer)


def _squares(params: Mapping[str, float], groups: np.ndarray | None) -> HalfSquares:
    return HalfSquares(weight=params["C"])


def _block_lp(params: Mapping[str, float], groups: np.ndarray | None) -> BlockLp:
    return BlockLp(p=1.5, weight=params["C"])


SQUARES, NOT_SEPARABLE = _family("squares_mkl", _squares), _family("lp_squared_mkl", _block_lp)


@pytest.fixture(scope="module")
def private() -> Registry:
    registry = Registry()
    for entry in get_registry():
        registry.add(entry.kind, entry.name, entry.factory, description=entry.description)
    registry.add("family", SQUARES.name, SQUARES, description=SQUARES.title)
    registry.add("family", NOT_SEPARABLE.name, NOT_SEPARABLE, description=NOT_SEPARABLE.title)
    registry.add("family", "l1_mkl", _family("l1_mkl", _squares))  # a built-in's name: not used
    registry.add("family", "not_a_family", dict)
    return registry


def test_the_registered_family_is_found_in_its_registry_only(private):
    assert get_family("squares_mkl", private) is SQUARES and "squares_mkl" in all_families(private)
    assert get_family("l1_mkl", private) is FAMILIES["l1_mkl"]
    with pytest.raises(UnknownNameError, match="squares_mkl"):
        get_family("squares_mk", private)
    with pytest.raises(UnknownNameError):
        get_family("squares_mkl")
    with pytest.raises(ValidationError, match="not a kernelfuse Family"):
        get_family("not_a_family", private)


def test_its_regularizer_conforms():
    assert check_regularizer(HalfSquares(weight=0.7))[-1] == "dual-radius"


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared"])
@pytest.mark.parametrize("seed", [0, 1])
def test_spicymkl_and_the_reference_solve_it_with_certified_gaps(private, loss, seed):
    K, y, _ = small_problem("l1_mkl", seed)
    C = float(10 ** np.random.default_rng(seed).uniform(-1, 1))
    result = kernelfuse.solve(K, y, solver="spicymkl", family="squares_mkl", loss=loss, C=C, tol=1e-7,
                              registry=private)
    with contextlib.redirect_stdout(io.StringIO()):
        reference = kernelfuse.solve(K, y, solver="cvxpy", family="squares_mkl", loss=loss, C=C,
                                     registry=private)
    assert result.status == "converged" and result.gap <= 1e-7
    assert_within_certified(result, reference, label=f"{loss}, seed {seed}")


def test_a_solver_for_other_structures_refuses_it_by_name(private):
    K, y, _ = small_problem("l1_mkl", 0)
    with pytest.raises(IncompatiblePartsError, match="does not solve family 'squares_mkl'"):
        kernelfuse.solve(K, y, solver="simplemkl", family="squares_mkl", registry=private)
    with pytest.raises(IncompatiblePartsError, match="sum_m h"):
        kernelfuse.solve(K, y, solver="spicymkl", family="lp_squared_mkl", registry=private)
