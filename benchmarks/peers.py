"""kernelfuse against the peers a user would otherwise pick, on the same problems in one run.

``python benchmarks/peers.py [--quick] [--seed S] [--out PATH]``

For UCI sets of ``../shared/data`` (one missing there is skipped with a line saying how to
get it; with none of them, scikit-learn's bundled breast cancer instead), on a 70/30
stratified split standardised on the training split, with Gaussian kernels of widths
0.5 ... 20 on all features and of widths 1 and 5 on single features, each of unit trace, every
family a binary problem can be posed in is solved by each kernelfuse solver
of that family and by the exact reference (cvxpy + Clarabel), with the
SimpleMKL baseline (kernelfuse's ``simplemkl``, the reduced-gradient
method of Rakotomamonjy et al. 2008) on ``l1_mkl_sq``.  Beside them, on the
same kernels: the average-kernel SVM through scikit-learn (``SVC`` on the
mean kernel) and MKLpy's algorithms (EasyMKL and others) where MKLpy is
installed (``benchmarks/mklpy_peer.py``).

Per run: the time to a relative suboptimality ``(P - P*) / max(1, |P*|)``
of 1e-3 and 1e-6 against cvxpy's certified optimum ``P*`` (read from the
solver's history: the best objective it held at each time; the solvers
that certify a gap stop at 1e-7 or by their own rule; where Clarabel cannot
certify ``P*``, the lowest objective a solver certified within 1e-7 stands
in, and the JSON says which), the certified gap
at the end, test accuracy, selected kernels (weight above 1e-6), passes over
the kernel matrices (``kernel_passes``), and the peak memory the solve
allocated (``tracemalloc``, in a second run so that the timed one is not
slowed).  Ratios are taken in the same run: cvxpy's time over the solver's
time to 1e-6, SimpleMKL's over the solver's on ``l1_mkl_sq``.  The
objectives of MKLpy's algorithms and of the average-kernel SVM are not the
families' (only time, accuracy and selected kernels compare).

Writes ``benchmarks/results/peers[_quick].json`` (with the machine and the
library versions) and a PNG of suboptimality against time; the markdown
tables in README.md and docs/benchmarks.md are generated from that JSON by
``benchmarks/report.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    RESULTS_DIR,
    accuracy,
    available_sets,
    fmt,
    gaussian_kernels,
    have_matplotlib,
    machine_info,
    markdown_table,
    ratio_cell,
    save_figure,
    save_results,
    uci_split,
)

#: Suboptimality levels the times are read at.
LEVELS = (1e-3, 1e-6)
#: Family -> (parameters, solvers besides cvxpy); the reference is always cvxpy.  The
#: parameters suit unit-trace kernels (entries near 1/N): C = 100 for the SVM-like families
#: (and the average-kernel SVM), lam = 1e-4 (C = 1 / (lam N) near 50) for pnorm_mkl; at
#: C = 10 every method predicted the majority class.
FAMILIES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "l1_mkl_sq": ({"C": 100.0}, ("mirror-vskl", "simplemkl")),
    "l1_mkl (hinge)": ({"C": 0.5, "loss": "hinge"}, ("spicymkl",)),
    "l1_mkl (logistic)": ({"C": 0.5, "loss": "logistic"}, ("spicymkl",)),
    "vskl": ({"C": 100.0, "q": 2.0}, ("mirror-vskl",)),
    "pnorm_mkl": ({"lam": 1e-4, "p": 1.5}, ("obscure", "pegasos-mkl")),
    "mikl": ({"lam": 0.1, "p": 2.0, "q": 1.0, "r": 2.0}, ("mikl",)),
}
#: Solver settings: a tight certified gap where the solver has one.
SETTINGS: dict[str, dict[str, Any]] = {
    "mirror-vskl": {"tol": 1e-7}, "simplemkl": {"tol": 1e-7, "time_limit": 120.0},
    "spicymkl": {"tol": 1e-8}, "mikl": {"tol": 1e-8},
    "obscure": {"max_iter": 300, "tol": 1e-12, "seed": 0},
    "pegasos-mkl": {"max_iter": 300, "tol": 1e-12, "seed": 0},
}
#: ``fallback``: the sets scikit-learn ships, run where none of ``sets`` can be had (a fresh
#: clone with no ``../shared`` beside it).
CONFIGS = {
    "quick": {"sets": ("liver", "sonar"), "fallback": ("breast-cancer",), "single_features": 5,
              "mklpy_iterative": False},
    "full": {"sets": ("liver", "wpbc", "ionosphere", "sonar"), "fallback": ("breast-cancer",),
             "single_features": None, "mklpy_iterative": True},
}
#: MKLpy's algorithms that always take 1000 steps (left out in --quick).
ITERATIVE_MKLPY = ("GRAM", "MEMO", "RMKL")
WIDTHS_ALL = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
WIDTHS_SINGLE = (1.0, 5.0)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sets_to_run(cfg: dict[str, Any]) -> list[str]:
    """The configured sets that can be had here, one line for each that cannot (how to get
    it); the bundled fallback where none can."""
    names = available_sets(cfg["sets"])
    if not names:
        log(f"none of {', '.join(cfg['sets'])} here: running scikit-learn's bundled "
            f"{', '.join(cfg['fallback'])} instead")
        names = list(cfg["fallback"])
    return names


def problem_data(name: str, single_features: int | None, seed: int) -> dict[str, Any]:
    """The split, its kernels (all-feature widths, then single features) and their groups."""
    split = uci_split(name, seed)
    d = split["X_train"].shape[1]
    singles = range(d if single_features is None else min(d, single_features))
    specs = [(None, w) for w in WIDTHS_ALL] + [([j], w) for j in singles for w in WIDTHS_SINGLE]
    K, K_test = gaussian_kernels(split["X_train"], split["X_test"], specs)
    groups = np.array([0] * len(WIDTHS_ALL) + [1 + j for j in singles for _ in WIDTHS_SINGLE])
    return {**split, "K": K, "K_test": K_test, "groups": groups}


def time_to(history: list[tuple[float, float]], optimum: float, level: float) -> float | None:
    """The first time the recorded objective is within ``level`` of the optimum (relative)."""
    for seconds, objective in history:
        if (objective - optimum) / max(1.0, abs(optimum)) <= level:
            return seconds
    return None


def solve_once(data: dict[str, Any], solver: str, family: str, params: dict[str, Any]
               ) -> tuple[Any, float]:
    import kernelfuse

    extra = {"groups": data["groups"]} if family == "vskl" else {}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(data["K"], data["y_train"], solver=solver, family=family,
                                  check_psd=False, **extra, **params, **SETTINGS.get(solver, {}))
    return result, time.perf_counter() - start


def peak_memory(data: dict[str, Any], solver: str, family: str, params: dict[str, Any]) -> float:
    """MiB the solve allocated at its peak, beyond the kernel stack it was given."""
    tracemalloc.start()
    try:
        solve_once(data, solver, family, params)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def measure(data: dict[str, Any], solver: str, family: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        result, wall = solve_once(data, solver, family, params)
    except Exception as exc:  # a benchmark records failures, it does not stop on them
        return {"solver": solver, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
    history = [(row.time, row.objective) for row in result.history]
    weights = result.kernel_weights
    run = {
        "solver": solver, "status": result.status, "objective": result.objective,
        "gap": result.gap, "n_iter": result.n_iter, "time": result.time, "wall": wall,
        "kernel_passes": result.counters.get("kernel_passes"),
        "selected": None if weights is None else int(np.sum(np.asarray(weights) > 1e-6)),
        "accuracy": accuracy(data["K_test"], data["y_test"], result.coef, result.intercept),
        "history": history,
        "peak_mib": peak_memory(data, solver, family, params),
    }
    return run


def optimum_of(runs: list[dict[str, Any]]) -> tuple[float | None, str]:
    """``P*``: cvxpy's certified optimum, or, where Clarabel could not certify one, the lowest
    objective of a solver that certified a gap of at most 1e-7 (within 1e-7 of ``P*``)."""
    reference = runs[0]
    if reference.get("status") == "converged":
        return reference["objective"], "cvxpy"
    certified = [r for r in runs[1:] if r.get("status") == "converged" and r.get("gap", 1) <= 1e-7]
    if not certified:
        return None, "none (cvxpy did not certify, no solver certified 1e-7)"
    best = min(certified, key=lambda r: r["objective"])
    return best["objective"], f"{best['solver']} (certified gap {best['gap']:.1e}; cvxpy: {reference.get('status')})"


def average_kernel_svm(data: dict[str, Any], C: float) -> dict[str, Any]:
    """scikit-learn's SVC on the mean kernel: the baseline every MKL paper reports."""
    from sklearn.svm import SVC

    K, K_test = data["K"].mean(axis=0), data["K_test"].mean(axis=0)
    start = time.perf_counter()
    model = SVC(kernel="precomputed", C=C).fit(K, data["y_train"])
    seconds = time.perf_counter() - start
    return {"solver": "average-kernel SVM (sklearn)", "time": seconds,
            "accuracy": float(np.mean(model.predict(K_test) == data["y_test"])),
            "selected": int(data["K"].shape[0])}


def mklpy_runs(data: dict[str, Any], C: float, iterative: bool) -> dict[str, Any]:
    """MKLpy's algorithms on the same kernels; without ``iterative``, not the three that always
    take 1000 steps (GRAM, MEMO, RMKL: seconds to a minute each)."""
    try:
        from mklpy_peer import MKLPY_ALGORITHMS, mklpy_status, run_mklpy
    except ImportError as exc:
        return {"status": {"available": False, "reason": f"benchmarks/mklpy_peer.py: {exc}"}, "runs": []}
    status = mklpy_status()
    if not status["available"]:
        return {"status": status, "runs": []}
    return {"status": status, "runs": [
        run_mklpy(name, data["K"], data["y_train"], data["K_test"], data["y_test"], C=C)
        for name in MKLPY_ALGORITHMS if iterative or name not in ITERATIVE_MKLPY]}


def study(name: str, cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    data = problem_data(name, cfg["single_features"], seed)
    M, N = data["K"].shape[:2]
    log(f"{name}: N = {N}, M = {M}")
    families = {}
    for family_label, (params, solvers) in FAMILIES.items():
        family = family_label.split()[0]
        runs = [measure(data, s, family, params) for s in ("cvxpy",) + solvers]
        optimum, source = optimum_of(runs)
        for run in runs:
            if optimum is not None and "history" in run:
                run["time_to"] = {str(level): run["time"] if run is runs[0] and source == "cvxpy"
                                  else time_to(run["history"], optimum, level) for level in LEVELS}
            log(f"  {family_label:18s} {run['solver']:12s} {run.get('status')}: "
                f"{fmt(run.get('time'))} s, accuracy {fmt(run.get('accuracy'))}")
        families[family_label] = {"params": params, "optimum": optimum, "optimum_source": source,
                                  "runs": runs}
    return {"name": name, "N": N, "M": M, "n_test": int(data["y_test"].size),
            "families": families, "average": average_kernel_svm(data, FAMILIES["l1_mkl_sq"][0]["C"]),
            "mklpy": mklpy_runs(data, FAMILIES["l1_mkl_sq"][0]["C"], cfg["mklpy_iterative"])}


# ------------------------------------------------------------------------------ tables
def _run(study: dict[str, Any], family: str, solver: str) -> dict[str, Any]:
    return next((r for r in study["families"][family]["runs"] if r["solver"] == solver), {})


def _time_to(run: dict[str, Any], level: float) -> float | None:
    return (run.get("time_to") or {}).get(str(level))


def _studies(payload: dict[str, Any], name: str | None) -> list[dict[str, Any]]:
    studies = [study for study in payload["studies"] if name in (None, study["name"])]
    if not studies:
        raise SystemExit(f"no set {name!r} (sets: {', '.join(s['name'] for s in payload['studies'])})")
    return studies


def _family_rows(payload: dict[str, Any], name: str | None) -> list[list[Any]]:
    """The rows of :func:`family_table` (columns :data:`FAMILY_COLUMNS`), for every set or set ``name``."""
    rows = []
    for study in _studies(payload, name):
        for family, entry in study["families"].items():
            reference = _run(study, family, "cvxpy")
            simple = _run(study, family, "simplemkl")
            for run in entry["runs"]:
                to6 = _time_to(run, 1e-6)
                rows.append([
                    study["name"], family, run["solver"], run.get("status"),
                    _time_to(run, 1e-3), to6,
                    ratio_cell(reference, _time_to(reference, 1e-6), run, to6)
                    if run["solver"] != "cvxpy" else None,
                    ratio_cell(simple, _time_to(simple, 1e-6), run, to6)
                    if simple and run["solver"] != "simplemkl" else None,
                    run.get("accuracy"), run.get("selected"), run.get("kernel_passes"),
                    run.get("peak_mib"),
                ])
    return rows


def family_table(payload: dict[str, Any], name: str | None = None) -> str:
    """Every solver on every family and set (or on set ``name``): times, ratios, accuracy, cost."""
    return markdown_table(FAMILY_COLUMNS, _family_rows(payload, name))


FAMILY_COLUMNS = ["set", "family", "solver", "status", "s to 1e-3", "s to 1e-6", "speed-up over cvxpy",
                  "speed-up over SimpleMKL", "accuracy", "kernels", "kernel passes", "peak MiB"]


def _family_columns(payload: dict[str, Any], name: str, columns: list[str]) -> str:
    """Some columns of :func:`family_table` for one set: the table split to fit a page's width."""
    keep = [FAMILY_COLUMNS.index(column) for column in columns]
    return markdown_table(columns, [[row[i] for i in keep] for row in _family_rows(payload, name)])


def times_table(payload: dict[str, Any], name: str) -> str:
    """One set's times to 1e-3 and 1e-6 and the peers' times over them."""
    return _family_columns(payload, name, ["family", "solver", "s to 1e-3", "s to 1e-6", "speed-up over cvxpy",
                                           "speed-up over SimpleMKL"])


def results_table(payload: dict[str, Any], name: str) -> str:
    """One set's status, accuracy, kernels selected and cost of each run."""
    return _family_columns(payload, name, ["family", "solver", "status", "accuracy", "kernels",
                                           "kernel passes", "peak MiB"])


def baselines_table(payload: dict[str, Any]) -> str:
    """Accuracy and time of the baselines and MKLpy beside kernelfuse's l1_mkl_sq solution."""
    rows = []
    for study in payload["studies"]:
        mirror = _run(study, "l1_mkl_sq", "mirror-vskl")
        rows.append([study["name"], "kernelfuse mirror-vskl (l1_mkl_sq)", mirror.get("time"),
                     mirror.get("accuracy"), mirror.get("selected")])
        average = study["average"]
        rows.append([study["name"], average["solver"], average["time"], average["accuracy"],
                     average["selected"]])
        for run in study["mklpy"]["runs"]:
            rows.append([study["name"], f"MKLpy {run['algorithm']}", run.get("time"),
                         run.get("accuracy"), run.get("selected_kernels")])
    return markdown_table(["set", "method", "fit time (s)", "accuracy", "kernels"], rows)


def headline_table(payload: dict[str, Any]) -> str:
    """README's table: the SimpleMKL problem, kernelfuse against SimpleMKL and cvxpy."""
    rows = []
    for study in payload["studies"]:
        mirror = _run(study, "l1_mkl_sq", "mirror-vskl")
        simple = _run(study, "l1_mkl_sq", "simplemkl")
        reference = _run(study, "l1_mkl_sq", "cvxpy")
        spicy = _run(study, "l1_mkl (logistic)", "spicymkl")
        to6 = _time_to(mirror, 1e-6)
        rows.append([f"{study['name']} ({study['N']} x {study['M']})", to6,
                     ratio_cell(simple, _time_to(simple, 1e-6), mirror, to6),
                     ratio_cell(reference, _time_to(reference, 1e-6), mirror, to6),
                     _time_to(spicy, 1e-6), mirror.get("accuracy"), study["average"]["accuracy"]])
    return markdown_table(
        ["set (N x M)", "mirror-vskl s to 1e-6", "vs SimpleMKL", "vs cvxpy",
         "spicymkl (logistic) s to 1e-6", "accuracy", "average-kernel SVM"], rows)


TABLES = {"families": family_table, "times": times_table, "results": results_table,
          "baselines": baselines_table, "headline": headline_table}


#: The stochastic solvers run a fixed number of epochs: they are read at 1e-3.
STOCHASTIC = ("obscure", "pegasos-mkl")


def draw_times(payload: dict[str, Any], path: Path) -> Path | None:
    """The headline as a picture: seconds to 1e-6 of the optimum (the stochastic solvers: 1e-3),
    each solver beside cvxpy, one panel per set."""
    if not have_matplotlib():
        return None
    import matplotlib.pyplot as plt

    def level(solver: str) -> float:
        return 1e-3 if solver in STOCHASTIC else 1e-6

    studies = payload["studies"]
    columns = min(2, len(studies))  # two panels a row: legible in a page's content column
    rows = -(-len(studies) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4.2 * rows), sharex=True, sharey=True,
                             squeeze=False)
    pairs = [(family, run["solver"]) for family, entry in studies[0]["families"].items() for run in entry["runs"]]
    for ax in axes.flat[len(studies):]:
        ax.set_visible(False)
    for ax, study in zip(axes.flat, studies):
        for y, (family, solver) in enumerate(pairs):
            seconds = _time_to(_run(study, family, solver), level(solver))
            if seconds is None:
                ax.text(0.02, y, "not reached", fontsize=6, va="center", color="gray",
                        transform=ax.get_yaxis_transform())
            else:
                ax.barh(y, seconds, color="tab:gray" if solver == "cvxpy" else "tab:blue")
        ax.set_xscale("log")
        ax.set_title(f"{study['name']} (N={study['N']}, M={study['M']})", fontsize=9)
        ax.set_xlabel("seconds (log)")
        ax.tick_params(labelbottom=True, labelsize=8)  # every panel its own seconds, not the bottom row's only
    labels = [f"{family}: {solver}" + (" (to 1e-3)" if solver in STOCHASTIC else "") for family, solver in pairs]
    axes[0][0].set_yticks(range(len(pairs)), labels)
    axes[0][0].invert_yaxis()
    return save_figure(fig, path)


#: Figures ``benchmarks/report.py`` draws from the JSON, as ``<json stem>_<name>.png``.
FIGURES = {"times": draw_times}


def draw(payload: dict[str, Any], path: Path) -> Path | None:
    if not have_matplotlib():
        return None
    import matplotlib.pyplot as plt

    studies = payload["studies"]
    fig, axes = plt.subplots(len(studies), 3, figsize=(13, 3.2 * len(studies)), squeeze=False)
    for row, study in zip(axes, studies):
        for ax, family in zip(row, ("l1_mkl_sq", "l1_mkl (logistic)", "pnorm_mkl")):
            entry = study["families"][family]
            ax.set_title(f"{study['name']}: {family}", fontsize=9)
            if entry["optimum"] is None:  # said in the panel, not left empty
                why = entry.get("optimum_source", "").removeprefix("none (").removesuffix(")")
                ax.text(0.5, 0.5, "no reference optimum P*:\n" + why.replace(", ", ",\n"),
                        ha="center", va="center", fontsize=9, color="gray", transform=ax.transAxes)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            for run in entry["runs"]:
                if run["solver"] == "cvxpy" or "history" not in run:
                    continue
                points = [(t, max((p - entry["optimum"]) / max(1.0, abs(entry["optimum"])), 1e-12))
                          for t, p in run["history"] if t > 0]
                if points:
                    ax.loglog(*zip(*points), label=run["solver"])
            cvxpy = _run(study, family, "cvxpy")
            if "time" in cvxpy:
                ax.axvline(cvxpy["time"], color="gray", linestyle=":", label="cvxpy")
            ax.set_xlabel("seconds")
            ax.set_ylabel("(P - P*) / max(1, |P*|)")
            ax.legend(fontsize=7)
    return save_figure(fig, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sets, five single features")
    parser.add_argument("--seed", type=int, default=0, help="split seed")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    mode = "quick" if args.quick else "full"
    cfg = CONFIGS[mode]
    out = args.out or RESULTS_DIR / f"peers{'_quick' if args.quick else ''}.json"
    start = time.perf_counter()
    studies = [study(name, cfg, args.seed) for name in sets_to_run(cfg)]
    payload = {"benchmark": "peers", "mode": mode, "seed": args.seed, "config": cfg,
               "families": {k: v[0] for k, v in FAMILIES.items()}, "settings": SETTINGS,
               "levels": LEVELS, "machine": machine_info(), "studies": studies,
               "seconds": time.perf_counter() - start}
    save_results(out, payload, lambda png: draw(payload, png))
    for name in ("families", "baselines", "headline"):  # times, results: families' columns per set
        print(f"\n### {name}\n\n{TABLES[name](payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
