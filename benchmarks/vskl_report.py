"""Markdown tables for docs/methods/mirror-vskl.md from the benchmark JSON (never typed by hand).

Usage: ``python benchmarks/vskl_report.py`` prints the tables for the latest
``benchmarks/results/vskl_scaling.json`` and ``vskl_accuracy.json``;
``benchmarks/report.py`` writes them into the method page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vskl_scaling import check_targets

import common

RESULTS = Path(__file__).resolve().parent / "results"


def _certified(run: dict[str, Any], field: str, spec: str) -> str:
    """A certified run's figure, marked when the run stopped before the gap (its status)."""
    text = format(run[field], spec)
    return text if run["status"] == "converged" else f"{text} ({run['status']})"


def _ratio(slow: dict[str, Any], fast: dict[str, Any], field: str, spec: str) -> str:
    """``slow / fast`` of ``field`` where both runs ended certified, else what ended the one that
    did not (``simplemkl stalled at gap 0.2``): never a ratio (:func:`common.ratio_cell`)."""
    cell = common.ratio_cell(slow, slow[field], fast, fast[field])
    return f"{format(cell, spec)}x" if isinstance(cell, float) else cell


def _stop_lead(settings: dict[str, Any]) -> str:
    """What the compared runs stopped on (the JSON's settings: runs before 2026-11-27 used the
    papers' objective change)."""
    if settings.get("stop") == "gap":
        return f"Cost to SimpleMKL's own stop (a certified relative duality gap of {settings['tol']:g}):"
    return f"Cost to the paper's stop (relative objective change {settings['tol']:g}):"


def scaling_tables(d: dict[str, Any]) -> str:
    """The scaling and cvxpy tables, the targets and the machine line of a vskl_scaling JSON."""
    headers = ["data set", "N train", "M", "SVM calls mirror / entropic / simple",
               "time mirror / entropic / simple (s)", "time ratio simple / mirror", "passes mirror / simple",
               "test accuracy mirror / simple / average", "SVM calls mirror / entropic",
               "time mirror / entropic (s)"]
    rows = []
    for r in d["scaling"]:
        m, e, s, a = r["mirror"], r["entropic"], r["simple"], r["average"]
        rows.append([
            r["dataset"], r["N_train"], r["M"],
            f"{m['svm_calls']:.0f} / {e['svm_calls']:.0f} / {s['svm_calls']:.0f}",
            f"{m['time']:.3g} / {e['time']:.3g} / {s['time']:.3g}", _ratio(s, m, "time", ".1f"),
            f"{m['kernel_passes']:.0f} / {s['kernel_passes']:.0f}",
            f"{m['test_accuracy']:.3f} / {s['test_accuracy']:.3f} / {a['test_accuracy']:.3f}",
            f"{_certified(r['mirror_gap'], 'svm_calls', '.0f')} / {_certified(r['entropic_gap'], 'svm_calls', '.0f')}",
            f"{_certified(r['mirror_gap'], 'time', '.3g')} / {_certified(r['entropic_gap'], 'time', '.3g')}",
        ])
    lines = [common.split_table(headers, rows, keys=[0, 2], groups=[
        (_stop_lead(d["settings"]), [3, 4, 5, 6]),
        ("Training-set size, test accuracy at that stop, and the cost of going on to a certified gap of 1e-6:",
         [1, 7, 8, 9]),
    ])]
    lines += ["", "Against the cvxpy reference (smaller problems):", "",
              "| data set (N train = 120) | M | time cvxpy / mirror / simple (s) | cvxpy / mirror "
              "| objective mirror vs cvxpy | simple vs cvxpy | cvxpy status |",
              "|---|---|---|---|---|---|---|"]
    for r in d["cvxpy"]:
        c, m, s = r["cvxpy"], r["mirror"], r["simple"]
        lines.append(
            f"| {r['dataset']} | {r['M']} | {c['time']:.3g} / {m['time']:.3g} / {s['time']:.3g} "
            f"| {_ratio(c, m, 'time', '.0f')} | {r['mirror_rel_diff_vs_cvxpy']:+.1e} "
            f"| {r['simple_rel_diff_vs_cvxpy']:+.1e} | {c['status']} |"
        )
    lines.append("")
    lines += common.target_lines(check_targets(d["scaling"]))  # today's rule for ratios, from the runs
    machine = d["machine"]
    lines += ["", f"Measured {machine['date']} on {machine['cpu']} ({machine['cpu_count']} cores), "
                  f"git {machine['git_commit'][:8]}, {d['total_seconds']:.0f} s in all."]
    return "\n".join(lines)


def accuracy_table(d: dict[str, Any]) -> str:
    """The methods table of a vskl_accuracy JSON."""
    lines = ["| method | multi-class accuracy | time (s, 10 problems) | SVM calls | kernels selected (of 20) |",
             "|---|---|---|---|---|"]
    for row in d["methods"]:
        lines.append(
            f"| {row['method']} | {row['multiclass_accuracy']:.3f} | {row['time']:.3g} "
            f"| {row['svm_calls']:.0f} | {row['mean_selected_kernels']:.1f} |"
        )
    machine = d["machine"]
    lines += ["", f"Measured {machine['date']}, git {machine['git_commit'][:8]}."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(scaling_tables(json.loads((RESULTS / "vskl_scaling.json").read_text())))
    print()
    print(accuracy_table(json.loads((RESULTS / "vskl_accuracy.json").read_text())))
