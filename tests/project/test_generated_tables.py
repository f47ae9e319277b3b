"""The measured tables of README.md and docs/ are the benchmark JSON, rendered (never typed)."""

from __future__ import annotations

import importlib.util
import sys

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
