"""Files kernelfuse writes (issue 24, findings 1, 2 and 5): atomic, at exactly the path given,
refused before any work when they cannot be written; the CLI ends every user error, OS error
and interrupt in one line with the exit status docs/cli.md gives."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernelfuse
from helpers import breast_cancer_kernels, interruptible
from kernelfuse.assembly.result import Result, roundoff
from kernelfuse.errors import FileWriteError, ValidationError
from kernelfuse.frontends.cli import main
from kernelfuse.runtime import files
from kernelfuse.runtime.files import atomic_write, check_output_path

TESTS = Path(__file__).resolve().parents[2]
KERNELFUSE = Path(sys.executable).with_name("kernelfuse")
CONFIG = """
[data]
train = "{train}"
target = "y"
[kernels]
grid = true
widths = [1.0]
degrees = [1]
[model]
C = 0.1
{output}
"""


@pytest.fixture(scope="module")
def result() -> Result:
    K, y = breast_cancer_kernels(n=40, m=3, seed=0)
    return kernelfuse.solve(K, y, solver="simplemkl", family="l1_mkl_sq", C=1.0, tol=1e-4)


@pytest.fixture
def problem_file(tmp_path):
    K, y = breast_cancer_kernels(n=40, m=3, seed=0)
    path = tmp_path / "problem.npz"
    np.savez(path, K=K, y=y)
    return path


@pytest.fixture
def workdir(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > X[:, 1], "yes", "no")
    lines = ["a,b,y"] + [f"{r[0]:.6f},{r[1]:.6f},{t}" for r, t in zip(X, y)]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def config(workdir: Path, train: str = "train.csv", output: str = "") -> str:
    path = workdir / "config.toml"
    path.write_text(CONFIG.format(train=train, output=output))
    return str(path)


def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any solve or fit from here on fails the test: refusals must come first."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the output path was checked")

    monkeypatch.setattr("kernelfuse.assembly.api.solve", refuse)
    monkeypatch.setattr("kernelfuse.frontends.estimators.MKLClassifier.fit", refuse)


def one_line_error(capsys: pytest.CaptureFixture[str], *fragments: str) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err
    return err


# ------------------------------------------------------------------ the helper
def test_paths_are_used_exactly_as_given(result, tmp_path):
    for name in ("result.bin", "result", "r.npz"):
        result.save(tmp_path / name)
        assert Result.load(tmp_path / name).objective == result.objective
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.npz", "result", "result.bin"]


def test_a_failed_write_keeps_the_earlier_file_and_names_the_path(result, tmp_path, monkeypatch):
    path = tmp_path / "full.npz"
    result.save(path)
    before = path.read_bytes()

    def full(descriptor: int) -> None:
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(FileWriteError, match=f"cannot write {path}: File too large") as raised:
        result.save(path)
    assert isinstance(raised.value, OSError)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["full.npz"]  # no temporary left
    assert Result.load(path).objective == result.objective


def test_an_interrupt_while_writing_keeps_the_earlier_file(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    with pytest.raises(KeyboardInterrupt), atomic_write(path, "w") as handle:
        handle.write("half")
        raise KeyboardInterrupt
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["p.csv"]
    with atomic_write(path, "w") as handle:
        handle.write("new\n")
    assert path.read_text() == "new\n" and (path.stat().st_mode & 0o777) == 0o640


def test_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "r.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real" / "r.csv")
    with atomic_write(tmp_path / "link.csv", "w") as handle:
        handle.write("new\n")
    assert (tmp_path / "link.csv").is_symlink() and (tmp_path / "real" / "r.csv").read_text() == "new\n"
    assert sorted(os.listdir(tmp_path / "real")) == ["r.csv"]


@pytest.mark.parametrize("path, message", [
    ("", "path is empty"),
    (".", "is a folder"),
    ("{tmp}/missing/r.npz", "folder {tmp}/missing does not exist"),
    ("/proc/r.npz", "folder /proc does not accept new files"),
    ("/dev/null", "is not a regular file"),
])
def test_unwritable_paths_are_refused_with_the_reason(tmp_path, path, message):
    with pytest.raises(ValidationError, match=message.format(tmp=tmp_path)):
        check_output_path(path.format(tmp=tmp_path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only folders")
def test_a_read_only_folder_is_refused(tmp_path):
    os.chmod(tmp_path, 0o500)
    try:
        with pytest.raises(ValidationError, match="does not accept new files"):
            check_output_path(tmp_path / "r.npz")
        with pytest.raises(ValidationError, match=f"storage_dir {tmp_path} does not accept new files"):
            files.writable_folder(tmp_path, "storage_dir")
    finally:
        os.chmod(tmp_path, 0o700)


@pytest.mark.parametrize("folder, message", [
    ("{tmp}/missing", "storage_dir {tmp}/missing does not exist: create it, or give an existing folder"),
    ("{tmp}/file", "storage_dir {tmp}/file exists and is not a folder: give a folder"),
    ("", "the storage_dir path is empty: give a folder"),
    (3.5, r"storage_dir must be a folder path \(str or os.PathLike\), got 3.5"),
    ("/proc", "storage_dir /proc does not accept new files"),
])
def test_folders_to_write_into_are_refused_by_the_parameter_name(tmp_path, folder, message):
    (tmp_path / "file").write_text("x")
    given = folder.format(tmp=tmp_path) if isinstance(folder, str) else folder
    with pytest.raises(ValidationError, match=message.format(tmp=tmp_path)):
        files.writable_folder(given, "storage_dir")
    assert files.writable_folder(tmp_path, "storage_dir") == tmp_path
    assert sorted(os.listdir(tmp_path)) == ["file"]  # the probe file is gone


# ------------------------------------------------------------------ the CLI
def test_a_file_size_limit_leaves_the_earlier_result_intact(problem_file, tmp_path):
    """The issue's ``(ulimit -f 4; kernelfuse solve ... --output full.npz)`` over a good file."""
    out = tmp_path / "full.npz"
    args = [str(KERNELFUSE), "solve", str(problem_file), "--solver", "simplemkl", "--tol", "1e-4",
            "--output", str(out), "--quiet"]
    assert subprocess.run(args, capture_output=True, timeout=120, check=False).returncode == 0
    good = Result.load(out)
    assert out.stat().st_size > 4096

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    done = subprocess.run(args, capture_output=True, text=True, timeout=120, preexec_fn=limit,
                          check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"kernelfuse: error: cannot write {out}: File too large; "
                                   "the file there before, if any, is unchanged")
    assert Result.load(out).objective == good.objective
    assert sorted(os.listdir(tmp_path)) == ["full.npz", "problem.npz"]  # no temporary left


@pytest.mark.parametrize("output, message", [
    ("", "path is empty"),
    ("{tmp}", "is a folder"),
    ("{tmp}/missing/r.npz", "does not exist"),
    ("/proc/r.npz", "folder /proc does not accept new files"),
])
def test_solve_refuses_an_output_before_solving(problem_file, tmp_path, capsys, monkeypatch,
                                                 output, message):
    no_work(monkeypatch)
    code = main(["solve", str(problem_file), "--solver", "simplemkl",
                 "--output", output.format(tmp=tmp_path)])
    assert code == 2
    one_line_error(capsys, "kernelfuse: error:", message)


def test_solve_writes_the_path_given_and_says_so(problem_file, tmp_path, capsys):
    out = tmp_path / "result.bin"
    assert main(["solve", str(problem_file), "--solver", "simplemkl", "--tol", "1e-4",
                 "--output", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"wrote {out}")
    assert sorted(os.listdir(tmp_path)) == ["problem.npz", "result.bin"]
    assert Result.load(out).status == "converged"


def test_fit_refuses_a_missing_output_folder_before_training(workdir, capsys, monkeypatch):
    no_work(monkeypatch)
    missing = workdir / "missing" / "model.npz"
    assert main(["fit", config(workdir), "--output", str(missing)]) == 2
    one_line_error(capsys, f"cannot write model {missing}: folder {missing.parent} does not exist")
    assert main(["fit", config(workdir, output='[output]\nmodel = ""')]) == 2  # the config's folder
    one_line_error(capsys, f"model {workdir} is a folder")
    assert main(["fit", config(workdir), "--output", ""]) == 2
    one_line_error(capsys, "path is empty")


def test_a_folder_as_training_data_is_one_line(workdir, capsys):
    assert main(["fit", config(workdir, train="."), "--quiet"]) == 2
    one_line_error(capsys, f"cannot read data file {workdir}: Is a directory")
    assert main(["fit", str(workdir)]) == 2  # a folder as the config
    one_line_error(capsys, f"kernelfuse: error: {workdir}: Is a directory")


def test_predict_paths(workdir, capsys, monkeypatch):
    model = workdir / "model.bin"
    assert main(["fit", config(workdir), "--output", str(model), "--quiet"]) == 0
    assert not (workdir / "model.bin.npz").exists()
    data = str(workdir / "train.csv")
    for output, message in (("/nonexistent/p.csv", "folder /nonexistent does not exist"),
                            (".", "predictions . is a folder"), ("", "path is empty")):
        assert main(["predict", str(model), data, "--output", output]) == 2
        one_line_error(capsys, message)
    assert main(["predict", str(model), ".", "--output", str(workdir / "p.csv")]) == 2
    one_line_error(capsys, "cannot read data file .: Is a directory")
    assert main(["predict", ".", data, "--output", str(workdir / "p.csv")]) == 2
    one_line_error(capsys, "model file . is a folder, not a file")

    assert main(["predict", str(model), data, "--output", "-"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "prediction,score" and len(rows) == 41
    out = workdir / "p.out"
    assert main(["predict", str(model), data, "--output", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 40 predictions to {out}"
    assert out.read_text().splitlines() == rows


def test_demo_refuses_an_output_folder_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("kernelfuse.frontends.demo.breast_cancer_split", lambda *a: pytest.fail("work started"))
    (tmp_path / "file").write_text("")
    for output, message in ((str(tmp_path / "file"), "exists and is not a folder"),
                            ("", "path is empty"),
                            (str(tmp_path / "file" / "sub"), "cannot create output folder"),
                            ("/proc/demo", "cannot create output folder /proc/demo")):
        assert main(["demo", "--quick", "--output", output]) == 2
        one_line_error(capsys, message)


def test_benchmark_json_and_plots_are_written_atomically(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("common", TESTS.parent / "benchmarks" / "common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    path = common.write_json(tmp_path / "run.json", {"x": 1.0})
    monkeypatch.setattr(files.os, "fsync", lambda descriptor: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    with pytest.raises(FileWriteError, match="No space left on device"):
        common.write_json(path, {"x": 2.0})
    assert path.read_text() == '{\n "x": 1.0\n}\n' and os.listdir(tmp_path) == ["run.json"]
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pytest.raises(FileWriteError, match="plot.png"):
        common.save_figure(plt.figure(), tmp_path / "plot.png")
    assert os.listdir(tmp_path) == ["run.json"]


# ------------------------------------------------------------------ interrupts
def test_an_interrupt_inside_a_step_returns_the_best_model_so_far():
    K, y = breast_cancer_kernels(n=40, m=5, seed=0)  # 21 iterations to tol = 1e-12

    def interrupt(row: kernelfuse.assembly.result.Iteration) -> None:
        if row.iteration == 3:
            raise KeyboardInterrupt

    with warnings.catch_warnings():
        warnings.simplefilter("error", kernelfuse.ConvergenceWarning)  # the caller asked for it: no warning
        result = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", C=1.0, tol=1e-12,
                                  callback=interrupt)
    assert result.status == "interrupted" and result.n_iter == 2
    assert "interrupted after 2 iterations" in result.message
    assert np.isfinite(result.coef).all()
    assert result.objective == pytest.approx(min(r.objective for r in result.history), rel=1e-12)
    full = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", C=1.0, tol=1e-12)
    assert full.status == "converged"  # the optimum lies in the interrupted run's certified interval
    slack = roundoff(full.objective, 40)
    lower, upper = result.interval
    assert lower - slack <= full.objective <= upper + slack and upper > full.objective + 1e-9


def test_an_interrupted_fit_exits_130_and_writes_no_model(workdir, capsys, monkeypatch):
    """Ctrl-C during one of the fit's solves (raised from its progress line): no partial model."""
    def interrupt(self: object, row: kernelfuse.assembly.result.Iteration) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("kernelfuse.frontends.progress.ProgressPrinter.__call__", interrupt)
    assert main(["fit", config(workdir), "--output", str(workdir / "m.npz")]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "kernelfuse: interrupted" and not any("stopped with status" in line for line in err)
    assert not (workdir / "m.npz").exists()


#: Writes a problem that takes minutes (ML-MKL's worst label at C = 1e6) for the CLI.
LONG_PROBLEM = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import numpy as np
    from degenerate import degenerate_problem
    K, Y, kw = degenerate_problem("mlmkl_max", "C huge", 0, n=60, n_kernels=6)
    np.savez({path!r}, K=K, Y=Y)
""")


@pytest.mark.timeout(120)
def test_sigint_during_solve_writes_the_best_model_and_exits_130(tmp_path):
    problem, out = tmp_path / "long.npz", tmp_path / "r.npz"
    subprocess.run([sys.executable, "-c", LONG_PROBLEM.format(tests=str(TESTS), path=str(problem))],
                   check=True, timeout=60)
    process = subprocess.Popen(
        [str(KERNELFUSE), "solve", str(problem), "--solver", "mlmkl-max-md", "--C", "1e6",
         "--tol", "1e-12", "--max-iter", "1000000000", "--output", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    try:
        for line in process.stderr:  # progress: "kernelfuse: iter N ..." lines
            if line.split()[:3] == ["kernelfuse:", "iter", "3"]:
                break
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == f"kernelfuse: interrupted: wrote the best model so far to {out}"
    assert "interrupted" in stdout and stdout.strip().endswith(f"wrote {out}")
    saved = Result.load(out)
    assert saved.status == "interrupted" and saved.n_iter >= 2 and np.isfinite(saved.coef).all()


@pytest.mark.timeout(60)
def test_sigint_outside_the_outer_loop_is_one_line_and_130(tmp_path):
    """cvxpy is not on the outer loop: the interrupt ends the command, one line, status 130."""
    code = textwrap.dedent(f"""
        import os, signal, sys
        sys.argv = ["kernelfuse", "solve", {str(tmp_path / 'p.npz')!r}, "--solver", "cvxpy",
                    "--output", {str(tmp_path / 'r.npz')!r}]
        import kernelfuse.frontends.cli
        kernelfuse.frontends.cli.load_problem_file = lambda *a: os.kill(os.getpid(), signal.SIGINT)
        raise SystemExit(kernelfuse.frontends.cli.main())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=interruptible)
    assert done.returncode == 130 and done.stderr.strip() == "kernelfuse: interrupted", done.stderr
    assert not (tmp_path / "r.npz").exists()
