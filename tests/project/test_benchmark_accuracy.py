"""benchmarks/accuracy.py's protocol in its parts, on small synthetic problems (no benchmark runs
here): fold kernels of unit trace on the fold, selection by cross-validation then one refit, the
RBF baseline, a fit past its time limit recorded (never dropped), paired tests over the splits
against the better of the two baselines, the seeds the tables may be published from."""

from __future__ import annotations

import importlib
import json
import math
import sys
import time

import numpy as np
import pytest

from helpers import REPO


@pytest.fixture
def accuracy(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    monkeypatch.delitem(sys.modules, "accuracy", raising=False)
    return importlib.import_module("accuracy")


def _problem(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    return X, np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)


def test_fold_kernels_are_the_grid_of_the_fold_at_unit_trace(accuracy):
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.functions import compute_kernels

    X, _ = _problem(30)
    K, K_test = accuracy.raw_kernels(X[:20], X[20:])
    assert K.shape == (13 * 3, 20, 20) and K_test.shape == (39, 10, 20)
    rows, held_out = np.arange(0, 20, 2), np.arange(1, 20, 2)
    train, evaluation = accuracy.unit_trace(K, rows, K, held_out)
    specs = kernel_grid(2, widths=accuracy.WIDTHS, degrees=accuracy.DEGREES)
    direct = compute_kernels(specs, X[rows])
    scale = np.einsum("mii->m", direct)[:, None, None]
    np.testing.assert_allclose(train, direct / scale, rtol=1e-12)
    np.testing.assert_allclose(evaluation, compute_kernels(specs, X[rows], X[held_out]) / scale, rtol=1e-12)


def test_the_grid_point_is_chosen_inside_the_training_part_then_refitted(accuracy):
    X, y = _problem(90)
    K, K_test = accuracy.raw_kernels(X[:60], X[60:])
    grid = accuracy.grid_points("average-kernel SVM", {"average-kernel SVM": {"C": (1e-3, 100.0)}}, K.shape[0])
    data = {"K": K, "K_test": K_test, "X": X[:60], "X_test": X[60:], "y": y[:60], "y_test": y[60:]}
    run = accuracy.select_and_fit("average-kernel SVM", grid, data, "classification", seed=0,
                                  run={"time_limit": 10.0, "tol": 1e-3})
    assert run["params"] == {"C": 100.0}  # C = 1e-3 on unit-trace kernels predicts one class
    assert run["statuses"] == {"ok": 2 * 3 + 1} and not run["timed_out"]
    assert 0.8 <= run["score"] <= 1.0 and run["kept"] == K.shape[0] and run["seconds"] > 0
    single = accuracy.grid_points("single best kernel", {"single best kernel": {"C": (1.0, 10.0)}}, 39)
    assert len(single) == 78 and single[1] == {"kernel": 0, "C": 10.0}


def _sleeper(seconds):
    time.sleep(seconds)
    return {"status": "ok"}


def test_a_fit_past_its_time_limit_is_killed_and_recorded(accuracy):
    assert accuracy.in_child(_sleeper, 5.0, 0.0) == {"status": "ok"}
    start = time.perf_counter()
    assert accuracy.in_child(_sleeper, 0.2, 30.0) is None
    assert time.perf_counter() - start < 5.0


def _payload(scores, baseline_scores, timed_out_split=None):
    splits = []
    for k, (a, b) in enumerate(zip(scores, baseline_scores, strict=True)):
        mine = {"score": a, "seconds": 1.0, "kept": 3, "statuses": {"converged": 7}, "timed_out": False}
        if k == timed_out_split:
            mine = {"timed_out": True, "seconds": 10.0, "statuses": {"timed_out": 1}}
        elif timed_out_split is not None and k > timed_out_split:
            mine = {"skipped": f"timed out on split {timed_out_split} (a fit over 10 s)"}
        splits.append({"split": k, "runs": {
            "spicymkl (hinge)": mine,
            "average-kernel SVM": {"score": b, "seconds": 0.1, "kept": 9, "statuses": {"ok": 7},
                                   "timed_out": False}}})
    return {"sets": [{"name": "toy", "task": "classification", "M": 9, "splits": splits,
                      "methods": ["spicymkl (hinge)", "average-kernel SVM"]}]}


def test_paired_tests_over_the_splits_against_the_average_kernel(accuracy):
    from scipy import stats

    mine = [0.80, 0.82, 0.79, 0.85, 0.81, 0.83]
    base = [0.75, 0.78, 0.76, 0.80, 0.77, 0.79]
    data = _payload(mine, base)["sets"][0]
    summary = accuracy.method_summary(data, "spicymkl (hinge)")
    assert summary["n"] == 6 and summary["mean"] == pytest.approx(np.mean(mine))
    assert summary["std"] == pytest.approx(np.std(mine, ddof=1))
    assert summary["t_p"] == pytest.approx(stats.ttest_rel(mine, base).pvalue)
    assert summary["wilcoxon_p"] == pytest.approx(stats.wilcoxon(mine, base).pvalue)
    assert accuracy.method_summary(data, "average-kernel SVM")["t_p"] is None  # not against itself


def test_a_timed_out_method_stays_in_the_table_with_what_happened(accuracy):
    payload = _payload([0.8, 0.9, 0.7, 0.6], [0.7, 0.8, 0.6, 0.5], timed_out_split=2)
    summary = accuracy.method_summary(payload["sets"][0], "spicymkl (hinge)")
    assert summary["n"] == 2 and summary["timed_out_split"] == 2 and not math.isnan(summary["mean"])
    table = accuracy.results_table(payload)
    first, second = (line for line in table.splitlines() if "spicymkl (hinge)" in line)
    assert "0.850 ± 0.071" in first and "timed out on split 2" in second and "2 of 4 splits" in second


def test_an_interrupted_run_goes_on_from_its_checkpoint_and_refuses_another_run(accuracy, monkeypatch, tmp_path):
    X, y = _problem(60)
    monkeypatch.setattr(accuracy, "load_set", lambda name: (X, y, "classification"))
    cfg = {"n_splits": 2, "time_limit": 10.0, "budget": None, "tol": 1e-3, "seed": 0,
           "methods": ["average-kernel SVM"], "grids": {"average-kernel SVM": {"C": (1.0, 100.0)}}}
    checkpoint = tmp_path / "accuracy.partial" / "toy.json"
    one_split, done = accuracy.one_split, []

    def interrupted(name, k, *args):
        if k == 1:
            raise KeyboardInterrupt
        done.append(k)
        return one_split(name, k, *args)
    monkeypatch.setattr(accuracy, "one_split", interrupted)
    with pytest.raises(KeyboardInterrupt):
        accuracy.run_set("toy", cfg, None, checkpoint)
    first = accuracy.read_checkpoint(checkpoint, cfg)
    assert done == [0] and [s["split"] for s in first] == [0]

    monkeypatch.setattr(accuracy, "one_split", lambda name, k, *args: done.append(k) or one_split(name, k, *args))
    data = accuracy.run_set("toy", cfg, None, checkpoint)
    assert done == [0, 1] and data["resumed_splits"] == 1  # split 0 not run again
    assert data["splits"][0] == first[0] and data["splits"][1]["runs"]["average-kernel SVM"]["score"] > 0.7
    with pytest.raises(SystemExit, match="tol differ"):
        accuracy.run_set("toy", {**cfg, "tol": 1e-2}, None, checkpoint)


def test_the_winners_table_names_the_best_those_within_one_std_and_the_defaults(accuracy):
    scores = {"spicymkl (hinge)": [0.80, 0.84, 0.82], "simplemkl": [0.79, 0.83, 0.80],
              "MKLClassifier() defaults": [0.70, 0.72, 0.71], "average-kernel SVM": [0.78, 0.80, 0.79],
              "RBF SVC (CV)": [0.81, 0.82, 0.80], "mikl": [0.9, None, None]}
    splits = [{"split": k, "runs": {m: ({"score": v[k], "seconds": 1.0, "kept": 2, "statuses": {"ok": 1}}
                                        if v[k] is not None else {"skipped": "timed out"})
                                    for m, v in scores.items()}} for k in range(3)]
    payload = {"sets": [{"name": "toy", "task": "classification", "M": 4, "splits": splits,
                         "methods": list(scores)}]}
    row = next(line for line in accuracy.winners_table(payload).splitlines() if line.startswith("| toy"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "spicymkl (hinge) 0.820 ± 0.020"  # mikl's one split does not compete
    assert cells[2] == "simplemkl, RBF SVC (CV)"  # within 0.02 of 0.82, the mean kernel (0.79) not
    assert cells[3] == "0.710 ± 0.010: 0.11 behind, NOT within one std"
    assert cells[4] == "RBF SVC (CV) 0.810 ± 0.010"  # the better baseline (the mean kernel: 0.79)
    assert cells[5].startswith("-0.1 (p = ") and cells[5].endswith(", significantly worse")
    assert cells[6].startswith("spicymkl (hinge): +0.01 (p = ") and cells[6].endswith(", not significantly worse")
    headline = next(line for line in accuracy.headline_table(payload).splitlines() if line.startswith("| toy"))
    assert [c.strip() for c in headline.strip("|").split("|")][2:6] == cells[4:5] + ["0.710 ± 0.010"] + cells[5:7]


def test_fold_stacks_are_c_contiguous_for_every_method(accuracy):
    X, _ = _problem(30)
    K, _ = accuracy.raw_kernels(X[:20], X[20:])
    train, evaluation = accuracy.unit_trace(K, np.arange(0, 20, 2), K, np.arange(1, 20, 2))
    assert train.flags.c_contiguous and evaluation.flags.c_contiguous


def test_rerun_rows_replace_theirs_on_the_same_splits_and_are_recorded(accuracy):
    def payload(score, methods):
        splits = [{"split": k, "runs": {m: {"score": score + k, "seconds": 1.0} for m in methods}}
                  for k in range(2)]
        return {"sets": [{"name": "toy", "task": "classification", "splits": splits, "methods": list(methods)}],
                "methods": list(methods)}

    saved = payload(0.5, ["average-kernel SVM", "MKLClassifier() defaults"])
    rerun = {**payload(0.7, ["MKLClassifier() defaults", "MKLClassifierCV()"]), "tol": 1e-2, "wall_seconds": 3.0,
             "machine": {"git_commit": "abcdef0123", "date": "2026-11-27 20:00:00 UTC", "cpu": "a CPU"}}
    merged = accuracy.merge_rows(saved, rerun)
    runs = [split["runs"] for split in merged["sets"][0]["splits"]]
    assert [r["MKLClassifier() defaults"]["score"] for r in runs] == [0.7, 1.7]
    assert [r["average-kernel SVM"]["score"] for r in runs] == [0.5, 1.5]  # the other rows kept
    assert [r["MKLClassifierCV()"]["score"] for r in runs] == [0.7, 1.7]  # a new method added
    expected = ["average-kernel SVM", "MKLClassifier() defaults", "MKLClassifierCV()"]
    assert merged["methods"] == merged["sets"][0]["methods"] == expected
    assert merged["reruns"] == [{"methods": ["MKLClassifier() defaults", "MKLClassifierCV()"], "sets": ["toy"],
                                 "git_commit": "abcdef0123", "date": "2026-11-27 20:00:00 UTC",
                                 "cpu": "a CPU", "tol": 1e-2, "wall_seconds": 3.0}]
    assert accuracy._reruns(merged) == (" Rerun on the same splits at git abcdef01, 2026-11-27 20:00:00 UTC, "
                                        "a CPU: MKLClassifier() defaults, MKLClassifierCV().")


def test_heldout_splits_are_the_ida_realisations_with_a_cut_test_part(accuracy):
    try:
        _, y, _ = accuracy.load_set("titanic")
    except accuracy.DataUnavailable as exc:
        pytest.skip(f"needs ../shared/data: {exc}")
    first = accuracy.split_indices("titanic", y, "classification", 0, 0)
    again = accuracy.split_indices("titanic", y, "classification", 0, 0)
    second = accuracy.split_indices("titanic", y, "classification", 0, 1)
    train, test = first
    assert train.size == 150 and test.size == accuracy.HELDOUT_TEST  # 2051 test rows, cut
    assert not set(train) & set(test) and test.max() < y.size
    assert np.array_equal(train, np.sort(accuracy.ida_realisation("titanic", 1)[0]))
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))  # seeded
    assert not np.array_equal(train, second[0])  # realisation 2


def test_random_splits_are_stratified_70_30_and_seeded_by_split(accuracy):
    _, y = _problem(100)
    train, test = accuracy.split_indices("toy", y, "classification", 3, 1)
    assert (train.size, test.size) == (70, 30) and not set(train) & set(test)
    assert np.array_equal(test, accuracy.split_indices("other", y, "classification", 4, 0)[1])  # seed + k
    assert abs(np.mean(y[test] > 0) - np.mean(y > 0)) <= 0.02


def test_the_rbf_baseline_is_svc_with_gamma_a_factor_of_sklearns_scale(accuracy):
    from sklearn.svm import SVC

    X, y = _problem(90)
    K, K_test = accuracy.raw_kernels(X[:60], X[60:])
    data = {"K": K, "K_test": K_test, "X": X[:60], "X_test": X[60:], "y": y[:60], "y_test": y[60:]}
    grid = accuracy.grid_points("RBF SVC (CV)", accuracy.QUICK_GRIDS, K.shape[0])
    assert grid[0] == {"C": 0.1, "gamma_factor": 0.1} and len(grid) == 4
    run = accuracy.select_and_fit("RBF SVC (CV)", grid, data, "classification", seed=0,
                                  run={"time_limit": 10.0, "tol": 1e-3})
    assert 0.0 <= run["score"] <= 1.0 and run["statuses"] == {"ok": 4 * 3 + 1} and run["params"] in grid
    fit = accuracy.METHODS["RBF SVC (CV)"][1]
    out = fit({"C": 1.0, "gamma_factor": 1.0}, None, y[:60], None, y[60:], {}, X[:60], X[60:])
    assert out["score"] == SVC(gamma="scale").fit(X[:60], y[:60]).score(X[60:], y[60:])
    regression = accuracy.METHODS["RBF SVR (CV)"][1]
    out = regression({"C": 1.0, "epsilon": 0.1, "gamma_factor": 0.3}, None, X[:60, 0], None, X[60:, 0], {},
                     X[:60], X[60:])
    assert -0.5 < out["score"] < 0  # minus the RMSE of a target that is a feature
    assert accuracy.QUICK_GRIDS["RBF SVR (CV)"] == {"C": (0.1, 100.0), "epsilon": (0.1,), "gamma_factor": (0.1, 3.0)}


def _two_baselines(task, scores):
    splits = [{"split": k, "runs": {m: ({"score": v[k], "seconds": 1.0, "statuses": {"ok": 1}} if v[k] is not None
                                        else {"skipped": "timed out"}) for m, v in scores.items()}}
              for k in range(len(next(iter(scores.values()))))]
    return {"name": "toy", "task": task, "M": 4, "splits": splits, "methods": list(scores)}


def test_the_paired_tests_are_against_the_better_of_the_two_baselines(accuracy):
    from scipy import stats

    mine, mean_kernel, rbf = [0.80, 0.81, 0.79, 0.83], [0.78, 0.80, 0.77, 0.79], [0.84, 0.86, 0.83, 0.87]
    data = _two_baselines("classification", {"spicymkl (hinge)": mine, "average-kernel SVM": mean_kernel,
                                             "RBF SVC (CV)": rbf})
    assert accuracy.better_baseline(data) == "RBF SVC (CV)"
    summary = accuracy.method_summary(data, "spicymkl (hinge)")
    assert summary["baseline"] == "RBF SVC (CV)" and summary["t_p"] == pytest.approx(stats.ttest_rel(mine, rbf).pvalue)
    assert summary["gain"] == pytest.approx(-0.0425) and summary["worse"] is True
    assert accuracy.method_summary(data, "RBF SVC (CV)")["worse"] is None  # not against itself
    assert accuracy.method_summary(data, "average-kernel SVM")["worse"] is True
    table = accuracy.results_table({"sets": [data]})
    row = next(line for line in table.splitlines() if line.startswith("| toy (M = 4) | spicymkl (hinge) | RBF SVC"))
    assert row.split("|")[-3].strip() == "NO"  # not significantly worse: no
    # an older file, without the RBF baseline: the mean kernel, and the tables say so
    old = _two_baselines("classification", {"spicymkl (hinge)": mine, "average-kernel SVM": mean_kernel})
    assert accuracy.better_baseline(old) == "average-kernel SVM"
    assert accuracy.method_summary(old, "spicymkl (hinge)")["worse"] is False
    row = next(line for line in accuracy.results_table({"sets": [old]}).splitlines()
               if line.startswith("| toy (M = 4) | spicymkl (hinge) | average"))
    assert "average-kernel SVM (RBF SVC (CV) not in this run)" in row and row.split("|")[-3].strip() == "yes"
    # a baseline that missed a split is not chosen; regression: the lower RMSE is the better
    partial = _two_baselines("classification", {"average-kernel SVM": mean_kernel, "RBF SVC (CV)": [*rbf[:3], None]})
    assert accuracy.better_baseline(partial) == "average-kernel SVM"
    assert "RBF SVC (CV) not run on every split" in accuracy.results_table({"sets": [partial]})
    regression = _two_baselines("regression", {"SVR (mean kernel)": [-3.0, -3.1], "RBF SVR (CV)": [-3.4, -3.3]})
    assert accuracy.better_baseline(regression) == "SVR (mean kernel)"
    assert accuracy.better_baseline(_two_baselines("regression", {"MKLRegressor": [-3.0, -3.1]})) is None


def test_significantly_worse_is_a_lower_mean_and_a_paired_t_test_below_alpha(accuracy):
    base = [0.80, 0.82, 0.79, 0.85, 0.81]
    assert accuracy.significantly_worse([0.75, 0.78, 0.76, 0.80, 0.77], base)
    assert not accuracy.significantly_worse([0.81, 0.80, 0.80, 0.85, 0.82], base)  # p > 0.05
    assert not accuracy.significantly_worse([0.85, 0.87, 0.84, 0.90, 0.86], base)  # better
    assert accuracy.significantly_worse([b - 0.01 for b in base[:2]], [0.75, 0.77]) is False  # higher
    assert accuracy.significantly_worse([0.70, 0.72], [0.71, 0.73])  # the same loss on every split
    assert not accuracy.significantly_worse([0.70], [0.80])  # one pair: no test


def test_the_tables_are_not_published_from_the_splits_the_defaults_were_chosen_on(accuracy, monkeypatch,
                                                                                  tmp_path, capsys):
    import mklpy_peer

    assert accuracy.CHOICE_SEED == 0 and accuracy.REPORT_SEED - accuracy.CHOICE_SEED >= 1000  # disjoint seeds
    out = tmp_path / "accuracy.json"
    assert accuracy.main(["--quick", "--seed", "0", "--out", str(out)]) == 2
    message = capsys.readouterr().err.strip()
    assert "--seed" in message and "--allow-choice-seed" in message and "\n" not in message and not out.exists()
    seeds = []
    monkeypatch.setattr(mklpy_peer, "mklpy_status",
                        lambda: {"available": False, "reason": "not here", "version": None, "torch": None})
    monkeypatch.setattr(accuracy, "run_set", lambda name, cfg, *_: seeds.append(cfg["seed"]) or {
        "name": name, "task": "classification", "M": 4, "splits": [], "methods": []})
    for argv, seed in ((["--quick"], accuracy.REPORT_SEED), (["--quick", "--seed", "0", "--allow-choice-seed"], 0),
                       (["--heldout"], accuracy.HELDOUT_SEED)):
        assert accuracy.main([*argv, "--sets", "wine", "--out", str(out)]) == 0
        assert seeds[-1] == seed and json.loads(out.read_text())["seed"] == seed
    assert "seeded 0 + k: the splits the estimators' defaults were chosen on" in accuracy.settings_table(
        {**json.loads(out.read_text()), "heldout": False})


def test_the_solvers_table_counts_each_method_against_the_better_baseline_of_each_set(accuracy):
    def runs(scores, seconds=(1.0, 1.0, 1.0, 1.0), kept=3):
        return [{"score": s, "seconds": t, "kept": kept, "statuses": {"ok": 1}} for s, t in zip(scores, seconds,
                                                                                               strict=True)]

    first = {"average-kernel SVM": runs([0.80, 0.82, 0.79, 0.81]),  # the better baseline here
             "RBF SVC (CV)": runs([0.70, 0.71, 0.69, 0.72]),
             "spicymkl (hinge)": runs([0.85, 0.88, 0.83, 0.87], (1.0, 2.0, 3.0, 4.0)),  # better
             "simplemkl": runs([0.75, 0.76, 0.74, 0.77])}  # worse
    second = {"average-kernel SVM": runs([0.70, 0.72, 0.71, 0.73]),
              "RBF SVC (CV)": runs([0.80, 0.81, 0.79, 0.82]),  # the better baseline here
              "spicymkl (hinge)": runs([0.81, 0.80, 0.80, 0.81], (5.0, 6.0, 7.0, 8.0), kept=5),  # the same
              "simplemkl": [{"skipped": "timed out on split 0"}] * 4, "mikl": [{"skipped": "not here"}] * 4}
    sets = [{"name": name, "task": "classification", "M": 9, "methods": list(rows),
             "splits": [{"split": k, "runs": {m: r[k] for m, r in rows.items()}} for k in range(4)]}
            for name, rows in (("one", first), ("two", second))]
    payload = {"n_splits": 4, "folds": 3, "sets": sets}
    lines = accuracy.solvers_table(payload).splitlines()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| ")][1:]
    assert rows == [
        ["spicymkl (hinge)", "+2.6", "0 / 1 / 1", "4.5", "3 to 5"],  # (+5.25 + 0) / 2 points; median of 8 s
        ["simplemkl", "-5.0 (1 of 2 sets)", "1 / 0 / 0", "1", "3"],
        ["mikl", "not run", "-", "-", "-"],
        ["average-kernel SVM", "-4.5", "1 / 0 / 0 (the baseline on 1)", "1", "3"],
        ["RBF SVC (CV)", "-5.0", "1 / 0 / 0 (the baseline on 1)", "1", "3"]]
    assert "_2 sets, 4 random 70/30 splits each" in accuracy.solvers_table(payload)
    assert accuracy.TABLES["solvers"] is accuracy.solvers_table
    # a run without the RBF baseline: the mean kernel is the baseline everywhere, and the RBF row says so
    for data in sets:
        data["methods"].remove("RBF SVC (CV)")
        for split in data["splits"]:
            del split["runs"]["RBF SVC (CV)"]
    rows = [line for line in accuracy.solvers_table(payload).splitlines() if line.startswith("| ")]
    assert rows[-2:] == ["| average-kernel SVM | +0.0 | the baseline | 1 | 3 |",
                         "| RBF SVC (CV) | not in this run | - | - | - |"]
