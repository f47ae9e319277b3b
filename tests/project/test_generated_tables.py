"""The measured tables of README.md and docs/ are the benchmark JSON, rendered (never typed)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import numpy as np
import pytest

from helpers import REPO


def _report():
    spec = importlib.util.spec_from_file_location("report", REPO / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["report"] = module
    spec.loader.exec_module(module)
    return module


def test_every_generated_table_matches_its_json(capsys):
    report = _report()
    assert report.main(["--check"]) == 0, capsys.readouterr().out
    regions = {(page.name, json_name, table) for page in report.pages()
               for _, json_name, table, _, _ in report.REGION.findall(page.read_text())}
    assert ("README.md", "peers.json", "headline") in regions
    assert len(regions) >= 12  # peers, spicymkl, mlmkl, vskl tables


def test_a_hand_edited_table_is_caught(tmp_path):
    report = _report()
    page = (REPO / "README.md").read_text()
    edited = page.replace("| liver (", "| Liver (", 1)
    assert edited != page
    assert report.regenerate(edited, report._renderers()) == page


def test_a_split_table_shows_every_cell_once_under_its_lead():
    _report()  # puts benchmarks/ on the path
    import common

    headers = ["name", "a", "b", "c"]
    rows = [["x", 1, 2, 3], ["y", 4, 5, 6]]
    text = common.split_table(headers, rows, keys=[0], groups=[("First:", [1, 2]), ("Then:", [3])])
    assert text == ("First:\n\n| name | a | b |\n|---|---|---|\n| x | 1 | 2 |\n| y | 4 | 5 |\n\n"
                    "Then:\n\n| name | c |\n|---|---|\n| x | 3 |\n| y | 6 |")
    with pytest.raises(ValueError, match="cover columns 0-3 once each"):
        common.split_table(headers, rows, keys=[0], groups=[("First:", [1, 2])])
    with pytest.raises(ValueError, match="once each"):
        common.split_table(headers, rows, keys=[0], groups=[("First:", [1, 2]), ("Then:", [2, 3])])


def test_the_benchmarks_page_shows_the_full_accuracy_run_and_says_where_it_is_missing(tmp_path):
    report = _report()
    page = (REPO / "docs" / "benchmarks.md").read_text()
    regions = {(json_name, table) for _, json_name, table, _, _ in report.REGION.findall(page)}
    for table in ("winners", "settings", "classification", "regression", "skipped"):
        assert ("accuracy.json", table) in regions
    assert not any(json_name.endswith("_quick.json") for json_name, _ in regions), \
        "a quick run checks that a benchmark runs; its numbers are no result for the user pages"
    missing = report.render("accuracy.json", "classification", report._renderers(), results=tmp_path)
    assert missing.startswith("_Not measured yet: `accuracy.json` is written by the full run")


def test_the_wilcoxon_p_values_are_scipys():
    """accuracy.py enumerates the sign patterns of tied differences at once; the p-value is
    scipy's (counts of half-integer rank sums: exactly equal), ties, zeros and all."""
    from scipy import stats

    _report()  # puts benchmarks/ on the path
    accuracy = importlib.import_module("accuracy")
    rng = np.random.default_rng(0)
    for trial in range(24):
        n = int(rng.integers(2, 9))
        a, b = np.round(rng.normal(size=n), 1), np.round(rng.normal(size=n), 1)
        if trial % 3 == 0:
            b[:2] = a[:2]  # zero differences
        if trial % 4 == 0:
            a, b = np.round(2 * a) / 2, np.round(2 * b) / 2  # ties
        expected = float(stats.wilcoxon(a, b).pvalue)
        assert accuracy.wilcoxon_pvalue(tuple(a), tuple(b)) == pytest.approx(expected, rel=1e-12, nan_ok=True)
