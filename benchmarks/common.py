"""Shared helpers for the kernelfuse benchmarks (not part of the library, not tests).

* loaders for the UCI sets of ``../shared/data`` (liver, wpbc, ionosphere,
  sonar) and the four pendigits views, and scikit-learn's bundled breast cancer,
  with a seeded 70/30 stratified split; a missing set is a :class:`DataUnavailable`
  whose message says how to get it;
* standardisation fitted on the training split only;
* Gaussian kernels on single features and on all features for a list of
  widths (``sigma = width * sqrt(#features used)``), each normalised to unit
  trace on the training set, the same factor applied to ``K(test, train)``;
* timing, SVM-call instrumentation, machine/library info, JSON writing,
  markdown tables and optional matplotlib plots.

Data handling choices (stated once, here):

* ``wpbc``: the 4 missing values of ``f32`` (lymph node status) are imputed
  with the mean of that column over the *training* split; all 33 features
  (including ``f0``, the time) are kept, the layout of the MKL literature
  (SimpleMKL's "Wpbc 198 x 34" counts the label).
* ``ionosphere``: the constant column ``f1`` is dropped (33 features).
* ``liver``: the usual MKL-literature target (``selector``), 6 features.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kernelfuse.runtime.files import atomic_write, write_png

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO.parent / "shared" / "data"
#: The small UCI sets shipped with the benchmarks (benchmarks/data/README.md: source, licence).
SHIPPED_DIR = Path(__file__).resolve().parent / "data"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The seed of the splits the estimators' defaults are chosen on (``benchmarks/default_choice.py``:
#: split ``k`` seeded ``CHOICE_SEED + k``).
CHOICE_SEED = 0
#: The seed of the published tables' splits (split ``k`` seeded ``REPORT_SEED + k``): splits no
#: choice of a default has seen.  5000 reported the previous defaults, whose failures there led
#: to the current ones: their tables come from 6000.
REPORT_SEED = 6000

UCI_SETS = ("liver", "wpbc", "ionosphere", "sonar")
PENDIGITS_VIEWS = ("dyn", "sta4", "sta8", "sta16")


# --------------------------------------------------------------------------- data


class DataUnavailable(SystemExit):
    """A data set that cannot be had on this machine; the message says how to get it.

    A ``SystemExit``: a script that needs the set stops with that message, and one that can
    do without it (``peers.py``) catches it, prints it and goes on with the others.
    """


#: The shared sets and where they come from (``../shared/data/README.md`` gives the files'
#: sources and licences): the line a script prints where a set is missing.
SHARED_SOURCES = {
    "liver": "UCI 'Liver Disorders' (the label: its 'selector' column)",
    "wpbc": "UCI 'Breast Cancer Wisconsin (Prognostic)'",
    "ionosphere": "UCI 'Ionosphere'",
    "sonar": "UCI 'Connectionist Bench (Sonar, Mines vs. Rocks)'",
    "pima": "UCI 'Pima Indians Diabetes'",
    "pendigits": "UCI 'Pen-Based Recognition of Handwritten Digits' (four views)",
    "ringnorm": "the IDA benchmark repository (Raetsch), 'ringnorm'",
    "titanic": "the IDA benchmark repository (Raetsch), 'titanic'",
    "yeast": "MULAN 'yeast'",
}


def _bundled_breast_cancer() -> tuple[np.ndarray, np.ndarray, list[str]]:
    from sklearn.datasets import load_breast_cancer

    X, target = load_breast_cancer(return_X_y=True)
    return X, np.where(target == 1, 1.0, -1.0), [f"f{j}" for j in range(X.shape[1])]


#: Binary sets scikit-learn ships with the package: always available (+1 = benign).
BUNDLED = {"breast-cancer": _bundled_breast_cancer}


#: Shared sets that scikit-learn's ``fetch_openml`` can also fetch (cached in
#: ``~/scikit_learn_data``) where ``../shared/data`` lacks them: name -> (OpenML name, version,
#: label column, its positive value).  Columns are renamed ``f0 ...`` in OpenML's order, which is
#: the shared CSV layout's.
OPENML: dict[str, tuple[str, int, str, str]] = {
    "ionosphere": ("ionosphere", 1, "class", "g"),
    "sonar": ("sonar", 1, "Class", "Mine"),
    "liver": ("liver-disorders", 1, "selector", "1"),
    "pima": ("diabetes", 1, "class", "tested_positive"),
}
_OPENML_CACHE: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, list[str]] | str] = {}


def fetch_openml_set(name: str, target: str | None = None
                     ) -> tuple[np.ndarray, np.ndarray, list[str]] | str:
    """The OpenML copy of the shared set ``name`` (:data:`OPENML`): features, the raw ``target``
    column (default: the label column) and the OpenML feature names; or, where it cannot be
    fetched (no internet), the reason as a string.  One try per process."""
    from sklearn.datasets import fetch_openml

    openml_name, version, label, _ = OPENML[name]
    key = (name, target or label)
    if key not in _OPENML_CACHE:
        try:
            with warnings.catch_warnings():  # scikit-learn warns before its retry
                warnings.simplefilter("ignore")
                bunch = fetch_openml(openml_name, version=version, target_column=target or label,
                                     as_frame=False, parser="liac-arff", n_retries=1, delay=0.1)
            _OPENML_CACHE[key] = (np.asarray(bunch.data, dtype=float), np.asarray(bunch.target),
                                  list(bunch.feature_names))
        except Exception as exc:  # noqa: BLE001 - any failure means "cannot be had here"
            _OPENML_CACHE[key] = (f"fetch_openml({openml_name!r}, version={version}) failed: "
                                  f"{type(exc).__name__}: {str(exc)[:120]}")
    return _OPENML_CACHE[key]


def set_dir(name: str) -> Path | None:
    """The folder of the set ``name``: in ``../shared/data``, else among the sets shipped with the
    benchmarks (:data:`SHIPPED_DIR`); None where neither has it."""
    for root in (DATA_DIR, SHIPPED_DIR):
        if (root / name).is_dir():
            return root / name
    return None


def missing_data(name: str) -> str | None:
    """None where the set ``name`` can be had here (``../shared/data``, the sets shipped in
    ``benchmarks/data``, scikit-learn's bundled sets, or OpenML for :data:`OPENML`'s); otherwise
    one line saying how to get it."""
    if name in BUNDLED or set_dir(name) is not None:
        return None
    fetched = fetch_openml_set(name) if name in OPENML else "not on OpenML under a known name"
    if not isinstance(fetched, str):
        return None
    source = SHARED_SOURCES.get(name, "the shared data")
    return (f"{name}: skipped, not in {DATA_DIR / name} (get the shared data sets as a folder "
            f"'shared/data' next to the repository, see its README.md; the set is {source}; "
            f"{fetched})")


def available_sets(names: Sequence[str]) -> list[str]:
    """The sets of ``names`` that can be had here, in order; one printed line for each that cannot
    (:func:`missing_data`: how to get it)."""
    present = []
    for name in names:
        missing = missing_data(name)
        if missing:
            print(missing, file=sys.stderr, flush=True)
        else:
            present.append(name)
    return present


def data_dir(name: str | None = None) -> Path:
    """The shared data folder (holding ``name`` where given), or :class:`DataUnavailable`
    saying where it was expected and how to get it."""
    if name is not None:
        missing = missing_data(name)
        if missing:
            raise DataUnavailable(missing)
    if not DATA_DIR.is_dir():
        raise DataUnavailable(
            f"benchmark data not found: expected the shared data sets in {DATA_DIR} "
            "(a folder 'shared/data' next to the repository, with liver/, wpbc/, "
            "ionosphere/, sonar/, pendigits/ ... as described in its README.md)"
        )
    return DATA_DIR


def _read_csv(path: Path) -> tuple[np.ndarray, list[str]]:
    if not path.is_file():
        raise DataUnavailable(f"benchmark data file missing: {path}")
    with path.open() as fh:
        header = fh.readline().strip().split(",")
    values = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=float)
    return values, header


def read_shared(name: str, target: str | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Features, labels +1/-1 (or the raw column ``target``, e.g. liver's ``f5``, dropped from
    the features) and feature names ``f0 ...`` of a set of ``../shared/data`` or
    ``benchmarks/data`` (:func:`set_dir`), else of its OpenML copy (:data:`OPENML`);
    :class:`DataUnavailable` where none can be had."""
    folder = set_dir(name)
    if folder is None and name in OPENML:
        fetched = fetch_openml_set(name, None if target is None else _openml_column(name, target))
        if isinstance(fetched, str):
            raise DataUnavailable(missing_data(name))
        X, raw, _ = fetched
        columns = [f"f{j}" for j in range(X.shape[1])]
        if target is not None:
            keep = [j for j in range(X.shape[1]) if j != _openml_label_index(name)]
            return X[:, keep], raw.astype(float), [columns[j] for j in keep]
        positive = OPENML[name][3]
        text = np.array([format(v, "g") if isinstance(v, (float, np.floating)) else str(v) for v in raw])
        return X, np.where(text == positive, 1.0, -1.0), columns
    if folder is None:
        raise DataUnavailable(missing_data(name))
    values, header = _read_csv(folder / "data.csv")
    if target is None:
        return values[:, :-1], values[:, -1], header[:-1]
    keep = [j for j, c in enumerate(header[:-1]) if c != target]
    return values[:, keep], values[:, header.index(target)], [header[j] for j in keep]


#: Shared feature columns that OpenML names otherwise: (set, shared name) -> OpenML column.
_OPENML_COLUMNS = {("liver", "f5"): "drinks"}


def _openml_column(name: str, target: str) -> str:
    return _OPENML_COLUMNS.get((name, target), target)


def _openml_label_index(name: str) -> int:
    """Where the label column sits among the features of an OpenML copy fetched with another
    target (liver's ``selector``, after the 5 features before ``drinks``): left out as a
    feature."""
    return {"liver": 5}.get(name, -1)


def load_uci(name: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Features (with NaN where missing), labels +1/-1 and feature names of a UCI set
    (``../shared/data``, or a set scikit-learn ships: :data:`BUNDLED`)."""
    if name in BUNDLED:
        return BUNDLED[name]()
    X, y, columns = read_shared(name)
    if name == "ionosphere":
        keep = [j for j, c in enumerate(columns) if c != "f1"]  # f1 is constant 0
        X, columns = X[:, keep], [columns[j] for j in keep]
    if not set(np.unique(y)) <= {-1.0, 1.0}:
        raise SystemExit(f"{name}: labels are not +1/-1")
    return X, y, columns


def ida_realisation(name: str, realisation: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and test rows of realisation ``realisation`` (1-10) of an IDA set of
    ``../shared/data`` (its ``splits.csv``: ``split,is_train,index``)."""
    splits = np.loadtxt(data_dir(name) / name / "splits.csv", delimiter=",", skiprows=1, dtype=int)
    rows = splits[splits[:, 0] == realisation]
    return rows[rows[:, 1] == 1, 2], rows[rows[:, 1] == 0, 2]


def stratified_split(y: np.ndarray, test_size: float = 0.3, seed: int = 0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified train/test indices (70/30 by default)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(y.shape[0])
    train, test = train_test_split(idx, test_size=test_size, stratify=y, random_state=seed)
    return np.sort(train), np.sort(test)


def standardise(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Impute NaN with the training-column mean, then z-score with training statistics."""
    mean = np.nanmean(X_train, axis=0)
    X_train = np.where(np.isnan(X_train), mean, X_train)
    X_test = np.where(np.isnan(X_test), mean, X_test)
    std = X_train.std(axis=0)
    std[std == 0] = 1.0
    return (X_train - mean) / std, (X_test - mean) / std


def uci_split(name: str, seed: int = 0, test_size: float = 0.3) -> dict[str, Any]:
    """Standardised 70/30 stratified split of a UCI set (training statistics only)."""
    X, y, columns = load_uci(name)
    train, test = stratified_split(y, test_size, seed)
    n_missing = int(np.isnan(X).sum())
    Xtr, Xte = standardise(X[train], X[test])
    return {"name": name, "X_train": Xtr, "y_train": y[train], "X_test": Xte,
            "y_test": y[test], "columns": columns, "n_missing_imputed": n_missing,
            "train_index": train, "test_index": test}


def load_pendigits(split: str = "train") -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The four pendigits views (rows aligned) and the digit labels 0..9."""
    views: dict[str, np.ndarray] = {}
    labels = None
    for view in PENDIGITS_VIEWS:
        values, _ = _read_csv(data_dir() / "pendigits" / f"{view}_{split}.csv")
        views[view] = values[:, :-1]
        if labels is None:
            labels = values[:, -1].astype(int)
        elif not np.array_equal(labels, values[:, -1].astype(int)):
            raise SystemExit(f"pendigits {split}: labels of view {view} differ from the others")
    assert labels is not None
    return views, labels


# ------------------------------------------------------------------------ kernels


def sq_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, clipped at 0."""
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.maximum(d, 0.0)


def gaussian_kernels(X_train: np.ndarray, X_test: np.ndarray | None,
                     specs: Sequence[tuple[Sequence[int] | None, float]]
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """Gaussian kernels ``exp(-||x - x'||^2 / (2 sigma^2))`` for ``(features, width)`` specs.

    ``features`` is a list of column indices (None = all columns);
    ``sigma = width * sqrt(len(features))``.  Each kernel is divided by its
    trace on the training set (unit trace); the test kernel ``K(test, train)``
    gets the same factor.  Returns ``(K_train (M, N, N), K_test (M, N_test, N))``.
    """
    M, N = len(specs), X_train.shape[0]
    K = np.empty((M, N, N))
    Kt = None if X_test is None else np.empty((M, X_test.shape[0], N))
    cache: dict[tuple[int, ...] | None, tuple[np.ndarray, np.ndarray | None]] = {}
    for m, (features, width) in enumerate(specs):
        key = None if features is None else tuple(features)
        if key not in cache:
            cols = slice(None) if key is None else list(key)
            Xa = X_train[:, cols]
            cache[key] = (sq_distances(Xa, Xa),
                          None if X_test is None else sq_distances(X_test[:, cols], Xa))
        D, Dt = cache[key]
        n_feat = X_train.shape[1] if key is None else len(key)
        sigma = width * math.sqrt(n_feat)
        np.exp(-D / (2.0 * sigma**2), out=K[m])
        scale = 1.0 / np.trace(K[m])
        K[m] *= scale
        if Kt is not None:
            np.exp(-Dt / (2.0 * sigma**2), out=Kt[m])
            Kt[m] *= scale
        if len(cache) > 4:  # keep memory small on many single-feature kernels
            cache.pop(next(iter(cache)))
    return K, Kt


def decision(K_test: np.ndarray, coef: np.ndarray, intercept: float) -> np.ndarray:
    """``f(x) = sum_m K_m(x, train) @ coef[m] + b``."""
    M, T, N = K_test.shape
    return np.einsum("mtn,mn->t", K_test, coef) + intercept


def accuracy(K_test: np.ndarray, y_test: np.ndarray, coef: np.ndarray, intercept: float) -> float:
    f = decision(K_test, coef, intercept)
    pred = np.where(f >= 0, 1.0, -1.0)
    return float(np.mean(pred == y_test))


# ------------------------------------------------------------------ instrumentation


class SVMProbe:
    """Counts and times top-level SVM solves (any back-end) and active-set fallbacks.

    Patches the solver classes for the duration of a ``with`` block; nested
    calls (the active-set solver's libsvm fallback) are not double-counted.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self.fallbacks = 0
        self.fallback_seconds = 0.0
        self.durations: list[float] = []
        self._depth = 0

    @contextlib.contextmanager
    def active(self) -> Iterator[SVMProbe]:
        from kernelfuse.plugins.svm.active_set import ActiveSetSVM
        from kernelfuse.plugins.svm.libsvm import LibSVM
        from kernelfuse.plugins.svm.osqp_qp import OSQPSolver

        originals = {cls: cls.solve for cls in (ActiveSetSVM, LibSVM, OSQPSolver)}
        original_fallback = ActiveSetSVM._fallback
        probe = self

        def fallback(self: Any, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original_fallback(self, *args, **kwargs)
            finally:
                probe.fallback_seconds += time.perf_counter() - t0

        def wrap(cls: type, original: Any) -> Any:
            def solve(self: Any, *args: Any, **kwargs: Any) -> Any:
                top = probe._depth == 0
                probe._depth += 1
                before = getattr(self, "fallbacks", 0) if cls is ActiveSetSVM else 0
                t0 = time.perf_counter()
                try:
                    return original(self, *args, **kwargs)
                finally:
                    probe._depth -= 1
                    if cls is ActiveSetSVM:
                        probe.fallbacks += getattr(self, "fallbacks", 0) - before
                    if top:
                        probe.calls += 1
                        probe.durations.append(time.perf_counter() - t0)
                        probe.seconds += probe.durations[-1]
            return solve

        for cls, original in originals.items():
            cls.solve = wrap(cls, original)  # type: ignore[method-assign]
        ActiveSetSVM._fallback = fallback  # type: ignore[method-assign]
        try:
            yield self
        finally:
            for cls, original in originals.items():
                cls.solve = original  # type: ignore[method-assign]
            ActiveSetSVM._fallback = original_fallback  # type: ignore[method-assign]


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that ended (the cvxpy reference forks its
    solve when it has a time limit)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """The CPU seconds process ``pid`` has used so far (Linux's /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_solver(K: np.ndarray, y: np.ndarray, solver: str, **kwargs: Any) -> dict[str, Any]:
    """``kernelfuse.solve`` with wall time and SVM instrumentation; never raises."""
    import kernelfuse

    probe = SVMProbe()
    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        with probe.active():
            r = kernelfuse.solve(K, y, solver=solver, **kwargs)
    except Exception as exc:  # a benchmark records failures, it does not stop on them
        return {"solver": solver, "status": "error", "error": f"{type(exc).__name__}: {exc}",
                "wall": time.perf_counter() - t0}
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    counters = {k: float(v) for k, v in r.counters.items()}
    weights = np.asarray(r.kernel_weights) if r.kernel_weights is not None else None
    return {
        "solver": solver, "status": r.status, "message": getattr(r, "message", ""),
        "objective": float(r.objective),
        "dual_objective": float(r.dual_objective), "gap": float(r.gap), "n_iter": int(r.n_iter),
        "time": float(r.time), "wall": wall, "cpu": cpu, "counters": counters,
        "svm_calls": counters.get("svm_calls", probe.calls),
        "kernel_passes": counters.get("kernel_passes", math.nan),
        "probe_svm_calls": probe.calls, "svm_seconds": probe.seconds,
        "svm_max_seconds": max(probe.durations, default=math.nan),
        "active_set_fallbacks": probe.fallbacks,
        "fallback_seconds": probe.fallback_seconds,
        "n_selected": None if weights is None else int(np.sum(weights > 1e-6)),
        "kernel_weights": None if weights is None else weights.tolist(),
        "_result": r,
    }


def timed_runs(K: np.ndarray, y: np.ndarray, solver: str, *, repeat_below: float = 1.0,
               repeats: int = 3, **kwargs: Any) -> dict[str, Any]:
    """:func:`run_solver`, repeated ``repeats`` times when a run takes under ``repeat_below`` s.

    Returns the run of median solver time (its history and timings together;
    the solvers are deterministic, so only the timings differ), with every
    run's time in ``times``.
    """
    first = run_solver(K, y, solver, **kwargs)
    if first.get("status") == "error" or first["wall"] >= repeat_below:
        first["times"] = [first.get("time")]
        return first
    runs = [first] + [run_solver(K, y, solver, **kwargs) for _ in range(repeats - 1)]
    median = sorted(runs, key=lambda r: r["time"])[len(runs) // 2]
    median["times"] = [r.get("time") for r in runs]
    return median


# ------------------------------------------------------------------------ reporting


def machine_info() -> dict[str, Any]:
    """Machine and library versions, for the JSON."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("numpy", "scipy", "scikit-learn", "cvxpy", "clarabel", "osqp", "kernelfuse",
                "matplotlib"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    cpu = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 1024**2, 1)
    blas = None
    with contextlib.suppress(Exception):
        cfg = np.show_config(mode="dicts")  # type: ignore[call-arg]
        blas = cfg.get("Build Dependencies", {}).get("blas", {}).get("name")
    commit = None
    with contextlib.suppress(Exception):
        import subprocess

        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=5).stdout.strip() or None
    load = None
    with contextlib.suppress(OSError, AttributeError):
        load = list(os.getloadavg())
    return {
        "loadavg_1_5_15min": load,
        "python": sys.version.split()[0], "platform": platform.platform(), "cpu": cpu,
        "cpu_count": os.cpu_count(), "memory_gb": mem, "blas": blas,
        "thread_env": {k: os.environ.get(k) for k in (
            "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
        "versions": versions, "git_commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if math.isfinite(value) else None  # strict JSON: nan/inf -> null
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    return obj


def save_results(out: Path, payload: dict[str, Any], draw: Any) -> None:
    """Draw the plot next to ``out`` (``draw(png_path)``, None without matplotlib), record its
    name in ``payload``, write the JSON and say where both went."""
    out.parent.mkdir(parents=True, exist_ok=True)
    png = draw(out.with_suffix(".png"))
    if png:
        payload["plot"] = png.name
    write_json(out, payload)
    print(f"raw measurements: {out}" + (f"; plot: {png}" if png else ""))


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "w") as handle:
        handle.write(json.dumps(_jsonable(payload), indent=1, allow_nan=False) + "\n")
    return path


def fmt(value: Any, digits: int = 3) -> str:
    """A compact cell: ints as ints, floats with ``digits`` significant digits."""
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.{digits - 1}e}"
        if abs(v) >= 10**digits:
            return f"{v:.0f}"
        return f"{v:.{digits}g}"
    return str(value)


def target_lines(checks: Sequence[dict[str, Any]]) -> list[str]:
    """An issue's targets as markdown bullets: ``- **PASS** target: detail``."""
    return [f"- **{'PASS' if c['pass'] else 'FAIL'}** {c['target']}: {c['detail']}" for c in checks]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[fmt(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def split_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], keys: Sequence[int],
                groups: Sequence[tuple[str, Sequence[int]]]) -> str:
    """A table too wide for the page's column as several narrower ones, one per column group.

    Each group is ``(lead, columns)``: a one-line lead above a table of the ``keys`` columns
    (what names a row) followed by ``columns`` (indices into ``headers``).  Every column that is
    not a key belongs to exactly one group, so no number is dropped or shown twice.
    """
    shown = sorted(i for _, columns in groups for i in columns)
    if shown != sorted(set(range(len(headers))) - set(keys)):
        raise ValueError(f"split_table: the groups {[c for _, c in groups]} with keys {list(keys)} "
                         f"must cover columns 0-{len(headers) - 1} once each")
    return "\n\n".join(
        lead + "\n\n" + markdown_table([headers[i] for i in [*keys, *columns]],
                                        [[row[i] for i in [*keys, *columns]] for row in rows])
        for lead, columns in groups)


def ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b


# ------------------------------------------------------------------ honest ratios
# A speed ratio compares two runs that both ended with their certified tolerance (status
# ``converged``).  A run that stalled, failed, hit a limit or ended without its tolerance is
# shown with its status and the gap it reached, and is left out of ratios and counts: it is
# never a win (nor a loss) of the other.


def ended_certified(run: dict[str, Any] | None) -> bool:
    """Whether ``run`` ended within its certified tolerance (status ``converged``)."""
    return bool(run) and run.get("status") == "converged"  # type: ignore[union-attr]


def outcome(run: dict[str, Any] | None) -> str:
    """How a run that did not end certified ended: ``"simplemkl stalled at gap 0.2"``."""
    if not run:
        return "not run"
    name = run.get("solver") or run.get("name") or "run"
    status = run.get("status", "no status")
    gap = run.get("gap")
    if status == "error" or not isinstance(gap, (int, float)) or not math.isfinite(gap):
        return f"{name} {status}"
    return f"{name} {status} at gap {gap:.2g}"


def speed_ratio(slow: dict[str, Any] | None, slow_seconds: float | None,
                fast: dict[str, Any] | None, fast_seconds: float | None) -> float:
    """``slow_seconds / fast_seconds`` where both runs ended certified; nan otherwise (left out)."""
    if not (ended_certified(slow) and ended_certified(fast)):
        return math.nan
    return ratio(slow_seconds, fast_seconds)


def ratio_cell(slow: dict[str, Any] | None, slow_seconds: float | None,
               fast: dict[str, Any] | None, fast_seconds: float | None) -> float | str:
    """A table cell: the :func:`speed_ratio`, or what ended the run(s) that did not end certified
    (``"simplemkl stalled at gap 0.2"``) in its place."""
    failed = [outcome(run) for run in (slow, fast) if not ended_certified(run)]
    return "; ".join(failed) if failed else ratio(slow_seconds, fast_seconds)


def count_at_least(factors: Sequence[float], threshold: float) -> tuple[int, int]:
    """``(k, n)``: of the ``n`` comparable factors (finite: both runs certified), ``k`` are at
    least ``threshold``; a left-out case (nan) counts in neither."""
    comparable = [f for f in factors if math.isfinite(f)]
    return sum(f >= threshold for f in comparable), len(comparable)


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out, write as PNG (atomically) and close a matplotlib figure."""
    fig.tight_layout()
    return write_png(fig, path, dpi=110)


def have_matplotlib() -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        return True
    except ImportError:
        return False


class Timer:
    """``with Timer() as t: ...; t.seconds``."""

    def __enter__(self) -> Timer:
        self._t0 = time.perf_counter()
        self.seconds = math.nan
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t0


@contextlib.contextmanager
def local_cluster(workers: int, malloc_trim: bool = True) -> Iterator[float]:
    """A joblib Dask backend on a LocalCluster of ``workers`` single-threaded processes, all
    started; yields the seconds the start took.  ``malloc_trim``: Dask's default worker
    environment; False: kernelfuse's (:func:`kernelfuse.distributed.cluster.local_cluster`)."""
    import joblib
    from distributed import Client

    from kernelfuse.distributed.cluster import local_cluster as start_cluster

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = start_cluster(workers, malloc_trim, processes=True, host="127.0.0.1")
    try:
        with Client(cluster) as client:
            client.wait_for_workers(workers)
            startup = time.perf_counter() - start
            with joblib.parallel_config(backend="dask"):
                yield startup
    finally:
        cluster.close()
