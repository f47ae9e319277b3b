"""The benchmark reports' ratios and counts, on synthetic run records (no benchmark runs here).

A ratio compares two runs that both ended certified (status ``converged``); a run that stalled,
failed or hit a limit is shown with its status and gap and counts in no ratio and no
"cases >= 20x" (issue 26: six stalled SimpleMKL runs had counted as infinitely slower).
"""

from __future__ import annotations

import importlib.util
import math
import sys

from helpers import REPO


def _benchmark(name):
    sys.path.insert(0, str(REPO / "benchmarks"))  # the scripts import common as a sibling
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module


def run(solver, status, gap, **fields):
    return {"solver": solver, "status": status, "gap": gap, **fields}


def test_a_ratio_needs_two_certified_runs():
    common = _benchmark("common")
    ours, simple = run("spicymkl", "converged", 1e-7), run("simplemkl", "converged", 9e-4)
    assert common.speed_ratio(simple, 30.0, ours, 1.5) == 20.0
    assert common.ratio_cell(simple, 30.0, ours, 1.5) == 20.0
    stalled = run("simplemkl", "stalled", 0.2)
    assert math.isnan(common.speed_ratio(stalled, 30.0, ours, 1.5))
    assert common.ratio_cell(stalled, 30.0, ours, 1.5) == "simplemkl stalled at gap 0.2"
    # the same rule for our own solvers, and for an exact reference that failed
    ours_capped = run("mirror-vskl", "max_iter", 3.1e-3)
    assert math.isnan(common.speed_ratio(simple, 30.0, ours_capped, 1.0))
    assert common.ratio_cell(simple, 30.0, ours_capped, 1.0) == "mirror-vskl max_iter at gap 0.0031"
    failed = run("cvxpy", "numerical_failure", math.nan)
    assert common.ratio_cell(failed, 4.0, ours_capped, 1.0) == (
        "cvxpy numerical_failure; mirror-vskl max_iter at gap 0.0031")
    assert common.ratio_cell({"solver": "obscure", "status": "error", "error": "boom"}, 1.0,
                             ours, 1.0) == "obscure error"
    assert common.ratio_cell({}, 1.0, ours, 1.0) == "not run"


def test_counts_leave_out_the_cases_that_are_not_comparable():
    common = _benchmark("common")
    assert common.count_at_least([25.0, 19.0, math.nan, 300.0, math.nan], 20.0) == (2, 3)
    assert common.count_at_least([math.nan], 20.0) == (0, 0)


def test_simplemkl_target_is_not_met_by_stalled_runs():
    """Issue 26's case: 20 certified wins and 6 stalled SimpleMKL runs read '26/26 >= 20x'."""
    spicy = _benchmark("spicymkl_scaling")

    def row(M, simple_status, simple_gap, simple_time, spicy_time):
        return {"N": 200, "M": M, "C": 0.05,
                "hinge": run("spicymkl", "converged", 1e-7, **{"to_1e-3": {"time": spicy_time}}),
                "simplemkl": run("simplemkl", simple_status, simple_gap, time=simple_time,
                                 kernel_passes=10.0, svm_calls=5.0)}

    wins = [row(50, "converged", 9e-4, 30.0, 1.0) for _ in range(20)]
    stalls = [row(500, "stalled", 0.2, 10.0, 0.1) for _ in range(6)]
    assert spicy.simplemkl_factor(wins[0]) == 30.0
    assert math.isnan(spicy.simplemkl_factor(stalls[0]))
    assert spicy.simple_cells(stalls[0])[3] == "simplemkl stalled at gap 0.2"
    factors = [(spicy.simplemkl_factor(r), f"M={r['M']}", spicy.simple_cells(r)[3]) for r in wins + stalls]
    target = spicy.speed_target(factors)
    assert not target["pass"]
    assert "20/20 comparable cases >= 20x; 6 left out" in target["detail"]
    assert "M=500: simplemkl stalled at gap 0.2" in target["detail"]
    assert spicy.speed_target(factors[:20])["pass"]
    slow = [row(50, "converged", 9e-4, 10.0, 1.0)] + wins
    assert not spicy.speed_target([(spicy.simplemkl_factor(r), "", "") for r in slow])["pass"]


def test_vskl_speed_target_names_a_baseline_that_did_not_finish():
    vskl = _benchmark("vskl_scaling")

    def row(M, simple_status, simple_time):
        return {"dataset": "liver", "M": M,
                "mirror": run("mirror-vskl", "converged", 1e-5, time=0.1, svm_calls=7.0),
                "simple": run("simplemkl", simple_status, 0.2, time=simple_time, svm_calls=100.0)}

    checks = {c["target"][:3]: c for c in vskl.check_targets([row(10, "converged", 1.0),
                                                             row(1000, "time_limit", 300.0)])}
    assert not checks["(c)"]["pass"]
    assert "liver M=1000: not comparable (simplemkl time_limit at gap 0.2)" in checks["(c)"]["detail"]
    assert not checks["(a)"]["pass"]  # 7 of 100 calls, but the baseline never finished
    fine = {c["target"][:3]: c for c in vskl.check_targets([row(10, "converged", 1.0),
                                                           row(1000, "converged", 30.0)])}
    assert fine["(a)"]["pass"] and fine["(c)"]["pass"]
