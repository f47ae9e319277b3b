"""Every parameter is checked by name (issue 24, finding 4) and plugins cannot break a solve or the
registry (findings 3 and 10): each refusal a ValidationError naming the parameter, the value
and what is accepted, before any work."""

from __future__ import annotations

import re
import types
import warnings

import numpy as np
import pytest

import kernelfuse
from kernelfuse import ValidationError
from kernelfuse.frontends.cli import main
from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.parts.registry import PluginWarning, Registry, get_registry, load_registry
from kernelfuse.testing import small_problem
from kernelfuse.validation import positive, random_seed, seconds

#: (solver, family, parameters, the message expected): every one refused before any iteration.
SOLVE_CASES = [
    ("spicymkl", "l1_mkl", {"max_iter": True}, r"max_iter must be a non-negative integer, got True"),
    ("spicymkl", "l1_mkl", {"max_iter": np.inf}, r"max_iter must be a non-negative integer, got inf"),
    ("spicymkl", "l1_mkl", {"max_iter": np.nan}, r"max_iter must be a non-negative integer, got nan"),
    ("spicymkl", "l1_mkl", {"max_iter": 3.0}, r"max_iter must be a non-negative integer, got 3.0"),
    ("simplemkl", "l1_mkl_sq", {"tol": np.inf}, r"tol must be > 0 and finite, got inf"),
    ("spicymkl", "l1_mkl", {"newton_tol": np.inf}, r"newton_tol must be > 0 and finite, got inf"),
    ("simplemkl", "l1_mkl_sq", {"time_limit": -1.0}, r"time_limit must be > 0 seconds \(inf: no limit\)"),
    ("simplemkl", "l1_mkl_sq", {"time_limit": np.nan}, r"time_limit must be > 0 seconds"),
    ("obscure", "pnorm_mkl", {"seed": 2.5}, r"seed must be a non-negative integer, or None .*got 2.5"),
    ("obscure", "pnorm_mkl", {"seed": "abc"}, r"seed must be a non-negative integer.*got 'abc'"),
    ("simplemkl", "l1_mkl_sq", {"loss": object()}, r"loss must be a registered loss name, a Loss object"),
    ("simplemkl", "l1_mkl_sq", {"registry": "x"}, r"registry must be a kernelfuse Registry or None, got 'x'"),
    ("spicymkl", "l1_mkl", {"growth": "abc"}, r"growth must be a number \(>= 1 and finite.*got 'abc'"),
    ("simplemkl", "l1_mkl_sq", {"C": True}, r"parameter C must be a number \(> 0 and finite\), got True"),
    ("cvxpy", "l1_mkl_sq", {"verbose": 1}, r"verbose must be True or False, got 1"),
    ("mirror-vskl", "l1_mkl_sq", {"A": -1.0}, r"A must be > 0 and finite, got -1.0"),
    ("mikl-forward-backward", "mikl", {"accelerated": "yes"}, r"accelerated must be True or False, got 'yes'"),
    ("mikl", "mikl", {"working_set": "yes"}, r"working_set must be True or False, got 'yes'"),
]


@pytest.mark.parametrize("solver, family, params, message", SOLVE_CASES)
def test_solve_refuses_each_bad_parameter_by_name(solver, family, params, message):
    K, y, extra = small_problem(family, seed=0, n=12, n_kernels=2)
    with pytest.raises(ValidationError, match=message):
        kernelfuse.solve(K, y, solver=solver, family=family, **extra, **params)


def test_time_limit_inf_is_no_limit_and_small_ints_are_numbers():
    """inf is time_limit's documented default ("no limit"); an int tolerance is a number."""
    K, y, _ = small_problem("l1_mkl_sq", seed=0, n=12, n_kernels=2)
    result = kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", time_limit=np.inf, tol=1e-6)
    assert result.status == "converged" and result.gap <= 1e-6
    assert seconds.check("time_limit", np.inf) == np.inf
    assert positive.check("tol", 1) == 1.0 and isinstance(positive.check("tol", np.float32(0.5)), float)
    assert random_seed.check("seed", None) is None and random_seed.check("seed", np.int64(3)) == 3


def test_kernel_parameters_are_checked_in_their_domain():
    registry = get_registry()
    with pytest.raises(ValidationError, match=r"width must be > 0 and finite, got -2.0"):
        registry.create("kernel", "gaussian", width=-2.0)
    with pytest.raises(ValidationError, match=r"degree must be > 0 and finite, got -2"):
        registry.create("kernel", "polynomial", degree=-2)
    with pytest.raises(ValidationError, match=r"width must be a number > 0 or 'median', got '1'"):
        registry.create("kernel", "laplacian", width="1")
    with pytest.raises(ValidationError, match=r"widths\[0\] must be > 0 and finite, got -1.0"):
        kernel_grid(2, widths=[-1.0, 0.0])
    with pytest.raises(ValidationError, match=r"widths\[1\] must be > 0 and finite, got 0.0"):
        kernel_grid(2, widths=[1.0, 0.0])
    with pytest.raises(ValidationError, match=r"degrees\[0\] must be a positive integer, got 1.5"):
        kernel_grid(2, degrees=[1.5, -2])
    with pytest.raises(ValidationError, match=r"degrees\[1\] must be a positive integer, got -2"):
        kernel_grid(2, degrees=[1, -2])
    with pytest.raises(ValidationError, match=r"widths must be a list of numbers, got 5"):
        kernel_grid(2, widths=5)
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValidationError, match=r"kernels must be 'grid', 'precomputed' or a non-empty "
                                              r"list of KernelSpec, got 5"):
        MKLClassifier(kernels=5).fit(X, X[:, 0] > 0)


@pytest.mark.parametrize("params, message", [
    ({"random_state": "x"}, r"random_state must be a non-negative integer, or None .*got 'x'"),
    ({"random_state": 1.5}, r"random_state must be a non-negative integer"),
    ({"memory_budget": "lots"}, r"memory_budget must be a positive integer, or None .*got 'lots'"),
    ({"solver_params": "abc"}, r"solver_params must be a dict of solver parameters by name .*got 'abc'"),
    ({"C": True}, r"parameter C must be a number \(> 0 and finite\), got True"),
    ({"tol": np.inf}, r"tol must be > 0 and finite, or None .*got inf"),
    ({"max_iter": 2.0}, r"max_iter must be a non-negative integer, or None .*got 2.0"),
    ({"time_limit": 0}, r"time_limit must be > 0 seconds \(inf: no limit\), or None .*got 0"),
    ({"standardize": "yes"}, r"standardize must be 'auto', True or False, got 'yes'"),
])
def test_estimators_check_their_settings_at_fit(params, message):
    model = MKLClassifier(kernels="precomputed", **params)  # scikit-learn: nothing checked here
    K, y, _ = small_problem("l1_mkl", seed=0, n=12, n_kernels=2)
    with pytest.raises(ValidationError, match=message):
        model.fit(np.moveaxis(K, 0, 2), y)


CONFIG = """
[data]
train = "train.csv"
target = "y"
[kernels]
grid = true
widths = {widths}
degrees = [1]
[model]
C = {C}
max_iter = 20
{model}
[output]
model = {output}
"""


@pytest.mark.parametrize("change, message", [
    ({"C": "true"}, r"parameter C must be a number \(> 0 and finite\), got True"),
    ({"model": 'random_state = "x"'}, r"random_state must be a non-negative integer.*got 'x'"),
    ({"widths": "[-1.0, 0.0]"}, r"widths\[0\] must be > 0 and finite, got -1.0"),
    ({"model": 'memory_budget = "lots"'}, r"memory_budget must be a positive integer.*got 'lots'"),
    ({"model": 'solver_params = "abc"'}, r"\[model\] of .*: solver_params must be a table, got 'abc'"),
    ({"output": "5"}, r"\[output\] of .*: model must be a string, got 5"),
    ({"widths": "2.0"}, r"\[kernels\] of .*: widths must be an array, got 2.0"),
])
def test_toml_values_are_typed(tmp_path, capsys, change, message):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    rows = ["a,b,y"] + [f"{a:.5f},{b:.5f},{int(a > 0)}" for a, b in X]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    fields = {"widths": "[1.0]", "C": "1.0", "model": "", "output": '"m.npz"', **change}
    (tmp_path / "c.toml").write_text(CONFIG.format(**fields))
    assert main(["fit", str(tmp_path / "c.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("setting, message", [
    ("max_iter=inf", r"max_iter must be a non-negative integer, got inf"),
    ("max_iter=true", r"max_iter must be a non-negative integer, got True"),
    ("growth=abc", r"growth must be a number \(>= 1 and finite.*got 'abc'"),
    ("solver=x", r"--set solver=x: solver is not a solver parameter; it comes from its own option, --solver"),
    ("family=vskl", r"family is not a solver parameter; it comes from its own option, --family"),
    ("registry=x", r"registry is not a solver parameter"),
    ("seed=2.5", r"seed must be a non-negative integer"),
])
def test_cli_set_values_are_checked_by_name(tmp_path, capsys, setting, message):
    K, y, _ = small_problem("l1_mkl", seed=0, n=12, n_kernels=2)
    np.savez(tmp_path / "p.npz", K=K, y=y)
    solver = "obscure" if setting.startswith("seed") else "spicymkl"
    family = ["--family", "pnorm_mkl"] if solver == "obscure" else []
    code = main(["solve", str(tmp_path / "p.npz"), "--solver", solver, *family, "--set", setting,
                 "--output", str(tmp_path / "r.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_cli_set_nan_names_the_parameter(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["solve", "p.npz", "--solver", "spicymkl", "--set", "max_iter=nan", "--output", "r.npz"])
    assert exit_.value.code == 2
    assert "NaN is not a valid value of max_iter" in capsys.readouterr().err


# ---------------------------------------------------------------- plugins (findings 3 and 10)
def _listener(calls: list, fail_at: int | None = None) -> types.SimpleNamespace:
    def hook(row):  # noqa: ANN001, ANN202 - a plugin's hook as a plugin writes it
        calls.append(row)
        if fail_at is not None and len(calls) >= fail_at:
            raise RuntimeError("disk full")
    return types.SimpleNamespace(kernelfuse_iteration=hookimpl(hook))


def test_a_failing_listener_is_reported_once_and_dropped_the_solve_finishes():
    registry = load_registry()
    broken, healthy = [], []
    registry.load_plugin(_listener(broken, fail_at=1), provider="csv-logger")
    registry.load_plugin(_listener(healthy), provider="good-logger")
    K, y, _ = small_problem("l1_mkl_sq", seed=0, n=16, n_kernels=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", registry=registry)
    reports = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    assert len(reports) == 1 and "csv-logger" in reports[0] and "RuntimeError: disk full" in reports[0]
    assert result.status == "converged" and result.gap <= 1e-6
    assert len(result.history) >= 2
    assert len(broken) == 1  # called until it failed, then never again in this solve
    assert healthy == list(result.history)  # the others hear every row
    # A new solve calls it again (and reports it again).
    with pytest.warns(PluginWarning, match="csv-logger"):
        kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", registry=registry)
    assert len(broken) == 2


def test_a_registration_that_fails_midway_keeps_nothing():
    registry = load_registry()
    before = list(registry)

    def register(registry):  # noqa: ANN001, ANN202
        registry.add("loss", "half-registered", object)
        registry.add("sampler", "also-half", object)
        raise RuntimeError("missing optional dependency")

    calls: list = []
    plugin = types.SimpleNamespace(kernelfuse_register=hookimpl(register),
                                   kernelfuse_iteration=_listener(calls).kernelfuse_iteration)
    with pytest.raises(RuntimeError, match="missing optional dependency"):
        registry.load_plugin(plugin, provider="halfplug")
    assert list(registry) == before
    assert "half-registered" not in registry.names("loss")
    K, y, _ = small_problem("l1_mkl_sq", seed=0, n=12, n_kernels=2)
    kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", registry=registry)
    assert calls == []  # its listener was not loaded either


def test_empty_and_look_alike_names_are_refused_naming_the_existing_one():
    registry = Registry()
    for empty in ("", "   ", "-_"):
        with pytest.raises(ValidationError, match="name needs a letter or digit"):
            registry.add("recipe", empty, object)
    with pytest.raises(ValidationError, match="name must be a string, got 5"):
        registry.add("recipe", 5, object)  # type: ignore[arg-type]
    registry.add("recipe", "spicymkl", object)
    for look_alike in ("spicy_mkl", "Spicy-MKL", "spicy mkl"):
        with pytest.warns(PluginWarning, match=r"ignored: it looks like 'spicymkl'"):
            registry.add("recipe", look_alike, dict)
    assert registry.names("recipe") == ["spicymkl"]
    assert registry.get("recipe", "spicymkl").factory is object
    # The installed registry holds no look-alikes.
    for kind in ("loss", "recipe", "kernel", "optimizer", "oracle", "prox"):
        keys = ["".join(c for c in name if c not in "-_ ") for name in get_registry().names(kind)]
        assert len(keys) == len(set(keys)), kind
