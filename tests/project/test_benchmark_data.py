"""The benchmarks on a fresh clone: a missing data set is skipped with a line saying how to get
it, and peers.py goes on with scikit-learn's bundled set (no benchmark runs here)."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from helpers import REPO


@pytest.fixture
def benchmarks(monkeypatch, tmp_path):
    """``common`` and ``peers`` as the scripts import them, with ``../shared`` absent."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    for name in ("common", "peers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    common, peers = importlib.import_module("common"), importlib.import_module("peers")
    monkeypatch.setattr(common, "DATA_DIR", tmp_path / "shared" / "data")
    return common, peers


def test_a_missing_set_says_how_to_get_it(benchmarks):
    common, _ = benchmarks
    line = common.missing_data("sonar")
    assert "sonar: skipped" in line and "shared/data" in line and "Sonar, Mines vs. Rocks" in line
    with pytest.raises(common.DataUnavailable, match="liver: skipped"):
        common.uci_split("liver")
    assert common.missing_data("breast-cancer") is None  # scikit-learn ships it
    X, y, columns = common.load_uci("breast-cancer")
    assert X.shape == (569, 30) and set(np.unique(y)) == {-1.0, 1.0} and len(columns) == 30


def test_peers_goes_on_with_what_it_has(benchmarks, capsys):
    common, peers = benchmarks
    assert peers.available_sets(peers.CONFIGS["quick"]) == ["breast-cancer"]
    err = capsys.readouterr().err
    assert "liver: skipped" in err and "sonar: skipped" in err and "breast-cancer instead" in err
    (common.DATA_DIR / "sonar").mkdir(parents=True)  # one set there: it runs alone
    assert peers.available_sets(peers.CONFIGS["quick"]) == ["sonar"]
