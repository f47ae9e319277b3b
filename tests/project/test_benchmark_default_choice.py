"""benchmarks/default_choice.py: the bar of each set (the best method of the accuracy protocol,
the defaults left out, less one std) and which candidates clear it, on synthetic payloads."""

from __future__ import annotations

import importlib
import sys

import pytest

from helpers import REPO


@pytest.fixture
def choice(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    monkeypatch.delitem(sys.modules, "default_choice", raising=False)
    return importlib.import_module("default_choice")


def _set(name, task, scores):
    splits = [{"split": k, "runs": {m: {"score": v[k], "seconds": 1.0} for m, v in scores.items()}}
              for k in range(3)]
    return {"name": name, "task": task, "splits": splits, "methods": list(scores)}


def test_the_bar_is_the_best_method_without_the_defaults(choice):
    payload = {"sets": [
        _set("toy", "classification", {"average-kernel SVM": [0.80, 0.82, 0.84],
                                       "MKLClassifier() defaults": [0.95, 0.95, 0.95]}),
        _set("reg", "regression", {"SVR (mean kernel)": [-3.0, -3.2, -3.4],
                                   "KernelRidge (mean kernel)": [-3.1, -3.3, -3.5]}),
    ]}
    bars = choice.bars(payload)
    assert bars["toy"][0] == "average-kernel SVM" and bars["toy"][1:] == pytest.approx((0.82, 0.02))
    assert bars["reg"][0] == "SVR (mean kernel)" and bars["reg"][1:] == pytest.approx((3.2, 0.2))  # RMSE


def test_a_candidate_clears_the_bar_within_one_std_only(choice):
    grids = list(choice.GRIDS)

    def runs(scores):
        return {g: {f"{C:g}": [{"score": s, "seconds": 0.5} for s in scores]
                    for C in choice.CS["classification"]} for g in grids}

    payload = {"bars": {"a": ("x", 0.82, 0.02), "b": ("y", 0.90, 0.01)},
               "sets": [{"name": "a", "task": "classification", "runs": runs([0.80, 0.81, 0.79])},
                        {"name": "b", "task": "classification", "runs": runs([0.85, 0.86, 0.87])}]}
    row = next(line for line in choice.choice_table(payload).splitlines() if line.startswith(f"| {grids[0]}"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:5] == ["1/2", "b"]  # 0.80 is within 0.02 of 0.82; 0.86 is not within 0.01 of 0.90
    assert "0.800 ± 0.010*" in choice.by_set_table(payload) and "0.860 ± 0.010;" in choice.by_set_table(payload)
