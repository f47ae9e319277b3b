"""The ``kernelfuse`` command as a user runs it: files in, files out, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import breast_cancer_kernels
from kernelfuse import Problem
from kernelfuse.frontends.cli import main
from kernelfuse.problem import objectives

KERNELFUSE = Path(sys.executable).with_name("kernelfuse")


@pytest.fixture
def problem_file(tmp_path):
    K, y = breast_cancer_kernels(n=40, m=3, seed=0)
    path = tmp_path / "problem.npz"
    np.savez(path, K=K, y=y, groups=np.array([0, 0, 1]))
    return path


def run(*args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kernelfuse"] if module else [str(KERNELFUSE)]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module", [False, True])
def test_solve_writes_a_result_that_reproduces_its_objective(problem_file, tmp_path, module):
    out = tmp_path / "result.npz"
    done = run("solve", str(problem_file), "--solver", "cvxpy", "--family", "vskl",
               "--C", "2", "--q", "inf", "--output", str(out), module=module)
    assert done.returncode == 0, done.stderr
    assert "objective" in done.stdout and "gap" in done.stdout
    with np.load(out) as result:
        for key in ("coef", "intercept", "kernel_weights", "objective", "dual_objective",
                    "gap", "n_iter", "time"):
            assert key in result.files, key
        data = np.load(problem_file)
        problem = Problem.create(data["K"], data["y"], "vskl", groups=data["groups"], C=2, q=np.inf)
        recomputed = objectives.evaluate(problem, result["coef"], result["intercept"])
        assert recomputed == pytest.approx(float(result["objective"]), rel=1e-10)
        assert float(result["gap"]) < 1e-6
        assert result["kernel_weights"].sum() == pytest.approx(1.0)


def test_quiet_prints_nothing(problem_file, tmp_path):
    out = tmp_path / "r.npz"
    code = main(["solve", str(problem_file), "--solver", "cvxpy", "--family", "l1_mkl",
                 "--loss", "logistic", "--C", "0.5", "--tol", "1e-8", "--output", str(out), "--quiet"])
    assert code == 0 and out.exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"K": None}, "no array 'K'"),
        ({"Y": np.ones((40, 2))}, "exactly one of 'y'"),
        ({"weights": np.ones(3)}, "unexpected array"),
        ({"K": np.full((3, 40, 40), np.nan)}, "NaN or inf"),
        ({"K": -np.eye(40)[None]}, "not positive semidefinite"),
        ({"y": np.ones(40)}, "single class"),
        ({"y": np.arange(40.0)}, r"-1 or \+1"),
    ],
)
def test_bad_problem_files_exit_2(problem_file, tmp_path, capsys, change, message):
    data = dict(np.load(problem_file))
    data.pop("groups")
    for key, value in change.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    bad = tmp_path / "bad.npz"
    np.savez(bad, **data)
    code = main(["solve", str(bad), "--solver", "cvxpy", "--family", "l1_mkl",
                 "--output", str(tmp_path / "r.npz")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelfuse: error:")
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "r.npz").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--solver", "cvxpi"], "did you mean 'cvxpy'"),
        (["--solver", "cvxpy", "--family", "l1mkl"], "did you mean 'l1_mkl'"),
        (["--solver", "cvxpy", "--family", "l1_mkl", "--loss", "hing"], "did you mean 'hinge'"),
        (["--solver", "cvxpy", "--family", "l1_mkl", "--C", "-1"], "C must be > 0"),
        (["--solver", "cvxpy", "--family", "pnorm_mkl", "--p", "3"], r"p must be in \(1, 2\]"),
        (["--solver", "cvxpy"], "solves several families"),
        (["--solver", "cvxpy", "--family", "l1_mkl", "--seed", "3"], "parameter"),
        (["--solver", "spicymkl", "--set", "growht=3"], "did you mean 'growth'"),
        (["--solver", "spicymkl", "--family", "l1_mkl", "--set", "growth=0.5"], "growth must be >= 1"),
        (["--solver", "spicymkl", "--tol", "1e-3", "--set", "tol=1e-4"], "given twice"),
        (["--solver", "average", "--family", "l1_mkl_sq", "--set", "check_psd=false"], "--check-psd"),
    ],
)
def test_bad_options_exit_2(problem_file, tmp_path, capsys, args, message):
    code = main(["solve", str(problem_file), *args, "--output", str(tmp_path / "r.npz")])
    assert code == 2
    assert __import__("re").search(message, capsys.readouterr().err)


def test_unreadable_files_exit_2(tmp_path, capsys):
    text = tmp_path / "notes.npz"
    text.write_text("not an archive")
    assert main(["solve", str(text), "--solver", "cvxpy", "--output", str(tmp_path / "r.npz")]) == 2
    assert "cannot read problem file" in capsys.readouterr().err
    assert main(["solve", str(tmp_path / "missing.npz"), "--solver", "cvxpy",
                 "--output", str(tmp_path / "r.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_usage_errors_exit_nonzero_from_the_shell(problem_file):
    done = run("solve", str(problem_file), "--solver", "cvxpy", "--C", "abc", "--output", "x.npz")
    assert done.returncode == 2 and "not a number" in done.stderr
    done = run("solve", str(problem_file), "--solver", "nope", "--family", "l1_mkl",
               "--output", "x.npz")
    assert done.returncode == 2 and "unknown solver 'nope'" in done.stderr


def test_plugins_lists_every_component():
    done = run("plugins")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["kind", "name", "distribution"]
    rows = {tuple(line.split()[:3]) for line in lines[1:]}
    for name in ("hinge", "squared-hinge", "logistic", "squared", "eps-insensitive", "crammer-singer"):
        assert ("loss", name, "kernelfuse") in rows
    assert ("recipe", "cvxpy", "kernelfuse") in rows
    assert all(len(line.split()) > 3 for line in lines[1:]), "every row has a description"


def test_plugins_recipes_show_each_solvers_parts(capsys):
    assert main(["plugins", "--recipes"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "optimizer=mirror-descent" in lines["mirror-vskl"]
    assert "oracle.svm_solver=active-set" in lines["mirror-vskl"]
    assert "oracle=label-sampler" in lines["mlmkl-sa"] and "stop='gap'" in lines["mlmkl-sa"]
    assert "optimizer=reduced-gradient, oracle=label-svms" in lines["mlmkl-simplemkl"]


def test_families_lists_all_seven(capsys):
    assert main(["families"]) == 0
    out = capsys.readouterr().out
    for name in ("l1_mkl", "l1_mkl_sq", "vskl", "pnorm_mkl", "mikl", "mlmkl_sum", "mlmkl_max"):
        assert name in out


def test_example_problem_file_solves_from_the_shell(tmp_path):
    from helpers import REPO

    problem = tmp_path / "bc.npz"
    made = subprocess.run([sys.executable, str(REPO / "examples" / "breast_cancer_problem.py"),
                           str(problem), "60"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    done = run("solve", str(problem), "--solver", "mirror-vskl", "--family", "vskl", "--q", "2",
               "--C", "50", "--output", str(tmp_path / "r.npz"))
    assert done.returncode == 0, done.stderr
    assert float(np.load(tmp_path / "r.npz")["gap"]) <= 1e-6


def test_set_passes_solver_and_part_parameters(problem_file, tmp_path, capsys):
    common = ["solve", str(problem_file), "--solver", "spicymkl", "--family", "l1_mkl", "--loss",
              "hinge", "--C", "0.1", "--quiet", "--output"]
    code = main([*common, str(tmp_path / "slow.npz"), "--set", "gamma0=1", "--set", "growth=3",
                 "--set", "newton_rtol=0"])
    assert code == 0, capsys.readouterr().err
    assert main([*common, str(tmp_path / "fast.npz")]) == 0
    slow, fast = np.load(tmp_path / "slow.npz"), np.load(tmp_path / "fast.npz")
    assert int(slow["n_iter"]) > int(fast["n_iter"])
    assert float(slow["objective"]) == pytest.approx(float(fast["objective"]), rel=1e-6)


def test_set_without_a_value_is_a_usage_error(problem_file, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", str(problem_file), "--solver", "spicymkl", "--set", "growth",
              "--output", str(tmp_path / "r.npz")])
    assert exit_info.value.code == 2
    assert "expected NAME=VALUE, got 'growth'" in capsys.readouterr().err


def test_kernels_option_memory_maps_a_float32_stack(tmp_path, capsys, monkeypatch):
    """``--kernels K.npy``: the stack is memory-mapped (never read whole), float32 kept, and the
    result is the model of its values."""
    import kernelfuse.assembly.api

    K, y = breast_cancer_kernels(n=40, m=3, seed=0)
    K32 = K.astype(np.float32)
    np.save(tmp_path / "K.npy", K32)
    np.savez(tmp_path / "targets.npz", y=y)
    seen = {}
    solve = kernelfuse.assembly.api.solve

    def spy(K, *args, **kwargs):
        seen["K"] = K
        return solve(K, *args, **kwargs)

    monkeypatch.setattr(kernelfuse.assembly.api, "solve", spy)
    out = tmp_path / "r.npz"
    code = main(["solve", str(tmp_path / "targets.npz"), "--kernels", str(tmp_path / "K.npy"),
                 "--solver", "spicymkl", "--family", "l1_mkl", "--C", "0.5", "--output", str(out), "--quiet"])
    assert code == 0
    assert isinstance(seen["K"], np.memmap) and seen["K"].dtype == np.float32
    with np.load(out) as result:
        problem = Problem.create(K32.astype(np.float64), y, "l1_mkl", C=0.5)
        assert objectives.evaluate(problem, result["coef"], result["intercept"]) == \
            pytest.approx(float(result["objective"]), rel=1e-8)
    for args, message in (
        ([str(tmp_path / "targets.npz"), "--kernels", str(tmp_path / "targets.npz")], "not a .npy file"),
        ([str(tmp_path / "targets.npz"), "--kernels", str(tmp_path / "missing.npy")], "does not exist"),
    ):
        assert main(["solve", *args, "--solver", "spicymkl", "--output", str(out)]) == 2
        assert message in capsys.readouterr().err
    np.savez(tmp_path / "both.npz", K=K, y=y)
    assert main(["solve", str(tmp_path / "both.npz"), "--kernels", str(tmp_path / "K.npy"),
                 "--solver", "spicymkl", "--output", str(out)]) == 2
    assert "give the kernels once" in capsys.readouterr().err
    np.save(tmp_path / "ints.npy", np.ones((1, 40, 40), dtype=np.int64))
    assert main(["solve", str(tmp_path / "targets.npz"), "--kernels", str(tmp_path / "ints.npy"),
                 "--solver", "spicymkl", "--output", str(out)]) == 2
    assert "must be float64 or float32" in capsys.readouterr().err


def test_check_psd_option(problem_file, tmp_path, capsys):
    """--check-psd auto (the default) refuses an indefinite kernel, false takes it as given,
    anything else is a usage error."""
    data = dict(np.load(problem_file))
    data["K"][1] -= 2.0 * np.eye(data["K"].shape[1]) * data["K"][1].max()
    bad = tmp_path / "bad.npz"
    np.savez(bad, **data)
    solve = ["solve", str(bad), "--solver", "average", "--family", "l1_mkl_sq", "--quiet",
             "--output", str(tmp_path / "r.npz")]
    assert main(solve) == 2
    assert "kernel 1 of K is not positive semidefinite" in capsys.readouterr().err
    assert main(solve + ["--check-psd", "true"]) == 2
    assert main(solve + ["--check-psd", "false"]) == 0
    with pytest.raises(SystemExit) as exit_:
        main(solve + ["--check-psd", "maybe"])
    assert exit_.value.code == 2
    assert "--check-psd must be auto, true or false, got 'maybe'" in capsys.readouterr().err


def test_cvxpy_time_limit_ends_with_status_time_limit(tmp_path, capsys):
    """Issue 24 item 8: cvxpy's compilation alone outlasts the limit (N = 300, M = 10, over
    1.5 s on a 2-core Intel Xeon); the call ends within issue 23's slack, exit status 0,
    with the zero model written and its status."""
    import time

    from kernelfuse.assembly.result import Result
    from kernelfuse.testing import small_problem

    K, y, _ = small_problem("l1_mkl", seed=0, n=300, n_kernels=10)
    path, out = tmp_path / "big.npz", tmp_path / "r.npz"
    np.savez(path, K=K, y=y)
    limit = 0.2
    start = time.perf_counter()
    code = main(["solve", str(path), "--solver", "cvxpy", "--family", "l1_mkl", "--check-psd", "false",
                 "--time-limit", str(limit), "--output", str(out)])
    assert time.perf_counter() - start <= 1.1 * limit + 1.0
    assert code == 0 and "time_limit" in capsys.readouterr().out
    assert Result.load(out).status == "time_limit"


def test_version_prints_the_installed_versions_on_one_line():
    import importlib.metadata

    done = run("--version")
    assert done.returncode == 0 and done.stdout.count("\n") == 1
    assert done.stdout.startswith(f"kernelfuse {importlib.metadata.version('kernelfuse')} (Python ")
    assert f"scikit-learn {importlib.metadata.version('scikit-learn')})" in done.stdout


def test_every_option_of_every_command_has_help_text():
    """``kernelfuse COMMAND --help`` explains every argument (the CLI reference is generated
    from these texts)."""
    import argparse

    from kernelfuse.frontends.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) >= {"solve", "plugins", "demo", "fit", "predict", "families"}
    for name, command in commands.choices.items():
        for action in command._actions:
            assert action.help and action.help.strip(), f"kernelfuse {name} {action.option_strings or action.dest}"
