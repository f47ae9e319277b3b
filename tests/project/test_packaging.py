"""The package list, and a wheel built and installed into a fresh environment."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from helpers import REPO


def _contrib_names() -> set[str]:
    """The distribution names of the plugin packages in contrib/."""
    tomllib = pytest.importorskip("tomllib")
    names = set()
    for path in (REPO / "contrib").glob("*/pyproject.toml"):
        with open(path, "rb") as handle:
            names.add(tomllib.load(handle)["project"]["name"])
    return names


def declared_packages() -> set[str]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    with open(REPO / "pyproject.toml", "rb") as handle:
        return set(tomllib.load(handle)["tool"]["setuptools"]["packages"])


def test_every_subpackage_is_declared():
    """A package missing from pyproject imports editable but is absent from the wheel."""
    found = set()
    for root, prefix in (("core", "kernelfuse"), ("plugins", "kernelfuse.plugins")):
        for init in (REPO / root).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / root).parts
            if "__pycache__" not in parts:
                found.add(".".join((prefix, *parts)))
    assert found == declared_packages()


#: Distributions imported under another name; and the optional ones, each imported only where
#: its extra or its array type is in use (matplotlib: the plot extra; torch: a PyTorch stack;
#: dask, distributed and pyarrow: the dask extra, imported by a solve on a Dask cluster only).
IMPORT_NAMES = {"scikit-learn": "sklearn"}
OPTIONAL_IMPORTS = {"matplotlib", "torch", "dask", "distributed", "pyarrow"}


def test_every_library_imported_is_a_declared_dependency():
    """A module core or the plugins import (at the top or in a function) is a dependency of
    pyproject.toml, or an optional one named above: joblib came with scikit-learn undeclared."""
    import ast
    import re

    tomllib = pytest.importorskip("tomllib")
    with open(REPO / "pyproject.toml", "rb") as handle:
        requirements = tomllib.load(handle)["project"]["dependencies"]
    names = {re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower() for req in requirements}
    declared = {IMPORT_NAMES.get(name, name.replace("-", "_")) for name in names}
    imported = set()
    for root in ("core", "plugins"):
        for path in (REPO / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"kernelfuse"}
    assert "joblib" in third_party
    assert third_party - OPTIONAL_IMPORTS <= declared, third_party - OPTIONAL_IMPORTS - declared


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is new in Python 3.11")
def test_the_folder_holding_a_clone_named_kernelfuse_and_its_documented_fix(tmp_path):
    """docs/install.md: Python started beside a clone named ``kernelfuse`` imports the clone as an
    empty namespace package (editable installs); ``-P`` keeps the folder off ``sys.path``."""
    (tmp_path / "kernelfuse").symlink_to(REPO, target_is_directory=True)
    code = "import kernelfuse; print(getattr(kernelfuse, '__file__', None), hasattr(kernelfuse, 'solve'))"
    editable = subprocess.run([sys.executable, "-c", "import kernelfuse; print(kernelfuse.__file__)"],
                              capture_output=True, text=True, check=True).stdout
    beside = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    if Path(editable.strip()).is_relative_to(REPO):  # an editable install: the trap
        assert beside.stdout.split() == ["None", "False"]
    fixed = subprocess.run([sys.executable, "-P", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                           check=True)
    assert fixed.stdout.split()[1] == "True"


def test_wheel_installs_and_works_in_a_fresh_environment(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(wheels), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    (wheel,) = wheels.glob("kernelfuse-*.whl")
    # PEP 561 markers: type checkers read the installed package's hints.
    assert {"kernelfuse/py.typed", "kernelfuse/plugins/py.typed"} <= set(zipfile.ZipFile(wheel).namelist())
    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    target = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(target), str(wheel)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    # Dependencies come from the test environment's site-packages, appended after the
    # fresh one (a .pth line, whose own .pth files -- the editable install -- stay inactive).
    (target / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = (
        "import kernelfuse, kernelfuse.plugins.losses, numpy as np\n"
        "from kernelfuse.parts.registry import get_registry\n"
        f"assert kernelfuse.__file__.startswith({str(target)!r}), kernelfuse.__file__\n"
        "r = get_registry()\n"
        f"own = {{'kernelfuse', *{sorted(_contrib_names())!r}}}  # + contrib/\n"
        "assert {e.provider for e in r} <= own, {e.provider for e in r}\n"
        "assert {e.provider for e in r if e.kind == 'recipe' and e.name == 'cvxpy'} == {'kernelfuse'}\n"
        "assert 'cvxpy' in r.names('recipe') and 'logistic' in r.names('loss')\n"
        "print(kernelfuse.__version__)\n"
    )
    done = subprocess.run([str(python), "-W", "error", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.1.0"
    cli = subprocess.run([str(python), "-m", "kernelfuse", "plugins", "--kind", "recipe"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0 and "cvxpy" in cli.stdout, cli.stderr


def test_make_demo_installs_only_what_the_demo_needs(tmp_path):
    """``make demo`` on a fresh clone: a virtual environment, the plot extra, the demo; not the
    test tools (``make -n``: printed, not run)."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv_dir = tmp_path / "venv"
    # --no-print-directory: under `make test` this make is a sub-make, which would print its directory
    done = subprocess.run(["make", "--no-print-directory", "-n", "-B", "demo", f"VENV={venv_dir}"], cwd=REPO,
                          capture_output=True, text=True, check=True)
    installs = [line for line in done.stdout.splitlines() if "pip install" in line and " -e " in line]
    assert installs == [f"{venv_dir}/bin/python -m pip install --quiet -e '.[plot]'"]
    assert done.stdout.splitlines()[-1] == f"{venv_dir}/bin/kernelfuse demo --output demo-output"
