"""SpicyMKL with the kernel stack on a GPU against the CPU of the same machine (issue 30).

Run on a machine with a GPU (about 5 minutes on an H200 with 16 cores)::

    python3 benchmarks/gpu.py --device cuda --out benchmarks/results [--xp torch|cupy]

and ``--device cpu --smoke`` anywhere (tiny sizes, seconds; writes ``gpu_smoke.json``,
never committed).  The stack is an array of ``--xp`` (PyTorch by default, or CuPy) on the
device; kernelfuse reads it there (:mod:`kernelfuse.kernels.array_backend`).  Three parts:

(a) **Breast cancer, 455 x 837**: the papers' kernel grid (:mod:`kernelfuse.frontends.kernel_grid`,
    unit trace) on scikit-learn's breast cancer (the main job's 455 training points), family
    ``l1_mkl``, C = 0.5, logistic and hinge, ``spicymkl`` to a certified relative gap of 1e-6:
    the float64 stack on the GPU (with PyTorch on CUDA also with the line search called, not
    replayed as a CUDA graph), and the NumPy stack on one CPU core and on every core
    (the solver's ``blas_threads``: 1, its default, or the CPU count; ``threadpoolctl``).
    Wall time of ``kernelfuse.solve`` (validation
    with ``check_psd=False`` included, the stack already in place); runs under 2 s are
    repeated three times and the median kept, the GPU's after one warm-up solve.  The
    one-core hinge run is skipped when the time budget left cannot hold it (estimated from
    the all-core run and the one-core/all-core ratio of the logistic runs).
(b) **N = 20,000, M = 20 Gaussians on feature groups, float32, built on the GPU**: Breiman's
    ringnorm (two classes of 20 Gaussian features: class +1 ``N(0, 4 I)``, class -1
    ``N(a 1, I)`` with ``a = 2 / sqrt(20)``, equal priors; a generator, so any N), seeded
    and standardised; kernel ``m`` is a Gaussian on a random group of features (size
    uniform in 1..20, width ``5 chi2(1) + 0.1``, as SpicyMKL's section 5.2), divided by N
    (unit trace), computed on the GPU in float64 and stored in float32 (32 GB); ``spicymkl``
    with the logistic loss, C = 0.05, to a certified gap of 1e-3.  Times: building the
    stack, and the solve.
(c) **N = 1,000,000, M = 20 Nystrom kernels of rank 100, distributed, on one GPU**: the data and
    kernels of ``benchmarks/distributed_solve.py`` (ringnorm generated on the workers), one Dask
    worker in this process with a thread per core, blocks of 100,000 rows whose features the
    workers compute on the CPU and move to the GPU (``partition_features(to_device=...)``), then
    ``l1_mkl`` with the logistic loss (``C = 0.01``, ``C2 = 0.001``) to a certified gap of 1e-3.
    Times: the features' build, and the solve.

Targets: (a) at least 20x faster than one CPU core; (b) at most 10 s; (c) the solve in at most
60 s.  Recorded in the
JSON: the machine (GPU, CPU count), library versions, the commit (``--commit`` when the copy
has no git), and each run's status, gap, objective, time, passes and Newton steps; for PyTorch
on CUDA also the host synchronisations of one more (untimed) device solve, as its sync debug
mode counts them.
``python benchmarks/report.py`` renders the table of docs/scaling.md from ``gpu.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import fmt, markdown_table  # noqa: E402

#: Sizes and budgets, full and smoke.
FULL = {"breast_cancer_rows": None, "widths": None, "degrees": None, "ringnorm_N": 20_000,
        "ringnorm_M": 20, "features_N": 1_000_000, "budget": 480.0}
SMOKE = {"breast_cancer_rows": 120, "widths": (0.5, 5.0), "degrees": (1,), "ringnorm_N": 300,
         "ringnorm_M": 5, "features_N": 4_000, "budget": 90.0}
#: (c) the distributed solve's blocks: rows each, and the solve's time target (seconds).
FEATURE_BLOCK_ROWS, FEATURES_TARGET = 100_000, 60.0
C_GRID, C_RINGNORM = 0.5, 0.05
TOL_GRID, TOL_RINGNORM = 1e-6, 1e-3
#: Runs shorter than this (seconds) are repeated three times; the median is kept.
REPEAT_BELOW = 2.0


def log(message: str) -> None:
    print(f"[gpu.py {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Device:
    """The array library (``--xp``) on ``--device``: moving arrays there and waiting for it."""

    def __init__(self, xp_name: str, device: str) -> None:
        self.name, self.device = xp_name, device
        if xp_name == "torch":
            import torch

            self.lib, self.dev = torch, torch.device(device)
            if self.dev.type == "cpu":  # smoke runs: small matrices, a thread pool only waits
                torch.set_num_threads(1)
        elif xp_name == "cupy":
            if device != "cuda":
                raise SystemExit("--xp cupy runs on --device cuda only")
            import cupy

            self.lib, self.dev = cupy, None
        elif xp_name == "strict":  # array-api-strict: the generic path on the CPU (tests)
            if device != "cpu":
                raise SystemExit("--xp strict runs on --device cpu only")
            import array_api_strict

            self.lib, self.dev = array_api_strict, None
        else:
            raise SystemExit(f"unknown --xp {xp_name!r}")

    @property
    def records_graphs(self) -> bool:
        """Whether SpicyMKL's line search is replayed as a graph here (PyTorch on CUDA)."""
        return self.name == "torch" and self.dev.type == "cuda"

    def put(self, a: np.ndarray) -> Any:
        if self.name == "torch":
            return self.lib.asarray(a, device=self.dev)
        return self.lib.asarray(a)

    def synchronize(self) -> None:
        if self.name == "torch" and self.dev.type == "cuda":
            self.lib.cuda.synchronize()
        elif self.name == "cupy":
            self.lib.cuda.Device().synchronize()

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"xp": self.name, "device": self.device}
        if self.name == "torch" and self.dev.type == "cuda":
            props = self.lib.cuda.get_device_properties(0)
            info.update(gpu=props.name, gpu_memory_gb=round(props.total_memory / 2**30, 1),
                        cuda=self.lib.version.cuda)
        elif self.name == "cupy":
            props = self.lib.cuda.runtime.getDeviceProperties(0)
            info.update(gpu=props["name"].decode(), gpu_memory_gb=round(props["totalGlobalMem"] / 2**30, 1),
                        cuda=self.lib.cuda.runtime.runtimeGetVersion())
        return info

    def free(self) -> None:
        """Return cached device memory between parts."""
        import gc

        gc.collect()
        if self.name == "torch" and self.dev.type == "cuda":
            self.lib.cuda.empty_cache()
        elif self.name == "cupy":
            self.lib.get_default_memory_pool().free_all_blocks()


def solve_once(K: Any, y: np.ndarray, loss: str, C: float, tol: float, time_limit: float,
               device: Device | None, threads: int = 1) -> dict[str, Any]:
    """One ``spicymkl`` solve on ``threads`` BLAS threads, timed wall-clock (the device waited for)."""
    import kernelfuse

    if device is not None:
        device.synchronize()
    start = time.perf_counter()
    r = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=C, tol=tol,
                         time_limit=time_limit, blas_threads=threads, check_psd=False)
    if device is not None:
        device.synchronize()
    wall = time.perf_counter() - start
    return {"status": r.status, "gap": float(r.gap), "objective": float(r.objective),
            "dual_objective": float(r.dual_objective), "wall": wall, "time": float(r.time),
            "n_iter": int(r.n_iter), "passes": float(r.counters.get("kernel_passes", math.nan)),
            "newton_steps": int(r.counters.get("newton_steps", 0)),
            "active_kernels": int(np.count_nonzero(np.any(r.coef != 0, axis=1)))}


def timed(K: Any, y: np.ndarray, loss: str, C: float, tol: float, time_limit: float,
          device: Device | None = None, warm_up: bool = False, threads: int = 1) -> dict[str, Any]:
    """:func:`solve_once`, after a warm-up solve when asked, three times (median) when short."""
    if warm_up:
        solve_once(K, y, loss, C, tol, time_limit, device, threads)
    runs = [solve_once(K, y, loss, C, tol, time_limit, device, threads)]
    if runs[0]["wall"] < REPEAT_BELOW:
        runs += [solve_once(K, y, loss, C, tol, time_limit, device, threads) for _ in range(2)]
    run = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
    return {**run, "walls": [r["wall"] for r in runs]}


@contextlib.contextmanager
def without_graphs() -> Iterator[None]:
    """Device solves with their line search called, not replayed as a graph."""
    from kernelfuse.kernels import array_backend

    recorder = array_backend.graph_recorder
    array_backend.graph_recorder = lambda x: None
    try:
        yield
    finally:
        array_backend.graph_recorder = recorder


def host_syncs(K: Any, y: np.ndarray, loss: str, C: float, tol: float, time_limit: float,
               device: Device) -> dict[str, Any] | None:
    """The host synchronisations of one untimed device solve, as PyTorch on CUDA counts them (its
    sync debug mode warns at each), beside its Newton steps, and where they come from: the
    kernelfuse line that led to each (outside the array backend, whose transfers every caller
    shares) and the library line that synchronised, the most frequent first; None elsewhere."""
    if device.name != "torch" or device.dev.type != "cuda":
        return None
    import collections
    import traceback
    import warnings

    torch = device.lib
    sites: collections.Counter[str] = collections.Counter()

    def record(message: Any, *args: Any, **kwargs: Any) -> None:
        if "synchroniz" not in str(message):
            return
        frames = [f for f in traceback.extract_stack()[:-1] if "warnings" not in f.filename]
        ours = [f for f in frames if ("kernelfuse" in f.filename or "/core/" in f.filename
                                      or "/plugins/" in f.filename) and "array_backend" not in f.filename]
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno} {ours[-1].line}" if ours else "?"
        sites[f"{where} <- {Path(frames[-1].filename).name}:{frames[-1].lineno}"] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run = solve_once(K, y, loss, C, tol, time_limit, device)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = sum(sites.values())
    return {"syncs": syncs, "newton_steps": run["newton_steps"],
            "per_step": syncs / max(1, run["newton_steps"]), "sites": dict(sites.most_common(25))}


def breast_cancer(cfg: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The unit-trace kernel grid on the 455 breast-cancer training points (smoke: fewer)."""
    from kernelfuse.frontends.demo import breast_cancer_split
    from kernelfuse.frontends.kernel_grid import GAUSSIAN_WIDTHS, POLYNOMIAL_DEGREES, kernel_grid
    from kernelfuse.kernels.functions import compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer

    X, _, y, _, _ = breast_cancer_split(0)
    if cfg["breast_cancer_rows"] is not None:
        X, y = X[:cfg["breast_cancer_rows"]], y[:cfg["breast_cancer_rows"]]
    specs = kernel_grid(X.shape[1], widths=cfg["widths"] or GAUSSIAN_WIDTHS,
                        degrees=cfg["degrees"] or POLYNOMIAL_DEGREES)
    return KernelNormalizer("unit-trace").fit(specs, X).transform(compute_kernels(specs, X)), y


def part_grid(cfg: dict[str, Any], device: Device, deadline: float) -> dict[str, Any]:
    """(a): the grid stack on the device, on one core and on every core."""
    log("(a) building the breast-cancer kernel grid (NumPy, CPU)")
    K, y = breast_cancer(cfg)
    N, M = K.shape[1], K.shape[0]
    log(f"(a) stack {M} x {N} x {N}, {K.nbytes / 2**30:.2f} GiB float64")
    K_dev = device.put(K)
    runs: dict[str, Any] = {}
    for loss in ("logistic", "hinge"):
        runs[loss] = {}
        limit = max(1.0, deadline - time.monotonic())
        log(f"(a) {loss}: device")
        runs[loss]["device"] = timed(K_dev, y, loss, C_GRID, TOL_GRID, limit, device, warm_up=True)
        log(f"(a) {loss}: device {runs[loss]['device']['wall']:.3f} s, {runs[loss]['device']['status']}")
        runs[loss]["device"]["host_syncs"] = host_syncs(K_dev, y, loss, C_GRID, TOL_GRID,
                                                        max(1.0, deadline - time.monotonic()), device)
        if device.records_graphs:  # what the line search's graph is worth: the same solves without it
            with without_graphs():
                runs[loss]["device_no_graph"] = timed(K_dev, y, loss, C_GRID, TOL_GRID,
                                                      max(1.0, deadline - time.monotonic()), device, warm_up=True)
            log(f"(a) {loss}: device without the graph {runs[loss]['device_no_graph']['wall']:.3f} s")
        if not cfg["cpu_runs"]:
            continue
        runs[loss]["cpu_all"] = timed(K, y, loss, C_GRID, TOL_GRID, max(1.0, deadline - time.monotonic()),
                                      threads=os.cpu_count() or 1)
        log(f"(a) {loss}: all {os.cpu_count()} cores {runs[loss]['cpu_all']['wall']:.3f} s")
        estimate = runs[loss]["cpu_all"]["wall"] * _one_core_ratio(runs)
        if time.monotonic() + estimate > deadline:
            runs[loss]["cpu_one"] = {"status": "skipped", "estimate": estimate,
                                     "reason": f"estimated {estimate:.0f} s, beyond the time budget"}
            log(f"(a) {loss}: one core skipped (estimated {estimate:.0f} s)")
            continue
        runs[loss]["cpu_one"] = timed(K, y, loss, C_GRID, TOL_GRID, max(1.0, deadline - time.monotonic()))
        log(f"(a) {loss}: one core {runs[loss]['cpu_one']['wall']:.3f} s")
    del K_dev
    device.free()
    return {"N": N, "M": M, "C": C_GRID, "tol": TOL_GRID, "stack_gb": K.nbytes / 1e9, "runs": runs}


def _one_core_ratio(runs: dict[str, Any]) -> float:
    """One-core over all-core time of the runs so far (2 before any: the first run is the measure)."""
    ratios = [r["cpu_one"]["wall"] / r["cpu_all"]["wall"] for r in runs.values()
              if "wall" in r.get("cpu_one", {}) and "wall" in r.get("cpu_all", {})]
    return max(ratios) if ratios else 2.0


def ringnorm(N: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Breiman's ringnorm at any N (see the module docstring), standardised."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(N) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(N, 20))
    X[y > 0] *= 2.0
    X[y < 0] += 2.0 / math.sqrt(20.0)
    return (X - X.mean(0)) / X.std(0), y


def feature_groups(M: int, seed: int = 0) -> list[Any]:
    """``M`` Gaussian specs on random feature groups (size uniform in 1..20, width 5 chi2(1) + 0.1)."""
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.plugins.kernels.gaussian import Gaussian

    rng = np.random.default_rng(seed)
    specs = []
    for m in range(M):
        cols = np.sort(rng.choice(20, size=rng.integers(1, 21), replace=False))
        specs.append(KernelSpec(Gaussian(width=float(5.0 * rng.chisquare(1) + 0.1)), tuple(cols), m))
    return specs


def part_large(cfg: dict[str, Any], device: Device, deadline: float) -> dict[str, Any]:
    """(b): N = 20,000, M = 20 Gaussians built on the device in float32, solved to 1e-3."""
    from kernelfuse.kernels.functions import compute_kernels

    N, M = cfg["ringnorm_N"], cfg["ringnorm_M"]
    X, y = ringnorm(N)
    specs = feature_groups(M)
    log(f"(b) building {M} Gaussian kernels of {N} x {N} on the device (float32)")
    device.synchronize()
    start = time.perf_counter()
    K = compute_kernels(specs, device.put(X), dtype=np.float32, memory_budget=2**40)
    K /= N  # unit trace: every Gaussian has k(x, x) = 1
    device.synchronize()
    build = time.perf_counter() - start
    log(f"(b) built in {build:.2f} s; solving (logistic, C = {C_RINGNORM}, gap {TOL_RINGNORM:g})")
    run = solve_once(K, y, "logistic", C_RINGNORM, TOL_RINGNORM, max(1.0, deadline - time.monotonic()), device)
    log(f"(b) {run['status']} in {run['wall']:.2f} s, gap {run['gap']:.2e}, {run['passes']:.1f} passes")
    del K
    device.free()
    return {"N": N, "M": M, "C": C_RINGNORM, "tol": TOL_RINGNORM, "dtype": "float32",
            "stack_gb": M * N * N * 4 / 1e9, "build": build, "run": run}


class Mover:
    """A NumPy block to the device, run on the Dask worker (picklable, unlike a lambda)."""

    def __init__(self, xp_name: str, device: str) -> None:
        self.xp_name, self.device = xp_name, device

    def __call__(self, block: np.ndarray) -> Any:
        if self.xp_name == "torch":
            import torch

            return torch.asarray(block, device=self.device)
        if self.xp_name == "cupy":
            import cupy

            return cupy.asarray(block)
        import array_api_strict

        return array_api_strict.asarray(block, device=array_api_strict.Device("device1"))


def part_features(cfg: dict[str, Any], device: Device, deadline: float) -> dict[str, Any]:
    """(c): the distributed solver on one GPU: ringnorm rows, 20 Nystrom kernels of rank 100 as
    in ``benchmarks/distributed_solve.py``, blocks moved to the device by the workers (one process,
    a thread per core), ``l1_mkl`` with the logistic loss to a certified 1e-3."""
    import distributed
    import distributed_solve as ds

    from kernelfuse.distributed.features import partition_features
    from kernelfuse.distributed.newton import DistributedNewton

    N = cfg["features_N"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=os.cpu_count() or 1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        X, y = ds.ringnorm_dask(N)
        X, y = X.rechunk((min(N, FEATURE_BLOCK_ROWS), X.shape[1])), y.rechunk(min(N, FEATURE_BLOCK_ROWS))
        log(f"(c) features of {N:,} rows on the device")
        start = time.perf_counter()
        data = partition_features(ds.kernel_specs(), X, y, client=client, rank=ds.RANK,
                                  to_device=Mover(device.name, device.device))
        build = time.perf_counter() - start
        log(f"(c) built in {build:.1f} s ({data.nbytes / 2**30:.1f} GiB); solving l1_mkl to {ds.TOL:g}")
        model = DistributedNewton(tol=ds.TOL, max_iter=200, time_limit=max(1.0, deadline - time.monotonic())).solve(
            data, "l1_mkl", loss="logistic", C=ds.C, C2=ds.C2)
        log(f"(c) {model.status} in {model.time:.1f} s, {model.passes} passes, gap {model.gap:.2e}")
        run = {"status": model.status, "gap": float(model.gap), "objective": float(model.objective),
               "wall": float(model.time), "passes": int(model.passes), "n_iter": int(model.n_iter)}
        del data
    device.free()
    return {"N": N, "M": len(ds.kernel_specs()), "rank": ds.RANK, "C": ds.C, "C2": ds.C2, "tol": ds.TOL,
            "block_rows": FEATURE_BLOCK_ROWS, "build": build, "run": run}


def targets(grid: dict[str, Any] | None, large: dict[str, Any] | None,
            features: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    checks = []
    for loss, runs in (grid or {}).get("runs", {}).items():
        device, one = runs.get("device", {}), runs.get("cpu_one", {})
        if "wall" in device and "wall" in one:
            speedup = one["wall"] / device["wall"]
            checks.append({"target": f"(a) {loss}: GPU at least 20x one CPU core (both {device['status']}, "
                                     f"{one['status']})",
                           "detail": f"{speedup:.1f}x",
                           "pass": bool(speedup >= 20 and device["status"] == "converged")})
    if large is not None:
        run = large["run"]
        checks.append({"target": f"(b) N = {large['N']:,}, M = {large['M']} to gap {large['tol']:g} in at most 10 s",
                       "detail": f"{run['wall']:.2f} s, {run['status']}",
                       "pass": bool(run["wall"] <= 10 and run["status"] == "converged")})
    if features is not None:
        run = features["run"]
        checks.append({"target": f"(c) N = {features['N']:,}, M = {features['M']} rank {features['rank']} features "
                                 f"on one GPU to gap {features['tol']:g} in at most {FEATURES_TARGET:g} s",
                       "detail": f"{run['wall']:.1f} s, {run['status']}",
                       "pass": bool(run["wall"] <= FEATURES_TARGET and run["status"] == "converged")})
    return checks


def machine(device: Device, commit: str | None) -> dict[str, Any]:
    info = common.machine_info()
    versions = info["versions"]
    for package in ("torch", "cupy-cuda13x", "cupy-cuda12x", "array-api-compat", "threadpoolctl"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    info.update(device.describe())
    info["git_commit"] = commit or info["git_commit"]  # a copied tree may carry a stale .git
    return info


# ------------------------------------------------------------------------ report


def table(payload: dict[str, Any]) -> str:
    """The GPU table of docs/scaling.md."""
    info = payload["machine"]
    where = f"{info.get('gpu', info.get('device'))} ({info.get('xp')}), {info.get('cpu_count')} CPU cores"
    rows = []
    grid = payload.get("grid")
    if grid is not None:
        for loss, runs in grid["runs"].items():
            for key, label in (("device", f"GPU ({info.get('xp')}, float64)"),
                               ("device_no_graph", f"GPU ({info.get('xp')}, float64), line search not replayed"),
                               ("cpu_all", f"CPU, {info.get('cpu_count')} cores"), ("cpu_one", "CPU, 1 core")):
                if key == "device_no_graph" and key not in runs:
                    continue
                run = runs.get(key, {})
                if "wall" not in run:
                    rows.append([f"breast cancer {grid['N']} x {grid['M']}", loss, label, run.get("status", "-"),
                                 "-", "-", "-", "-", run.get("reason", "")])
                    continue
                speed = runs.get("cpu_one", {}).get("wall")
                syncs = run.get("host_syncs")
                rows.append([f"breast cancer {grid['N']} x {grid['M']}", loss, label, run["status"],
                             f"{run['gap']:.1e}", fmt(run["passes"]), fmt(run["wall"]),
                             f"{syncs['syncs']:,} ({syncs['per_step']:.1f} a Newton step)" if syncs else "-",
                             f"{speed / run['wall']:.1f}x" if speed else "-"])
    large = payload.get("large")
    if large is not None:
        run = large["run"]
        rows.append([f"ringnorm {large['N']:,} x {large['M']} (float32, built in {fmt(large['build'])} s)",
                     "logistic", f"GPU ({info.get('xp')})", run["status"], f"{run['gap']:.1e}",
                     fmt(run["passes"]), fmt(run["wall"]), "-", "-"])
    features = payload.get("features")
    if features is not None:
        run = features["run"]
        rows.append([f"ringnorm {features['N']:,}, {features['M']} Nystrom kernels of rank {features['rank']} "
                     f"(distributed, built in {fmt(features['build'])} s)", "logistic",
                     f"GPU ({info.get('xp')}), one worker", run["status"], f"{run['gap']:.1e}",
                     fmt(run["passes"]), fmt(run["wall"]), "-", "-"])
    lines = [f"Machine: {where}.", "",
             markdown_table(("problem", "loss", "where", "status", "gap", "passes", "time (s)",
                             "host syncs", "vs 1 core"), rows), ""]
    lines += common.target_lines(payload["targets"])
    lines += [f"- **FAILED** part ({part}): {error}" for part, error in payload.get("errors", {}).items()]
    return "\n".join(lines)


TABLES = {"gpu": table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--xp", default="torch", choices=("torch", "cupy", "strict"),
                        help="the array library holding the stack (strict: array-api-strict, CPU)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds); writes gpu_smoke.json")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR,
                        help="the folder of the JSON (default benchmarks/results)")
    parser.add_argument("--commit", default=None,
                        help="the commit measured (recorded in place of the copy's own git HEAD)")
    parser.add_argument("--parts", default="grid,large,features",
                        help="comma-separated: grid, large, features")
    parser.add_argument("--no-cpu", action="store_true",
                        help="(a) on the device only (no speed-up: a look at its host synchronisations)")
    args = parser.parse_args(argv)
    cfg = {**(SMOKE if args.smoke else FULL), "cpu_runs": not args.no_cpu}
    start = time.monotonic()
    deadline = start + cfg["budget"]
    device = Device(args.xp, args.device)
    payload: dict[str, Any] = {"machine": machine(device, args.commit), "smoke": args.smoke,
                               "budget_s": cfg["budget"], "grid": None, "large": None, "features": None}
    log(f"machine: {payload['machine'].get('gpu', args.device)}, {os.cpu_count()} CPU cores, xp {args.xp}")
    runners = {"grid": part_grid, "large": part_large, "features": part_features}
    parts = [part for part in runners if part in args.parts.split(",")]
    path = args.out / ("gpu_smoke.json" if args.smoke else "gpu.json")
    for k, part in enumerate(parts):  # the JSON is written after each part: a failure later keeps the earlier
        # each later part keeps two minutes of the budget for itself
        until = deadline - (0.0 if args.smoke else 120.0 * (len(parts) - k - 1))
        try:
            payload[part] = runners[part](cfg, device, until)
        except Exception as exc:  # noqa: BLE001  (a benchmark records a failure, out of memory, ...)
            log(f"({part}) failed: {type(exc).__name__}: {exc}")
            payload["errors"] = {**payload.get("errors", {}), part: f"{type(exc).__name__}: {exc}"}
            device.free()
        payload["targets"] = targets(payload["grid"], payload["large"], payload["features"])
        payload["total_s"] = time.monotonic() - start
        common.write_json(path, payload)
    for line in common.target_lines(payload["targets"]):
        log(line)
    log(f"wrote {path} ({payload['total_s']:.0f} s in all)")
    return 1 if payload.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
