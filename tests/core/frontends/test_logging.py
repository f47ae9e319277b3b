"""Progress through logging: quiet by default in the library, verbose mapped to levels, on in the CLI."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.datasets import load_iris

import kernelfuse
from helpers import breast_cancer_kernels
from kernelfuse.errors import ValidationError
from kernelfuse.frontends.cli import main
from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.runtime.logs import VERBOSE_LEVELS, log_to_stderr, verbose_level


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y, kernel_grid(4, widths=(1.0,), degrees=(1,))


def _messages(caplog, level):
    return [r.getMessage() for r in caplog.records if r.name.startswith("kernelfuse") and r.levelno == level]


def test_the_library_prints_nothing_by_default(iris, capsys):
    X, y, specs = iris
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("kernelfuse").handlers)
    MKLClassifier(kernels=specs).fit(X, y)
    kernelfuse.solve(*breast_cancer_kernels(30, 2, 0), solver="cvxpy", family="l1_mkl_sq")
    assert capsys.readouterr() == ("", "")


def test_fit_messages_at_their_levels(iris, caplog):
    """INFO: kernels built (count, bytes), each solve's start and end, the one-vs-rest class,
    the first iteration lines; DEBUG: every iteration."""
    X, y, specs = iris
    caplog.set_level(logging.DEBUG, logger="kernelfuse")
    clf = MKLClassifier(kernels=specs).fit(X, y)
    info = _messages(caplog, logging.INFO)
    assert "building 10 kernels on 150 samples (1.72 MiB, in memory)" in info
    assert any(m.startswith("built 10 kernels in ") for m in info)
    assert [m for m in info if m.startswith("one-vs-rest")] == [
        "one-vs-rest: class 0 (1 of 3)", "one-vs-rest: class 1 (2 of 3)", "one-vs-rest: class 2 (3 of 3)"]
    assert sum(m == "solver 'spicymkl' on l1_mkl: N = 150, M = 10: started" for m in info) == 3
    assert sum(m.startswith("solver 'spicymkl': converged after ") for m in info) == 3
    assert any(m.startswith("iter     1  objective ") for m in info)
    iterations = [m for m in info + _messages(caplog, logging.DEBUG) if m.startswith("iter ")]
    assert len(iterations) == sum(len(r.history) for r in clf.results_)  # each row of each history


def test_cvxpy_solve_start_and_end(caplog):
    caplog.set_level(logging.INFO, logger="kernelfuse")
    result = kernelfuse.solve(*breast_cancer_kernels(30, 2, 0), solver="cvxpy", family="l1_mkl_sq")
    info = _messages(caplog, logging.INFO)
    assert info[0] == "solver 'cvxpy' on l1_mkl_sq: N = 30, M = 2: started"
    assert info[-1].startswith(f"solver 'cvxpy': converged after {result.n_iter} iterations, ")


@pytest.mark.parametrize("verbose", [0, False, 1, True, 2])
def test_verbose_levels_on_stderr(iris, capsys, verbose):
    X, y, specs = iris
    MKLClassifier(kernels=specs, verbose=verbose).fit(X[:100], y[:100])
    lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith("kernelfuse: ") for line in lines)
    if verbose_level(verbose) == logging.WARNING:
        assert lines == []
    else:
        assert "kernelfuse: building 10 kernels on 100 samples (781.25 KiB, in memory)" in lines
    assert logging.getLogger("kernelfuse").level == logging.NOTSET  # restored after the fit


def test_verbose_refuses_other_values(iris):
    X, y, specs = iris
    assert VERBOSE_LEVELS == {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}
    for bad in (3, -1, "yes", 1.5):
        with pytest.raises(ValidationError, match=r"verbose must be 0, 1 or 2"):
            MKLClassifier(kernels=specs, verbose=bad).fit(X, y)


def test_nested_stderr_logging_writes_each_line_once(capsys):
    logger = logging.getLogger("kernelfuse.test")
    with log_to_stderr(logging.INFO), log_to_stderr(logging.DEBUG):
        logger.debug("inner")
    with log_to_stderr(logging.INFO):
        logger.info("outer")
        logger.debug("hidden")
    assert capsys.readouterr().err.splitlines() == ["kernelfuse: inner", "kernelfuse: outer"]


def test_the_cli_logs_progress_to_stderr_unless_quiet(tmp_path, capsys):
    K, y = breast_cancer_kernels(n=40, m=3, seed=0)
    np.savez(tmp_path / "problem.npz", K=K, y=y)
    command = ["solve", str(tmp_path / "problem.npz"), "--solver", "spicymkl", "--C", "0.5",
               "--output", str(tmp_path / "r.npz")]
    assert main(command) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "kernelfuse: solver 'spicymkl' on l1_mkl: N = 40, M = 3: started"
    assert any(line.startswith("kernelfuse: iter     1  objective") for line in err)
    assert err[-1].startswith("kernelfuse: solver 'spicymkl': converged after ")
    assert main([*command, "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
