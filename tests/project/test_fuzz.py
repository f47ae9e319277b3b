"""Fuzzing every entry point with hostile inputs (issue 12): a clear error or a correct result.

Entry points: :func:`kernelfuse.solve` (every registered solver), the
estimators, the command line, model and result loading, TOML configs.
Inputs are drawn by hypothesis from the named mutations below, applied to
small valid problems; what counts as a good outcome is
:mod:`fuzzing` (a clear error, or a result whose status, objective and
certified gap hold up, and never a hang).  docs/reliability.md tables every
named input and what happens to it; a test keeps the table complete.

The CI profile is derandomised with a fixed number of examples per test;
``benchmarks/fuzz.py`` runs the long profile (``KERNELFUSE_FUZZ=long``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

import kernelfuse
from fuzzing import check_result, is_clear_error, outcome
from helpers import children_cpu_seconds, cpu_seconds, interruptible
from kernelfuse.assembly.result import Result
from kernelfuse.parts.registry import get_registry
from kernelfuse.problem.families import get_family
from kernelfuse.testing import small_problem

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=int(os.environ.get("KERNELFUSE_FUZZ_EXAMPLES", 1500)),
                          deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("KERNELFUSE_FUZZ", "ci"))

REPO = Path(__file__).resolve().parents[2]
REGISTRY = get_registry()
SOLVERS = sorted(REGISTRY.names("recipe"))
#: Solvers of one SVM (after their own weights): no iterations, no time limit to take.
ONE_SHOT = {"average", "alignment", "fheuristic", "cka", "pwmk", "easymkl"}

Problem = tuple[np.ndarray, np.ndarray, dict[str, Any]]  # K, y, keyword arguments of solve


# ---------------------------------------------------------------- mutations of solve's input
def _entry(K: np.ndarray, i: int, j: int, value: float) -> np.ndarray:
    K = K.copy()
    K[0, i % K.shape[1], j % K.shape[2]] = value
    return K


def _duplicates_with_conflicting_labels(K: np.ndarray, y: np.ndarray, kw: dict) -> Problem:
    index = np.r_[np.arange(y.shape[0]), 0, 0]
    y2 = y[index].copy()
    y2[-1] = -y2[-1] if y2.dtype.kind == "f" else y2[-1]
    return K[:, index][:, :, index], y2, kw


def _extreme(name: str, value: float) -> Callable[..., Problem]:
    return lambda K, y, kw: (K, y, {**kw, name: value})


#: input (as docs/reliability.md names it) -> mutation of a valid (K, y, solve keywords).
MUTATIONS: dict[str, Callable[[np.ndarray, np.ndarray, dict], Problem]] = {
    "K with one axis too few": lambda K, y, kw: (K[:, 0], y, kw),
    "K with an extra axis": lambda K, y, kw: (K[None], y, kw),
    "K not square": lambda K, y, kw: (K[:, :, :-1], y, kw),
    "y of another length than K": lambda K, y, kw: (K, y[:-1], kw),
    "K of Python objects": lambda K, y, kw: (K.astype(object), y, kw),
    "K of strings": lambda K, y, kw: (K.astype(str), y, kw),
    "complex K": lambda K, y, kw: (K + 1j, y, kw),
    "y of strings": lambda K, y, kw: (K, y.astype(str), kw),
    "NaN in K": lambda K, y, kw: (_entry(K, 1, 2, np.nan), y, kw),
    "inf in K": lambda K, y, kw: (_entry(K, 2, 2, np.inf), y, kw),
    "NaN in y": lambda K, y, kw: (K, np.where(np.arange(y.shape[0]) == 1, np.nan, y.T).T, kw),
    "no kernels (M = 0)": lambda K, y, kw: (K[:0], y, kw),
    "no samples (N = 0)": lambda K, y, kw: (K[:, :0, :0], y[:0], kw),
    "one sample": lambda K, y, kw: (K[:, :1, :1], y[:1], kw),
    "one class": lambda K, y, kw: (K, np.ones_like(y), kw),
    "labels outside {-1, +1}": lambda K, y, kw: (K, 2 * y + 3, kw),
    "duplicated samples with conflicting labels": _duplicates_with_conflicting_labels,
    "a non-PSD kernel": lambda K, y, kw: (np.concatenate([-K[:1], K[1:]]), y, kw),
    "a non-symmetric kernel": lambda K, y, kw: (_entry(K, 0, 1, K[0, 0, 1] + 0.5), y, kw),
    "near-duplicate kernels": lambda K, y, kw: (
        np.concatenate([K, K[:1] * (1 + 1e-13)]), y,
        {**kw, "groups": np.r_[kw["groups"], 0]} if "groups" in kw else kw),
    "an all-zero kernel": lambda K, y, kw: (np.concatenate([np.zeros_like(K[:1]), K[1:]]), y, kw),
    "kernel scale 1e19": lambda K, y, kw: (K * 1e19, y, kw),
    "huge kernel scale (1e50)": lambda K, y, kw: (K * 1e50, y, kw),
    "tiny kernel scale (1e-150)": lambda K, y, kw: (K * 1e-150, y, kw),
    "kernels of scales 1e-8 to 1e8": lambda K, y, kw: (
        K * np.geomspace(1e-8, 1e8, K.shape[0])[:, None, None], y, kw),
    "K stored as float32": lambda K, y, kw: (np.asarray(K).astype(np.float32), y, kw),
    "C = 0": _extreme("C", 0.0),
    "C negative": _extreme("C", -1.0),
    "C = NaN": _extreme("C", np.nan),
    "C = inf": _extreme("C", np.inf),
    "C = 1e-12": _extreme("C", 1e-12),
    "C = 1e12": _extreme("C", 1e12),
    "lam = 1e-12": _extreme("lam", 1e-12),
    "lam = 1e12": _extreme("lam", 1e12),
    "p = 1 (outside (1, 2])": _extreme("p", 1.0),
    "p = 7": _extreme("p", 7.0),
    "q = 0.5": _extreme("q", 0.5),
    "q = inf": _extreme("q", np.inf),
    "tol = 0": _extreme("tol", 0.0),
    "tol negative": _extreme("tol", -1e-3),
    "max_iter = 0": _extreme("max_iter", 0),
    "max_iter = 2.5": _extreme("max_iter", 2.5),
    "tol = inf": _extreme("tol", np.inf),
    "tol given as text": _extreme("tol", "abc"),
    "max_iter = inf": _extreme("max_iter", np.inf),
    "max_iter = NaN": _extreme("max_iter", np.nan),
    "max_iter = True": _extreme("max_iter", True),
    "C = True": _extreme("C", True),
    "seed = 2.5": _extreme("seed", 2.5),
    "a loss that is not a name": lambda K, y, kw: (K, y, {**kw, "loss": object()}),
    "a registry that is not one": lambda K, y, kw: (K, y, {**kw, "registry": "x"}),
    "an unknown parameter name": _extreme("Cc", 1.0),
    "an unknown loss name": lambda K, y, kw: (K, y, {**kw, "loss": "hinj"}),
    "an unknown family name": lambda K, y, kw: (K, y, {**kw, "family": "l1-mkl"}),
    "groups of the wrong length": lambda K, y, kw: (K, y, {**kw, "groups": np.zeros(K.shape[0] + 1, int)}),
    "negative group labels": lambda K, y, kw: (K, y, {**kw, "groups": -np.arange(K.shape[0])}),
    "non-integer groups": lambda K, y, kw: (K, y, {**kw, "groups": np.full(K.shape[0], 0.5)}),
}


#: Seconds each fuzzed solve may take (an honest ``time_limit`` status is a good outcome;
#: the slowest, mlmkl-max-md at C = 1e12, takes minutes to its tolerance).
TIME_LIMIT = 5.0


def _stops_on_gap(solver: str) -> bool:
    recipe = REGISTRY.get("recipe", solver).factory
    return getattr(recipe, "defaults", {}).get("stop", "gap") == "gap" and solver not in ONE_SHOT


@st.composite
def hostile_solve_calls(draw: st.DrawFn) -> tuple[str, list[str], Problem]:
    solver = draw(st.sampled_from(SOLVERS))
    family = draw(st.sampled_from(sorted(REGISTRY.get("recipe", solver).factory.families)))
    K, y, extra = small_problem(family, seed=draw(st.integers(0, 50)), n=draw(st.integers(6, 14)),
                                n_kernels=draw(st.integers(1, 3)))
    names = draw(st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=2, unique=True))
    kw: dict[str, Any] = {"family": family, **extra}
    applied = []
    for name in names:
        try:
            K, y, kw = MUTATIONS[name](K, y, kw)
        except (ValueError, TypeError, IndexError, ZeroDivisionError):  # no sense after the first
            continue
        applied.append(name)
    return solver, applied, (K, y, kw)


def _solve(solver: str, problem: Problem) -> Any:
    K, y, kw = problem
    return outcome(lambda: kernelfuse.solve(K, y, solver=solver, time_limit=TIME_LIMIT, **kw)
                   if solver not in ONE_SHOT else
                   kernelfuse.solve(K, y, solver=solver, **kw), scikit_learn=False)


#: Valid inputs that only some families take (mikl's q is 1 or 2).
ONLY_FOR = {"q = inf": {"vskl"}}
#: The named inputs that change the kernels' magnitudes or their storage: at most one of them at
#: a time is a valid problem (scalings compound beyond 1e20; float32 flushes 1e-150 to zero).
SCALINGS = ("kernel scale 1e19", "tiny kernel scale (1e-150)", "kernels of scales 1e-8 to 1e8",
            "K stored as float32")
#: The named inputs that leave a valid problem (where the family takes the parameter).
HARD_BUT_VALID = ("duplicated samples with conflicting labels", "near-duplicate kernels",
                  "an all-zero kernel", "kernel scale 1e19", "tiny kernel scale (1e-150)",
                  "kernels of scales 1e-8 to 1e8", "K stored as float32", "C = 1e-12", "C = 1e12", "lam = 1e-12",
                  "lam = 1e12", "q = inf", "max_iter = 0", "negative group labels")


@st.composite
def hard_but_valid_calls(draw: st.DrawFn) -> tuple[str, list[str], Problem]:
    solver = draw(st.sampled_from(SOLVERS))
    family = draw(st.sampled_from(sorted(REGISTRY.get("recipe", solver).factory.families)))
    takes = {p.name for p in get_family(family).params} | {"max_iter"}
    usable = [name for name in HARD_BUT_VALID
              if (" = " not in name or name.split(" = ")[0] in takes)
              and family in ONLY_FOR.get(name, {family})]
    if not get_family(family).uses_groups:
        usable.remove("negative group labels")
    if solver in ONE_SHOT | {"cvxpy"}:  # no iterations, or Clarabel's (>= 1)
        usable.remove("max_iter = 0")
    K, y, extra = small_problem(family, seed=draw(st.integers(0, 50)), n=draw(st.integers(8, 16)),
                                n_kernels=draw(st.integers(1, 3)))
    try:  # a few small draws have a label column of one class: not a valid start
        kernelfuse.Problem.create(K, y, family, **extra)
    except kernelfuse.ValidationError:
        reject()
    names = draw(st.lists(st.sampled_from(usable), min_size=1, max_size=2, unique=True))
    if len(set(names) & set(SCALINGS)) > 1:  # two scalings compound beyond the accepted 1e20
        names = names[:1]
    kw: dict[str, Any] = {"family": family, **extra}
    for name in names:
        K, y, kw = MUTATIONS[name](K, y, kw)
    return solver, names, (K, y, kw)


@given(hard_but_valid_calls())
@settings(max_examples=max(10, settings().max_examples // 2))  # each a solve to tolerance
def test_hard_but_valid_problems_get_a_correct_result_or_an_honest_failure(call):
    solver, names, problem = call
    result = _solve(solver, problem)
    event(outcome_line(result).split(":")[0])
    if isinstance(result, Exception):  # only "the solver could not": never a refusal of valid input
        assert isinstance(result, kernelfuse.SolverError), (names, result)
        return
    check_result(result, _stops_on_gap(solver))


def test_a_rescaled_run_whose_model_scores_off_its_certificate_is_not_converged():
    """A draw the long fuzz run found: at C = 1e12 on kernels of scales 1e-8 to 1e8 the unit-scale
    copy has C = 1e20, where the oracle's objective and the model's score part by rounding."""
    K, y, extra = small_problem("mlmkl_max", seed=10, n=11, n_kernels=3)
    K = K * np.geomspace(1e-8, 1e8, K.shape[0])[:, None, None]
    problem = (K, y, {"family": "mlmkl_max", **extra, "C": 1e12})
    check_result(_solve("mlmkl-max-averaged-md", problem), stops_on_gap=True)


@given(hostile_solve_calls())
def test_solve_gives_a_clear_error_or_a_correct_result(call):
    solver, names, problem = call
    result = _solve(solver, problem)
    event(outcome_line(result).split(":")[0])  # the outcome mix: --hypothesis-show-statistics
    if isinstance(result, Result):
        check_result(result, _stops_on_gap(solver))


def outcome_line(value: Any) -> str:
    """How docs/reliability.md states an outcome: the error type and message, or the status."""
    if isinstance(value, Result):
        return f"result, status {value.status}"
    return f"{type(value).__name__}: {value}"


def documented_outcomes() -> dict[str, str]:
    """Each named mutation on one representative call (mirror-vskl on ``vskl``, which takes C,
    q and groups; spicymkl on ``l1_mkl`` for loss; obscure on ``pnorm_mkl`` for lam, p and seed)."""
    lines = {}
    for name, mutate in MUTATIONS.items():
        solver, family = ("mirror-vskl", "vskl")
        if "lam" in name or name.startswith(("p =", "seed")):
            solver, family = "obscure", "pnorm_mkl"
        elif "loss" in name:
            solver, family = "spicymkl", "l1_mkl"
        K, y, extra = small_problem(family, seed=0, n=12, n_kernels=3)
        lines[name] = outcome_line(_solve(solver, mutate(K, y, {"family": family, **extra})))
    return lines


def test_the_docs_table_names_every_input():
    table = (REPO / "docs" / "reliability.md").read_text()
    missing = [name for name in list(MUTATIONS) + list(FILE_MUTATIONS) + list(CONFIG_MUTATIONS)
               + list(CLI_CALLS) + list(ESTIMATOR_INPUTS) + list(MODEL_FORGERIES) + list(KERNEL_SPEC_INPUTS)
               + list(STORAGE_INPUTS) + list(LABEL_INPUTS) + list(WEIGHT_INPUTS)
               if f"| {name} |" not in table]
    assert not missing, f"docs/reliability.md lacks rows for {missing}"


# ---------------------------------------------------------------- estimators
def _features(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, 0)


#: input -> (X, y) of a fit from a valid pair.
ESTIMATOR_INPUTS: dict[str, Callable[[np.ndarray, np.ndarray], tuple[Any, Any]]] = {
    "valid features and targets": lambda X, y: (X, y),
    "X with NaN": lambda X, y: (np.where(X > 1.5, np.nan, X), y),
    "X with inf": lambda X, y: (np.where(X > 1.5, np.inf, X), y),
    "X of one row": lambda X, y: (X[:1], y[:1]),
    "X with no rows": lambda X, y: (X[:0], y[:0]),
    "X with no columns": lambda X, y: (X[:, :0], y),
    "X 3-D": lambda X, y: (X[:, :, None], y),
    "X of strings": lambda X, y: (X.astype(str).astype(object) + "x", y),
    "y of another length than X": lambda X, y: (X, y[:-1]),
    "y of one class": lambda X, y: (X, np.zeros_like(y)),
    "y continuous for a classifier": lambda X, y: (X, X[:, 0]),
    "a constant feature": lambda X, y: (np.c_[X, np.ones(len(X))], y),
    "huge features (1e200)": lambda X, y: (X * 1e200, y),
    "tiny features (1e-200)": lambda X, y: (X * 1e-200, y),
    "duplicated rows with conflicting labels": lambda X, y: (np.r_[X, X[:3]], np.r_[y, 1 - y[:3]]),
}

#: estimator parameters tried with a valid fit.
ESTIMATOR_PARAMS = [
    {"C": -1.0}, {"C": np.nan}, {"normalization": "bogus"}, {"kernels": "bogus"}, {"kernels": []},
    {"solver": "spicymkI"}, {"family": "vskl"}, {"tol": -1.0}, {"max_iter": -3},
    {"memory_budget": 10}, {"time_limit": 0.0}, {"solver_params": {"nope": 1}},
    {"loss": "squared-hinj"}, {"standardize": True}, {"random_state": "x"}, {"memory_budget": "lots"},
    {"solver_params": "abc"}, {"tol": np.inf}, {"max_iter": True}, {"C": True},
    {"views": {"a": [0], "b": [1, 2]}}, {"views": [[0, 1], [9]]}, {"views": {"a": ["nope"]}},
    {"views": {"a": 0}}, {"views": []}, {"views": "abc"}, {"views": {"a": [True, False]}},
    {"standardize": "sometimes"}, {"C2": -1.0},
]


def _small_grid() -> list:
    from kernelfuse.kernels.functions import KernelSpec

    return [KernelSpec(REGISTRY.create("kernel", "gaussian", width=w)) for w in (0.5, 2.0)] + [
        KernelSpec(REGISTRY.create("kernel", "linear"))]


def _targets(kind: str, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The valid targets of each estimator for features ``X`` (0/1 labels ``y``)."""
    if kind == "MKLRegressor":
        return X[:, 0] + 0.1 * X[:, 1]
    if kind == "MultiLabelMKLClassifier":
        return np.c_[y, (X[:, 1] > 0).astype(int)]
    return y


@given(kind=st.sampled_from(["MKLClassifier", "MKLRegressor", "MultiLabelMKLClassifier"]),
       name=st.sampled_from(sorted(ESTIMATOR_INPUTS)),
       params=st.one_of(st.just({}), st.sampled_from(ESTIMATOR_PARAMS)),  # half with defaults
       n=st.integers(5, 30), seed=st.integers(0, 9))
def test_estimators_give_a_clear_error_or_a_model_that_predicts(kind, name, params, n, seed):
    from kernelfuse.frontends import estimators

    X, y = _features(n, seed)
    X, y = ESTIMATOR_INPUTS[name](X, _targets(kind, X, y))
    model = getattr(estimators, kind)(**{"kernels": _small_grid(), "max_iter": 30, **params})
    fitted = outcome(lambda: model.fit(X, y))
    event(type(fitted).__name__)
    if isinstance(fitted, estimators.MKLEstimator):
        predicted = outcome(lambda: fitted.predict(X))
        if not isinstance(predicted, Exception):
            assert predicted.shape[0] == len(X)
            if hasattr(fitted, "classes_") and kind == "MKLClassifier":
                assert set(np.unique(predicted)) <= set(fitted.classes_)
            else:
                assert np.isfinite(np.asarray(predicted, dtype=float)).all()


# ---------------------------------------------------------------- kernel specs
def _spec(*args: Any, **params: Any) -> Callable[[], list]:
    """A list of the KernelSpec of ``args`` and ``params`` and the linear kernel, built when called."""
    from kernelfuse.kernels.functions import KernelSpec

    return lambda: [KernelSpec(*args, **params), KernelSpec("linear")]


def _random_features(width: float) -> Callable[[], list]:
    from kernelfuse.plugins.kernels.random_features import RandomFourierFeatures

    return _spec(RandomFourierFeatures.draw(3, width=width, n_features=20, seed=0))


#: input -> (the kernels of a fit, built when called; whether X is a pandas DataFrame of columns a, b, c).
KERNEL_SPEC_INPUTS: dict[str, tuple[Callable[[], list], bool]] = {
    "a kernel by registered name": (_spec("gaussian", width=2.0), False),
    "a kernel name in capitals": (_spec("Gaussian", width=2.0), False),
    "an unknown kernel name": (_spec("gausian", width=2.0), False),
    "a kernel name with an unknown parameter": (_spec("gaussian", widht=2.0), False),
    "a kernel name with a width of text": (_spec("gaussian", width="wide"), False),
    "kernel parameters beside a kernel object": (lambda: _spec(REGISTRY.create("kernel", "gaussian"),
                                                               width=2.0)(), False),
    "a kernel that is a number": (_spec(42), False),
    "a kernel that is None": (_spec(None), False),
    "features out of range": (_spec("linear", features=[7]), False),
    "a negative feature index": (_spec("gaussian", features=[-1]), False),
    "features as a dict": (_spec("gaussian", features={"scale": 1}), False),
    "features as one string": (_spec("gaussian", features="scale"), False),
    "features as one integer": (_spec("gaussian", features=1), False),
    "no features": (_spec("gaussian", features=[]), False),
    "features of floats": (_spec("gaussian", features=[0.5, 1.0]), False),
    "a boolean mask as features": (_spec("gaussian", features=[True, False, True]), False),
    "DataFrame column names as features": (_spec("gaussian", features=["b", "c"]), True),
    "an unknown DataFrame column name": (_spec("gaussian", features=["scale"]), True),
    "column names without a DataFrame": (_spec("gaussian", features=["b"]), False),
    "Gaussian width 5e-324": (_spec("gaussian", width=5e-324), False),
    "Gaussian width 1e-300": (_spec("gaussian", width=1e-300), False),
    "Gaussian width 1e300": (_spec("gaussian", width=1e300), False),
    "Gaussian width 1.7e308": (_spec("gaussian", width=1.7e308), False),
    "Gaussian gamma 1e-320": (_spec("gaussian", gamma=1e-320), False),
    "Gaussian gamma 1e300": (_spec("gaussian", gamma=1e300), False),
    "Laplacian width 1e-300": (_spec("laplacian", width=1e-300), False),
    "Laplacian width 1e300": (_spec("laplacian", width=1e300), False),
    "a median width of 1e300": (_spec("gaussian", width=1e300, relative_to="median"), False),
    "a median width of 1e-300": (_spec("laplacian", width=1e-300, relative_to="median"), False),
    "a NaN width": (_spec("gaussian", width=float("nan")), False),
    "a zero width": (_spec("laplacian", width=0.0), False),
    "a negative width": (_spec("gaussian", width=-1.0), False),
    "an infinite width": (_spec("gaussian", width=float("inf")), False),
    "random Fourier features of width 1e-308": (lambda: _random_features(1e-308)(), False),
    "random Fourier features of width 1e300": (lambda: _random_features(1e300)(), False),
}


#: The named specs that are valid: built, computed (but names, on an array), and fitted wherever the
#: linear kernel alone is.
VALID_SPECS = ("a kernel by registered name", "a kernel name in capitals", "a negative feature index",
               "a boolean mask as features", "DataFrame column names as features", "Gaussian width 5e-324",
               "Gaussian width 1e-300", "Gaussian width 1e300", "Gaussian width 1.7e308", "Gaussian gamma 1e-320",
               "Gaussian gamma 1e300", "Laplacian width 1e-300", "Laplacian width 1e300", "a median width of 1e300",
               "a median width of 1e-300", "random Fourier features of width 1e300")


def _check_stack(K: np.ndarray, specs: list) -> None:
    """A kernel stack computed from specs: finite, symmetric, PSD where its functions say so."""
    assert np.isfinite(K).all()
    for Km, spec in zip(K, specs):
        np.testing.assert_allclose(Km, Km.T, rtol=1e-10, atol=1e-10)
        if spec.function.psd:
            assert np.linalg.eigvalsh(Km)[0] >= -1e-8 * max(1.0, np.abs(Km).max()) * Km.shape[0]


def _linear_fit(X: Any, y: np.ndarray) -> Any:
    """The reference outcome: a fit of the linear kernel alone (a draw of one class fails it)."""
    from kernelfuse.frontends.estimators import MKLClassifier
    from kernelfuse.kernels.functions import KernelSpec

    return outcome(lambda: MKLClassifier(kernels=[KernelSpec("linear")], max_iter=30).fit(X, y))


@given(name=st.sampled_from(sorted(KERNEL_SPEC_INPUTS)), n=st.integers(5, 30), seed=st.integers(0, 9))
def test_kernel_specs_give_a_clear_error_or_a_model_that_predicts(name, n, seed):
    """Each named spec: built, computed on its own and fitted by an estimator (on a DataFrame where
    the input says so): a kernelfuse error at any step, or a finite PSD stack and a model that
    predicts; a valid spec is never refused."""
    from kernelfuse.frontends.estimators import MKLClassifier
    from kernelfuse.kernels.functions import compute_kernels, fitted_specs

    make, frame = KERNEL_SPEC_INPUTS[name]
    valid = name in VALID_SPECS
    X, y = _features(n, seed)
    specs = outcome(make, scikit_learn=False)
    event(f"spec: {type(specs).__name__}")
    if isinstance(specs, Exception):
        assert isinstance(specs, kernelfuse.KernelfuseError) and not valid, (name, specs)
        return
    # as a direct user computes them
    K = outcome(lambda: compute_kernels(fitted_specs(specs, X), X), scikit_learn=False)
    if isinstance(K, Exception):
        assert isinstance(K, kernelfuse.KernelfuseError) and not (valid and not frame), (name, K)
    else:
        _check_stack(K, specs)
    if frame:
        X = pytest.importorskip("pandas").DataFrame(X, columns=["a", "b", "c"])
    fitted = outcome(lambda: MKLClassifier(kernels=specs, max_iter=30).fit(X, y))
    event(f"fit: {type(fitted).__name__}")
    if valid:
        reference = _linear_fit(X, y)
        assert isinstance(fitted, MKLClassifier) == isinstance(reference, MKLClassifier), (name, fitted, reference)
    if isinstance(fitted, MKLClassifier):
        predicted = outcome(lambda: fitted.predict(X))
        assert isinstance(predicted, Exception) or set(np.unique(predicted)) <= set(fitted.classes_)


# ---------------------------------------------------------------- kernel storage
#: input -> the estimator's storage parameters (a storage_dir "{tmp}" is a fresh folder, "{file}" a file in it).
STORAGE_INPUTS: dict[str, dict[str, Any]] = {
    "memmap in a writable folder": {"storage": "memmap", "storage_dir": "{tmp}"},
    "memmap in the temporary folder": {"storage": "memmap"},
    "auto storage in a writable folder": {"storage": "auto", "storage_dir": "{tmp}"},
    "memmap in a missing folder": {"storage": "memmap", "storage_dir": "{tmp}/missing/deeper"},
    "memmap in a file": {"storage": "memmap", "storage_dir": "{file}"},
    "memmap in an empty storage_dir": {"storage": "memmap", "storage_dir": ""},
    "memmap in a folder refusing files": {"storage": "memmap", "storage_dir": "/proc"},
    "a storage_dir that is a number": {"storage": "memmap", "storage_dir": 5},
    "a memory stack beside a missing folder": {"storage": "memory", "storage_dir": "{tmp}/missing"},
    "an unknown storage": {"storage": "disk"},
    "rows for a solver that needs the stack": {"storage": "rows"},
    "factors of kernels without features": {"storage": "factors", "solver": "spicymkl"},
}


#: The named storage settings that are valid: a model wherever the default storage gives one.
VALID_STORAGE = ("memmap in a writable folder", "memmap in the temporary folder", "auto storage in a writable folder")


@given(name=st.sampled_from(sorted(STORAGE_INPUTS)), n=st.integers(5, 30), seed=st.integers(0, 9),
       budget=st.sampled_from([None, 10_000]))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_storage_settings_give_a_clear_error_or_a_model_that_predicts(tmp_path, name, n, seed, budget):
    """Each named storage setting (within a budget of 10,000 bytes, or the default): a model where the
    default storage gives one, or a kernelfuse error naming the setting; no stack file left behind."""
    from kernelfuse.frontends.estimators import MKLClassifier

    (tmp_path / "file").write_text("x")
    params = {key: value.format(tmp=tmp_path, file=tmp_path / "file") if isinstance(value, str) else value
              for key, value in STORAGE_INPUTS[name].items()}
    X, y = _features(n, seed)
    fitted = outcome(lambda: MKLClassifier(kernels=_small_grid(), max_iter=30, memory_budget=budget,
                                           **params).fit(X, y))
    event(type(fitted).__name__)
    reference = _linear_fit(X, y)
    if isinstance(fitted, Exception) and isinstance(reference, MKLClassifier):
        assert name not in VALID_STORAGE, (name, fitted)
        assert isinstance(fitted, kernelfuse.KernelfuseError) and "storage" in str(fitted), (name, fitted)
    if isinstance(fitted, MKLClassifier):
        predicted = outcome(lambda: fitted.predict(X))
        assert isinstance(predicted, Exception) or predicted.shape == (len(X),)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no stack file left behind


# ---------------------------------------------------------------- multi-label targets
def _sparse(kind: str, values: Callable[[np.ndarray], np.ndarray] = lambda Y: Y) -> Callable[[np.ndarray], Any]:
    from scipy import sparse

    return lambda Y: getattr(sparse, kind)(values(Y))


#: input -> targets from a valid 0/1 indicator matrix (n, 2).
LABEL_INPUTS: dict[str, Callable[[np.ndarray], Any]] = {
    "a dense indicator matrix": lambda Y: Y,
    "a sparse indicator matrix (CSR)": _sparse("csr_matrix"),
    "a sparse indicator array (csr_array)": _sparse("csr_array"),
    "a sparse indicator matrix (COO)": _sparse("coo_matrix"),
    "a sparse indicator matrix (CSC)": _sparse("csc_matrix"),
    "a sparse -1/+1 matrix": _sparse("csr_matrix", lambda Y: 2 * Y - 1),
    "a sparse boolean matrix": _sparse("csr_matrix", lambda Y: Y.astype(bool)),
    "a sparse float matrix": _sparse("csr_matrix", lambda Y: Y.astype(float)),
    "a sparse matrix of one label column": _sparse("csr_matrix", lambda Y: Y[:, :1]),
    "a sparse matrix with a label never on": _sparse("csr_matrix", lambda Y: np.c_[Y, np.zeros(len(Y), int)]),
    "a sparse matrix holding a 2": _sparse("csr_matrix", lambda Y: np.where(np.arange(len(Y))[:, None] == 0, 2, Y)),
    "a sparse matrix with NaN": _sparse("csr_matrix", lambda Y: np.where(Y > 0, np.nan, 0.0)),
    "a sparse matrix of another length than X": _sparse("csr_matrix", lambda Y: Y[:-1]),
    "a sparse matrix with no rows": _sparse("csr_matrix", lambda Y: Y[:0]),
    "a sparse matrix with no columns": _sparse("csr_matrix", lambda Y: Y[:, :0]),
}


@given(name=st.sampled_from(sorted(LABEL_INPUTS)), n=st.integers(5, 30), seed=st.integers(0, 9),
       shared=st.booleans())
def test_multilabel_targets_give_a_clear_error_or_the_model_of_their_dense_form(name, n, seed, shared):
    """The multi-label entry points (the estimator, per label or with one shared combination, on the
    0/1 indicator, and ``solve`` of ``mlmkl_sum`` on its -1/+1 form) on each named change of the
    targets: a clear error or a model, and a sparse target gives what its dense form gives."""
    from scipy import sparse

    from kernelfuse.frontends.estimators import MultiLabelMKLClassifier
    from kernelfuse.kernels.functions import compute_kernels

    X, y = _features(n, seed)
    indicator = _targets("MultiLabelMKLClassifier", X, y)
    Y = LABEL_INPUTS[name](indicator)
    params = {"solver": "mlmkl-sum", "family": "mlmkl_sum", "C": 1.0} if shared else {}

    def fit(targets: Any) -> Any:
        model = MultiLabelMKLClassifier(kernels=_small_grid(), max_iter=30, **params)
        fitted = outcome(lambda: model.fit(X, targets))
        return fitted if isinstance(fitted, Exception) else outcome(lambda: fitted.decision_function(X))

    scores = fit(Y)
    event(f"fit: {type(scores).__name__}")
    if sparse.issparse(Y):
        dense = fit(Y.toarray())
        assert type(scores) is type(dense), (scores, dense)
        if isinstance(dense, Exception):
            assert str(scores) == str(dense)
        else:
            np.testing.assert_allclose(scores, dense, rtol=1e-7, atol=1e-9)
    K, signs = compute_kernels(_small_grid(), X), LABEL_INPUTS[name](2 * indicator - 1)  # solve takes -1/+1
    solved = outcome(lambda: kernelfuse.solve(K, signs, solver="mlmkl-sum", family="mlmkl_sum", C=1.0,
                                              time_limit=TIME_LIMIT), scikit_learn=False)
    event(f"solve: {type(solved).__name__}")
    if isinstance(solved, Result):
        check_result(solved, _stops_on_gap("mlmkl-sum"))


# ---------------------------------------------------------------- sample and class weights
#: input -> (``sample_weight`` from the number of rows n, ``class_weight``): the weighting inputs.
WEIGHT_INPUTS: dict[str, tuple[Callable[[int], Any], Any]] = {
    "integer sample weights": (lambda n: np.arange(n) % 3 + 1, None),
    "sample weights of 0 on some rows": (lambda n: np.where(np.arange(n) % 4 == 0, 0.0, 1.5), None),
    "sample weights from 1e-6 to 1e6": (lambda n: np.geomspace(1e-6, 1e6, n), None),
    "sample weights as a list": (lambda n: [1.0] * n, None),
    "negative sample weights": (lambda n: -np.ones(n), None),
    "NaN in sample weights": (lambda n: np.where(np.arange(n) == 1, np.nan, 1.0), None),
    "inf in sample weights": (lambda n: np.where(np.arange(n) == 1, np.inf, 1.0), None),
    "sample weights of another length than X": (lambda n: np.ones(n + 1), None),
    "sample weights of two columns": (lambda n: np.ones((n, 2)), None),
    "sample weights all zero": (lambda n: np.zeros(n), None),
    "sample weights of strings": (lambda n: ["a"] * n, None),
    "class_weight balanced": (lambda n: None, "balanced"),
    "class_weight of one class": (lambda n: None, {1: 4.0}),
    "class_weight naming an unknown class": (lambda n: None, {7: 1.0}),
    "class_weight negative": (lambda n: None, {0: -1.0}),
    "class_weight NaN": (lambda n: None, {0: np.nan}),
    "class_weight an unknown name": (lambda n: None, "balance"),
    "class_weight a list": (lambda n: None, [1.0, 2.0]),
}


#: The weighting inputs that are valid: a model, or the refusal of a solver without weights (naming
#: ``sample_weight``), or of the targets of the rows of weight > 0 (one class left).
VALID_WEIGHTS = ("integer sample weights", "sample weights of 0 on some rows", "sample weights from 1e-6 to 1e6",
                 "sample weights as a list", "class_weight balanced", "class_weight of one class")


@given(kind=st.sampled_from(["MKLClassifier", "MKLRegressor", "MultiLabelMKLClassifier", "solve"]),
       name=st.sampled_from(sorted(WEIGHT_INPUTS)), solver=st.sampled_from(["spicymkl", "cvxpy", "simplemkl"]),
       n=st.integers(6, 30), seed=st.integers(0, 9))
def test_weights_give_a_model_or_a_kernelfuse_error_naming_the_parameter(kind, name, solver, n, seed):
    """A weighting input fits (or solves), or is refused by a kernelfuse error naming the parameter
    (``sample_weight`` or ``class_weight``): never a raw exception.  A solver without weights refuses
    them by name; ``MKLRegressor`` has no ``class_weight``."""
    from kernelfuse.frontends import estimators

    weights, class_weight = WEIGHT_INPUTS[name]
    X, y = _features(n, seed)
    sample_weight = weights(n)
    if kind == "solve":
        from kernelfuse.kernels.functions import compute_kernels

        if class_weight is not None:
            reject()
        family = "l1_mkl" if solver != "simplemkl" else "l1_mkl_sq"
        got = outcome(lambda: kernelfuse.solve(compute_kernels(_small_grid(), X), 2.0 * y - 1, solver=solver,
                                               family=family, sample_weight=sample_weight, time_limit=TIME_LIMIT),
                      scikit_learn=False)
    else:
        if kind == "MKLRegressor" and (class_weight is not None or solver == "simplemkl"):
            reject()  # no class weights; simplemkl fits classes only
        params = {} if class_weight is None else {"class_weight": class_weight}
        model = getattr(estimators, kind)(kernels=_small_grid(), max_iter=30, solver=solver, **params)
        got = outcome(lambda: model.fit(X, _targets(kind, X, y), sample_weight=sample_weight))
    event(type(got).__name__)
    if isinstance(got, Exception):
        assert isinstance(got, kernelfuse.KernelfuseError), (name, got)
        if name not in VALID_WEIGHTS:  # valid weights may leave rows whose targets are refused
            assert ("sample_weight" if class_weight is None else "class_weight") in str(got), (name, got)


# ---------------------------------------------------------------- model and result files
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from kernelfuse.frontends.estimators import MKLClassifier

    folder = tmp_path_factory.mktemp("files")
    X, y = _features(30, 0)
    model = MKLClassifier(kernels=_small_grid()).fit(X, y)
    model.save(folder / "model.npz")
    model.result_.save(folder / "result.npz")
    return folder, model, X


def _flip(data: bytes, at: int) -> bytes:
    changed = bytearray(data)
    changed[at % len(changed)] ^= 0xA5
    return bytes(changed)


#: input -> new file bytes from the saved bytes and a position.
FILE_MUTATIONS: dict[str, Callable[[bytes, int], bytes]] = {
    "the file as saved": lambda data, at: data,
    "an empty file": lambda data, at: b"",
    "random bytes": lambda data, at: np.random.default_rng(at).bytes(at % 5000 + 1),
    "a file cut short": lambda data, at: data[: at % len(data)],
    "a flipped byte": _flip,
    "garbage appended": lambda data, at: data + np.random.default_rng(at).bytes(at % 300 + 1),
    "a zip of other arrays": lambda data, at: _npz_bytes(x=np.arange(at % 7)),
    "a pickled object array": lambda data, at: _npz_bytes(header=np.array([{"a": 1}], dtype=object)),
}


def _npz_bytes(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@given(name=st.sampled_from(sorted(FILE_MUTATIONS)), at=st.integers(0, 10**6),
       which=st.sampled_from(["model", "result"]))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_damaged_files_are_refused_or_load_the_very_same_model(saved, tmp_path, name, at, which):
    from kernelfuse.frontends.persistence import load_model

    folder, model, X = saved
    path = tmp_path / f"{which}.npz"
    path.write_bytes(FILE_MUTATIONS[name]((folder / f"{which}.npz").read_bytes(), at))
    loaded = outcome(lambda: load_model(path) if which == "model" else Result.load(path), scikit_learn=False)
    event(type(loaded).__name__)
    if isinstance(loaded, Exception):
        assert isinstance(loaded, kernelfuse.ValidationError), loaded
    elif which == "model":  # a byte no array reads (a zip timestamp): the same predictions
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    else:
        np.testing.assert_array_equal(loaded.coef, model.result_.coef)


def _forge(arrays: dict[str, np.ndarray], at: int, **changes: Any) -> dict[str, np.ndarray]:
    """The saved model's arrays with ``changes`` (``kernel_width``: the header's first kernel
    width; others: arrays, a callable mapping the old array and ``at`` to the new one)."""
    header = json.loads(str(arrays["header"]))
    forged = dict(arrays)
    for name, change in changes.items():
        if name == "kernel_width":
            header["kernels"][0]["params"]["width"] = change
        else:
            forged[name] = change(forged[name], at)
    forged["header"] = np.array(json.dumps(header))
    return forged


def _at(value: float) -> Callable[[np.ndarray, int], np.ndarray]:
    """An array with ``value`` at the drawn position."""
    def put(array: np.ndarray, at: int) -> np.ndarray:
        array = array.astype(float)
        array.flat[at % array.size] = value
        return array
    return put


#: input -> (the forged arrays from the saved ones and a drawn integer, the field the refusal names).
MODEL_FORGERIES: dict[str, tuple[Callable[[dict[str, np.ndarray], int], dict[str, np.ndarray]], str]] = {
    "a NaN intercept": (lambda a, at: _forge(a, at, result0_intercept=lambda v, at: np.array(np.nan)),
                        "intercept"),
    "a NaN coefficient": (lambda a, at: _forge(a, at, result0_coef=_at(np.nan)), "coefficients"),
    "a NaN kernel width": (lambda a, at: _forge(a, at, kernel_width=float("nan")), "width"),
    "a kernel width of the wrong type": (lambda a, at: _forge(a, at, kernel_width=[at]), "width"),
    "a zero training diagonal": (lambda a, at: _forge(a, at, train_diagonal=_at(0.0)), "train_diagonal"),
    "a negative training diagonal": (lambda a, at: _forge(a, at, train_diagonal=_at(-1.0 - at)),
                                     "train_diagonal"),
    "a changed training diagonal": (lambda a, at: _forge(a, at, train_diagonal=_at(1.5 + at)), "train_diagonal"),
    "3 classes on a binary model": (lambda a, at: _forge(a, at, classes=lambda v, at: np.arange(3) + at % 2),
                                    "classes"),
}


@given(name=st.sampled_from(sorted(MODEL_FORGERIES)), at=st.integers(0, 10**6))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_forged_models_with_a_recomputed_digest_are_refused_naming_the_field(saved, tmp_path, name, at):
    """A file changed and its digest recomputed (as anyone can) passes the integrity check:
    what it means is checked, and the refusal names the changed field."""
    from kernelfuse.frontends.persistence import load_model
    from kernelfuse.runtime.npz_file import DIGEST, arrays_digest, read_npz

    folder, _, _ = saved
    forge, field = MODEL_FORGERIES[name]
    arrays = forge(read_npz(folder / "model.npz", "model", verify=True), at)
    path = tmp_path / "forged.npz"
    np.savez(path, **arrays, **{DIGEST: np.array(arrays_digest(arrays))})  # the digest, recomputed
    refused = outcome(lambda: load_model(path), scikit_learn=False)
    assert isinstance(refused, kernelfuse.ValidationError) and field in str(refused), refused


# ---------------------------------------------------------------- TOML configs
CONFIG = """
[data]
train = "train.csv"
target = "label"

[kernels]
grid = true
widths = [1.0]
degrees = [1]

[model]
solver = "mirror-vskl"
family = "l1_mkl_sq"
C = 1.0
max_iter = 20
"""

#: input -> config text from the valid one and a drawn integer.
CONFIG_MUTATIONS: dict[str, Callable[[str, int], str]] = {
    "the valid config": lambda text, at: text,
    "malformed TOML": lambda text, at: text[: at % len(text)] + "[[[\n" + text[at % len(text):],
    "a truncated config": lambda text, at: text[: at % len(text)],
    "an unknown section": lambda text, at: text + "\n[modle]\nC = 1\n",
    "an unknown key": lambda text, at: text.replace("C = 1.0", "Cee = 1.0"),
    "a value of the wrong type": lambda text, at: text.replace("C = 1.0", 'C = "big"'),
    "a negative max_iter": lambda text, at: text.replace("max_iter = 20", "max_iter = -20"),
    "a boolean C": lambda text, at: text.replace("C = 1.0", "C = true"),
    "a random_state of text": lambda text, at: text + 'random_state = "x"\n',
    "non-positive kernel widths": lambda text, at: text.replace("widths = [1.0]", "widths = [-1.0, 0.0]"),
    "a non-integer kernel degree": lambda text, at: text.replace("degrees = [1]", "degrees = [1.5, -2]"),
    "an output model that is a number": lambda text, at: text + "\n[output]\nmodel = 5\n",
    "a missing data file": lambda text, at: text.replace("train.csv", "nowhere.csv"),
    "a missing target column": lambda text, at: text.replace('"label"', '"labl"'),
    "an unknown kernel spec": lambda text, at: text.replace(
        "grid = true\nwidths = [1.0]\ndegrees = [1]",
        '[[kernels.spec]]\nkernel = "gausian"\nparams = { width = 1.0 }'),
    "a binary file as config": lambda text, at: np.random.default_rng(at).bytes(200).decode("latin-1"),
}


@pytest.fixture(scope="module")
def csv_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("csv")
    X, y = _features(30, 1)
    lines = ["a,b,c,label"] + [f"{a},{b},{c},{t}" for (a, b, c), t in zip(X, y)]
    (folder / "train.csv").write_text("\n".join(lines) + "\n")
    return folder


@given(name=st.sampled_from(sorted(CONFIG_MUTATIONS)), at=st.integers(0, 10**4))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_configs_give_a_clear_error_or_a_fitted_model(csv_folder, name, at):
    from kernelfuse.frontends.cli import main

    config = csv_folder / f"config-{abs(hash(name)) % 1000}.toml"
    config.write_text(CONFIG_MUTATIONS[name](CONFIG, at), encoding="latin-1")
    code = _cli(main, ["fit", str(config), "--output", str(csv_folder / "model.npz"), "--quiet"])
    assert code in (0, 1, 2)  # 1: a solver that stalled (a truncated max_iter, a C cut short)


# ---------------------------------------------------------------- the command line
def _cli(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """The exit status of ``kernelfuse argv``; an unclear failure or a traceback fails."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = outcome(lambda: main(argv))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    assert not isinstance(code, Exception), f"main raised {code!r}"
    assert "Traceback" not in err.getvalue()
    if code != 0:
        assert err.getvalue().strip(), f"exit {code} without a message"
    return int(code)


#: input -> argv (a problem file ``{problem}`` and an output ``{out}`` are filled in).
CLI_CALLS: dict[str, list[str]] = {
    "a valid solve": ["solve", "{problem}", "--solver", "mirror-vskl", "--family", "l1_mkl_sq",
                      "--output", "{out}"],
    "no command": [],
    "an unknown command": ["slove"],
    "solve without --solver": ["solve", "{problem}", "--output", "{out}"],
    "an unknown solver": ["solve", "{problem}", "--solver", "spicymkI", "--output", "{out}"],
    "a non-numeric --C": ["solve", "{problem}", "--solver", "cvxpy", "--family", "l1_mkl_sq",
                          "--C", "lots", "--output", "{out}"],
    "a missing problem file": ["solve", "{missing}", "--solver", "cvxpy", "--output", "{out}"],
    "an output folder that does not exist": ["solve", "{problem}", "--solver", "average",
                                             "--family", "l1_mkl_sq", "--output", "/nowhere/r.npz"],
    "an output that is a folder": ["solve", "{problem}", "--solver", "average", "--family", "l1_mkl_sq",
                                   "--output", "{folder}"],
    "an empty output path": ["solve", "{problem}", "--solver", "average", "--output", ""],
    "an output in /proc": ["solve", "{problem}", "--solver", "average", "--output", "/proc/r.npz"],
    "a folder as the problem file": ["solve", "{folder}", "--solver", "average", "--output", "{out}"],
    "predictions to a missing folder": ["predict", "{garbage}", "{problem}", "--output", "/nowhere/p.csv"],
    "a --set without =": ["solve", "{problem}", "--solver", "average", "--set", "tol",
                          "--output", "{out}"],
    "--set max_iter=inf": ["solve", "{problem}", "--solver", "mirror-vskl", "--family", "l1_mkl_sq",
                           "--set", "max_iter=inf", "--output", "{out}"],
    "--set growth=abc": ["solve", "{problem}", "--solver", "spicymkl", "--family", "l1_mkl",
                         "--set", "growth=abc", "--output", "{out}"],
    "--set solver=x": ["solve", "{problem}", "--solver", "spicymkl", "--set", "solver=x",
                       "--output", "{out}"],
    "predict with a damaged model": ["predict", "{garbage}", "{problem}", "--output", "{out}"],
    "a problem file with a misspelt array": ["solve", "{misspelt}", "--solver", "average",
                                             "--family", "l1_mkl_sq", "--output", "{out}"],
}


@given(name=st.sampled_from(sorted(CLI_CALLS)), extra=st.lists(
    st.sampled_from(["--quiet", "--tol", "0", "-1", "nan", "--max-iter", "x", "--family", "mikl",
                     "--time-limit", "1e-9", "--check-psd", "false", "--q", "inf", "--set", "a=b"]),
    max_size=4))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_the_command_line_exits_cleanly(tmp_path, name, extra):
    from kernelfuse.frontends.cli import main

    K, y, _ = small_problem("l1_mkl_sq", seed=0, n=12, n_kernels=2)
    np.savez(tmp_path / "p.npz", K=K, y=y)
    np.savez(tmp_path / "bad.npz", K=K, y=y, group=np.zeros(2))
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04 not really")
    names = {"problem": tmp_path / "p.npz", "out": tmp_path / "r.npz", "missing": tmp_path / "no.npz",
             "garbage": tmp_path / "garbage.npz", "misspelt": tmp_path / "bad.npz", "folder": tmp_path}
    argv = [part.format(**names) for part in CLI_CALLS[name]] + extra
    assert _cli(main, argv) in (0, 1, 2)


def test_every_named_hostile_input_ends_cleanly_once():
    """Each named input once, deterministic: the rows of docs/reliability.md hold."""
    for name, line in documented_outcomes().items():
        assert line.startswith(("result, status", "ValidationError", "UnknownNameError",
                                "IncompatiblePartsError", "SolverError")), (name, line)


def test_clear_errors_are_told_apart_from_crashes():
    assert is_clear_error(kernelfuse.ValidationError("K has NaN"))
    assert is_clear_error(ValueError("Found array with 0 sample(s)"))
    assert not is_clear_error(IndexError("index 3 is out of bounds"))
    assert not is_clear_error(np.linalg.LinAlgError("Singular matrix"))
    assert not is_clear_error(ValueError(""))
    assert json.loads(json.dumps(outcome_line(kernelfuse.ValidationError("x"))))


#: Interrupted solves: outer-loop solvers on a problem they cannot finish (solves whose SVMs run
#: on OSQP, with its own SIGINT handler, are interrupted in tests/project/test_degenerate.py).
INTERRUPTED_SOLVES = {
    "spicymkl": ["--family", "l1_mkl"],
    "mikl": ["--family", "mikl"],
}


@given(solver=st.sampled_from(sorted(INTERRUPTED_SOLVES)), delay=st.floats(0.0, 1.0))
@settings(max_examples=max(5, settings().max_examples // 100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_interrupted_command_line_solve_ends_cleanly(tmp_path, solver, delay):
    """SIGINT at a random moment of `kernelfuse solve`: exit 130 within 1.5 s of the process's own
    CPU time after the signal (writing the model and exiting included; counted in CPU time where
    /proc gives it, so that a loaded machine's turns do not count), one line and no traceback;
    the --output file, where written, is the best model so far, status 'interrupted'."""
    import signal
    import subprocess
    import sys
    import time

    family = INTERRUPTED_SOLVES[solver][1]
    K, Y, _ = small_problem(family, seed=1, n=80, n_kernels=6)
    problem, out = tmp_path / "p.npz", tmp_path / "r.npz"
    np.savez(problem, K=K, **({"Y": Y} if family.startswith("mlmkl") else {"y": Y}))
    argv = [sys.executable, "-m", "kernelfuse", "solve", str(problem), "--solver", solver,
            *INTERRUPTED_SOLVES[solver], "--tol", "1e-15", "--max-iter", "100000000",
            "--output", str(out)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=interruptible)
    try:
        line = process.stderr.readline()  # the first progress line: the solve has started
        time.sleep(delay)
        ended_before = process.poll() is not None
        reaped, cpu_sent = children_cpu_seconds(), cpu_seconds(process.pid)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)  # no hang: an answer within 30 s of wall time
        served = None if cpu_sent is None else children_cpu_seconds() - reaped - cpu_sent
    finally:
        process.kill()
    assert "Traceback" not in line + stderr, (line + stderr)[-2000:]
    if ended_before:  # finished (or failed cleanly) before the signal: nothing to serve
        assert process.returncode in (0, 1, 2)
        return
    event(f"exit {process.returncode}")
    assert process.returncode == 130 and (served is None or served <= 1.5), (process.returncode, served,
                                                                            stderr[-500:])
    if out.exists():  # absent only when the interrupt came before the first model
        assert Result.load(out).status == "interrupted"
