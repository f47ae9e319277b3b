"""The gallery's scripts run: every examples/plot_*.py, as `make docs` runs it.

Each script checks its own results (certified gaps, statuses, a solver
against the cvxpy reference's certified interval) with asserts; here each
must also draw the figure its gallery page shows.
"""

from __future__ import annotations

import runpy

import pytest

from helpers import REPO

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

SCRIPTS = sorted((REPO / "examples").glob("plot_*.py"))


def test_the_gallery_has_its_examples():
    assert len(SCRIPTS) >= 8, [s.name for s in SCRIPTS]
    for script in SCRIPTS:
        docstring = script.read_text().split('"""')[1]
        assert docstring.lstrip("\n").startswith("# "), f"{script.name}: the gallery needs a '# title' first"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.stem)
def test_example_runs_and_draws(script):
    plt.close("all")
    runpy.run_path(str(script), run_name="__main__")
    assert plt.get_fignums(), f"{script.name} drew no figure"
    plt.close("all")
