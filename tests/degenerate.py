"""Degenerate MKL problems that are valid input (tests/project/test_degenerate.py): the generator.

Each problem starts from :func:`kernelfuse.testing.small_problem` (Gaussian
kernels on random points) and makes one thing degenerate, the way kernel
grids and weights degenerate in practice:

* ``zero kernel``, ``tiny kernel`` (1e-9), ``huge kernel`` (1e9): one kernel
  far from the others' scale;
* ``constant group``: the kernels of one group (every second kernel) are
  ``c 11'``: no signal where ``y'alpha = 0``, so under vskl with q = inf that
  group's weight goes to 0 (the mechanism of the iris hang, issue 23);
* ``duplicated``: every kernel twice and two points repeated;
* ``C huge``, ``C tiny``: the loss' weight 1e6 or 1e-6 against the kernels'
  scale (``lam`` the other way for the families that have it).

The vskl family is solved with q = inf throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernelfuse.problem.families import get_family
from kernelfuse.testing import small_problem

Problem = tuple[np.ndarray, np.ndarray, dict[str, Any]]  # K, y, keyword arguments of solve


def _scaled_kernel(factor: float) -> Callable[[np.ndarray, np.ndarray, dict], Problem]:
    def change(K: np.ndarray, y: np.ndarray, kw: dict) -> Problem:
        K = K.copy()
        K[1] *= factor
        return K, y, kw
    return change


def _constant_group(K: np.ndarray, y: np.ndarray, kw: dict) -> Problem:
    K = K.copy()
    K[1::2] = np.linspace(0.5, 2.0, K[1::2].shape[0])[:, None, None]  # groups are m % 2
    return K, y, kw


def _duplicated(K: np.ndarray, y: np.ndarray, kw: dict) -> Problem:
    index = np.r_[np.arange(y.shape[0]), 0, 1]
    K = np.concatenate([K, K])[:, index][:, :, index]
    if "groups" in kw:
        kw = {**kw, "groups": np.r_[kw["groups"], kw["groups"]]}
    return K, y[index], kw


def _loss_weight(factor: float) -> Callable[[np.ndarray, np.ndarray, dict], Problem]:
    def change(K: np.ndarray, y: np.ndarray, kw: dict) -> Problem:
        names = {p.name for p in get_family(kw["family"]).params}
        if "C" in names:
            return K, y, {**kw, "C": factor}
        return K, y, {**kw, "lam": 1.0 / factor}
    return change


#: degenerate case -> change of a valid problem (K, y, solve keywords with "family").
CASES: dict[str, Callable[[np.ndarray, np.ndarray, dict], Problem]] = {
    "zero kernel": _scaled_kernel(0.0),
    "tiny kernel": _scaled_kernel(1e-9),
    "huge kernel": _scaled_kernel(1e9),
    "constant group": _constant_group,
    "duplicated": _duplicated,
    "C huge": _loss_weight(1e6),
    "C tiny": _loss_weight(1e-6),
}


def degenerate_problem(family: str, case: str, seed: int, n: int = 24, n_kernels: int = 4) -> Problem:
    """``(K, y, keywords of kernelfuse.solve)`` for ``family`` made degenerate by ``case``."""
    K, y, extra = small_problem(family, seed, n, n_kernels)
    kw: dict[str, Any] = {"family": family, **extra}
    if family == "vskl":
        kw["q"] = np.inf
    return CASES[case](K, y, kw)
