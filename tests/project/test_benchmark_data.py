"""The benchmarks on a fresh clone: a missing data set is fetched from OpenML where it is there
(mocked here: no download in the tests), else skipped with a line saying how to get it, and
peers.py and accuracy.py go on with scikit-learn's bundled sets (no benchmark runs here)."""

from __future__ import annotations

import importlib
import sys
from urllib.error import URLError

import numpy as np
import pytest

from helpers import REPO


def _offline(name, **kwargs):
    raise URLError("Name or service not known (no internet in the tests)")


@pytest.fixture
def benchmarks(monkeypatch, tmp_path):
    """``common`` and ``peers`` as the scripts import them, with ``../shared`` absent and no
    internet (``fetch_openml`` fails as it does offline)."""
    import sklearn.datasets

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    for name in ("common", "peers", "accuracy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    common, peers = importlib.import_module("common"), importlib.import_module("peers")
    monkeypatch.setattr(common, "DATA_DIR", tmp_path / "shared" / "data")
    monkeypatch.setattr(common, "SHIPPED_DIR", tmp_path / "shipped")  # as if nothing were shipped
    monkeypatch.setattr(sklearn.datasets, "fetch_openml", _offline)
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
    assert peers.sets_to_run(peers.CONFIGS["quick"]) == ["breast-cancer"]
    err = capsys.readouterr().err
    assert "liver: skipped" in err and "sonar: skipped" in err and "breast-cancer instead" in err
    (common.DATA_DIR / "sonar").mkdir(parents=True)  # one set there: it runs alone
    assert peers.sets_to_run(peers.CONFIGS["quick"]) == ["sonar"]


def test_a_set_on_openml_is_fetched_when_the_shared_folder_lacks_it(benchmarks, monkeypatch):
    import sklearn.datasets
    from sklearn.utils import Bunch

    common, _ = benchmarks
    asked = []

    def fetch(name, *, version, target_column, **kwargs):  # OpenML's liver-disorders, 4 rows
        asked.append((name, version, target_column))
        features = np.arange(24.0).reshape(4, 6)  # mcv ... gammagt, then drinks or selector
        return Bunch(data=features, target=np.array(["1", "2", "2", "1"]) if target_column == "selector"
                     else np.array([0.5, 3.0, 1.0, 6.0]), feature_names=[f"a{j}" for j in range(6)])

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", fetch)
    assert common.missing_data("liver") is None
    X, y, columns = common.load_uci("liver")
    assert X.shape == (4, 6) and y.tolist() == [1.0, -1.0, -1.0, 1.0] and columns[0] == "f0"
    X, drinks, columns = common.read_shared("liver", target="f5")  # the regression target
    assert X.shape == (4, 5) and drinks.tolist() == [0.5, 3.0, 1.0, 6.0] and len(columns) == 5
    assert asked == [("liver-disorders", 1, "selector"), ("liver-disorders", 1, "drinks")]  # cached


def test_a_set_that_cannot_be_fetched_says_why_and_how_to_get_it(benchmarks):
    common, _ = benchmarks
    line = common.missing_data("ionosphere")
    assert "ionosphere: skipped" in line and "shared/data" in line
    assert "fetch_openml('ionosphere', version=1) failed: URLError" in line and "\n" not in line
    assert "not on OpenML" in common.missing_data("wpbc")


def test_accuracy_goes_on_with_the_bundled_sets(benchmarks, capsys):
    accuracy = importlib.import_module("accuracy")
    with pytest.raises(accuracy.DataUnavailable, match="liver: skipped"):
        accuracy.load_set("liver")
    with pytest.raises(accuracy.DataUnavailable, match="liver: skipped"):
        accuracy.load_set("liver-drinks")
    X, y, task = accuracy.load_set("wine")
    assert X.shape == (178, 13) and set(np.unique(y)) == {0.0, 1.0, 2.0} and task == "classification"
    assert accuracy.load_set("diabetes")[2] == "regression"
    assert set(accuracy.CONFIGS["quick"]["classification"]) >= {"wine"}  # runs on a fresh clone


def test_the_shipped_sets_run_without_the_shared_folder(benchmarks, monkeypatch, capsys):
    """benchmarks/data ships ionosphere, sonar, liver and wpbc (CC BY 4.0, its README): a fresh clone
    with nothing beside it runs them, byte-identical to the shared copies where those are here."""
    common, peers = benchmarks
    shipped = REPO / "benchmarks" / "data"
    monkeypatch.setattr(common, "SHIPPED_DIR", shipped)
    assert peers.sets_to_run(peers.CONFIGS["full"]) == ["liver", "wpbc", "ionosphere", "sonar"]
    assert "skipped" not in capsys.readouterr().err
    X, y, columns = common.load_uci("wpbc")
    assert X.shape == (198, 33) and np.isnan(X).sum() == 4 and set(np.unique(y)) == {-1.0, 1.0}
    assert common.load_uci("ionosphere")[0].shape == (351, 33)  # the constant f1 dropped
    shared = REPO.parent / "shared" / "data"
    for name in ("ionosphere", "sonar", "liver", "wpbc"):
        if (shared / name / "data.csv").is_file():
            assert (shipped / name / "data.csv").read_bytes() == (shared / name / "data.csv").read_bytes()
    assert "CC BY 4.0" in (shipped / "README.md").read_text()
