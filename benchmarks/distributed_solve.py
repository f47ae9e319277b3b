"""One MKL solve on a Dask cluster at N up to 10^6: time, passes, gap, memory per worker, accuracy.

``python benchmarks/distributed_solve.py [--quick] [--sizes 100000,300000,1000000] [--workers 2]``

(Not ``distributed.py``: that name would shadow Dask's ``distributed`` package for every script
run from this folder, and for the worker processes they start.)

Data: Breiman's ringnorm at d = 20 (class +1 ``N(0, 4 I)``, class -1 ``N(a 1, I)``,
``a = 2 / sqrt(20)``, equal priors), generated on the workers block by block (block ``k`` seeded
``k``; the test set of 20,000 rows seeded apart) and standardised by the mixture's exact mean
``a / 2`` and variance ``2.5 + a^2 / 4``, so no row ever passes through this process.  Kernels:
20 Gaussians, 19 on random feature groups (size uniform in 1..20, width ``5 chi2(1) + 0.1``, as
``benchmarks/gpu.py``) and one on all 20 features (width ``sqrt(20)``), each a Nystrom kernel of
rank 100 on landmarks sampled from 5,000 rows, unit trace.  Problem: ``l1_mkl`` with the logistic
loss at the classifier's defaults ``C = 0.01``, ``C2 = 0.001``, and ``pnorm_mkl`` with the hinge at
the classifier's defaults (``p = 1.5``, ``lam = 1 / N`` at unit diagonal, ``1 / N^2`` on these
unit-trace kernels), each solved by :class:`kernelfuse.distributed.newton.DistributedNewton` to a
certified gap of 1e-3 on a ``LocalCluster`` of ``--workers`` worker processes (one thread each),
blocks of 25,000 rows.

Per size: the features' build time, the solve's wall time, iterations, passes over the blocks,
status and gap, each worker's peak resident set (``ru_maxrss``) against its share of the feature
blocks, and the test accuracy.  Beside them: the time of one pass (``Phi v`` and ``Phi' rho``)
against a plain NumPy ``A @ v`` and ``A.T @ r`` over the same bytes in one process (measured on
a 1 GiB array, scaled by the bytes), the single-process factor solve (SpicyMKL on
``FactorKernels``) at N = 50,000 on the same generator and kernels, and a run at the smallest
size whose worker is killed (SIGKILL) after the second iteration.  Writes
``benchmarks/results/distributed_solve[_quick].json``; the table in docs/scaling.md is generated from
it (``python benchmarks/report.py``).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS_DIR, fmt, machine_info, split_table, target_lines, write_json  # noqa: E402

A = 2.0 / math.sqrt(20.0)
MEAN, STD = A / 2.0, math.sqrt(2.5 + A * A / 4.0)
BLOCK_ROWS = 25_000
TEST_ROWS = 20_000
RANK = 100
C, C2, TOL = 0.01, 0.001, 1e-3
P = 1.5
SINGLE_N = 50_000


def ringnorm_block(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` ringnorm rows and labels from ``seed``, standardised by the mixture's moments."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(rows) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(rows, 20))
    X[y > 0] *= 2.0
    X[y < 0] += A
    return (X - MEAN) / STD, y


def ringnorm_dask(N: int, first_seed: int = 0) -> tuple[Any, Any]:
    import dask
    import dask.array as da

    xs, ys = [], []
    for k, start in enumerate(range(0, N, BLOCK_ROWS)):
        rows = min(BLOCK_ROWS, N - start)
        block = dask.delayed(ringnorm_block, nout=2, pure=True)(first_seed + k, rows)
        xs.append(da.from_delayed(block[0], (rows, 20), np.float64))
        ys.append(da.from_delayed(block[1], (rows,), np.float64))
    return da.concatenate(xs), da.concatenate(ys)


def kernel_specs() -> list[Any]:
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.plugins.kernels.gaussian import Gaussian

    rng = np.random.default_rng(0)
    specs = []
    for m in range(19):
        cols = np.sort(rng.choice(20, size=rng.integers(1, 21), replace=False))
        specs.append(KernelSpec(Gaussian(width=float(5.0 * rng.chisquare(1) + 0.1)), tuple(int(c) for c in cols), m))
    specs.append(KernelSpec(Gaussian(width=math.sqrt(20.0)), None, 19))
    return specs


def _peak_rss() -> int:
    """This process's peak resident set: Linux's ``VmHWM``, which starts afresh in a new program
    (``ru_maxrss`` keeps the parent's across the fork and exec that start a worker: a worker
    started by a driver of 1.2 GiB reported at least that), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def numpy_pass_seconds(n_bytes: int) -> float:
    """``A @ v`` then ``A.T @ r`` on a 1 GiB float64 ``A`` in this process, scaled to ``n_bytes``."""
    from threadpoolctl import threadpool_limits

    rows = 2**30 // (8 * 2000)
    A = np.random.default_rng(0).standard_normal((rows, 2000))
    v, r = np.ones(2000), np.ones(rows)
    with threadpool_limits(1):
        A @ v
        start = time.perf_counter()
        for _ in range(3):
            A @ v
            A.T @ r
        seconds = (time.perf_counter() - start) / 3
    return seconds * n_bytes / A.nbytes


def one_pass_seconds(data: Any) -> float:
    """The wall time of one gradient pass without curvature, the cluster warm (best of 3)."""
    import operator

    from kernelfuse.distributed import blocks
    from kernelfuse.distributed.passes import tree_sum
    from kernelfuse.plugins.losses.logistic import Logistic

    client = data.client
    loss = Logistic()
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        out = [client.submit(blocks.margins_and_gradient, F, y, loss, np.full(data.n_features, 1e-3), 0.0, 0,
                             pure=False) for F, y in zip(data.blocks, data.targets)]
        tree_sum(client, [client.submit(operator.getitem, o, 1) for o in out]).result()
        best = min(best, time.perf_counter() - start)
    return best


def run_size(client: Any, N: int, family: str = "l1_mkl", kill_after: int | None = None) -> dict[str, Any]:
    from kernelfuse.distributed.features import partition_features
    from kernelfuse.distributed.newton import DistributedNewton
    from kernelfuse.problem.families import scaled_default

    X, y = ringnorm_dask(N)
    start = time.perf_counter()
    data = partition_features(kernel_specs(), X, y, client=client, rank=RANK)
    build = time.perf_counter() - start
    print(f"{family}, N = {N:,}: features ({data.nbytes / 2**30:.2f} GiB) in {build:.1f} s", flush=True)
    pids = client.run(os.getpid)
    killed: list[str] = []

    def progress(row: Any) -> None:
        print(f"  iteration {row.iteration}: objective {row.objective:.6g} gap {row.gap:.2e} "
              f"passes {row.counters.get('passes', 0):.0f} at {row.time:.1f} s", flush=True)
        if kill_after is not None and row.iteration == kill_after + 1 and not killed:
            address, pid = sorted(pids.items())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(address)
            print(f"  killed worker {address} (pid {pid})", flush=True)

    if family == "l1_mkl":
        params: dict[str, Any] = {"loss": "logistic", "C": C, "C2": C2}
    else:  # the classifier's default lam, mapped to these kernels' scale as the estimators map it
        params = {"p": P, **scaled_default(family, N, data.mean_diagonal)}
    model = DistributedNewton(tol=TOL, max_iter=200).solve(data, family, callback=progress, **params)
    print(f"  {model.status} in {model.time:.1f} s: {model.n_iter} iterations, {model.passes} passes, "
          f"gap {model.gap:.2e}", flush=True)
    X_test, y_test = ringnorm_block(10**6, TEST_ROWS)
    accuracy = float(np.mean(np.sign(model.decision_function(X_test)) == y_test))
    workers = len(client.scheduler_info()["workers"])
    peaks = client.run(_peak_rss)
    run = {"family": family, **{k: v for k, v in params.items() if k != "loss"},
           "N": N, "M": data.n_kernels, "rank": RANK, "blocks": len(data.blocks), "workers": workers,
           "feature_bytes": data.nbytes, "build": build, "solve": model.time, "status": model.status,
           "gap": model.gap, "objective": model.objective, "lower": model.dual_objective,
           "iterations": model.n_iter, "passes": model.passes, "accuracy": accuracy,
           "peak_rss": sorted(peaks.values()), "share_bytes": data.nbytes / workers}
    if kill_after is None and family == "l1_mkl":
        run["pass_seconds"] = one_pass_seconds(data)
        run["numpy_pass_seconds"] = numpy_pass_seconds(data.nbytes)
    if kill_after is not None:
        run["killed"] = killed
    print(f"  test accuracy {accuracy:.4f}; peak RSS per worker "
          f"{', '.join(f'{p / 2**30:.2f}' for p in run['peak_rss'])} GiB for a share of "
          f"{run['share_bytes'] / 2**30:.2f} GiB", flush=True)
    del data
    return run


def single_machine(N: int) -> dict[str, Any]:
    """SpicyMKL on the factors of the same kernels at ``N``, in this process."""
    import kernelfuse
    from kernelfuse.distributed import blocks
    from kernelfuse.distributed.features import low_rank_specs
    from kernelfuse.kernels.factors import FactorKernels

    X, y = (a.compute() for a in ringnorm_dask(N))
    index = np.sort(np.random.default_rng(0).choice(N, size=min(N, 5_000), replace=False))
    specs = low_rank_specs(kernel_specs(), X[index], RANK, 0, None)
    start = time.perf_counter()
    offsets = np.cumsum([0] + [spec.function.rank for spec in specs])
    phi = blocks.block_features(X, specs, "none", offsets)
    scales = np.concatenate([np.full(offsets[m + 1] - offsets[m],
                                     1.0 / math.sqrt(np.sum(phi[:, offsets[m]:offsets[m + 1]] ** 2)))
                             for m in range(len(specs))])
    phi *= scales
    factors = FactorKernels([phi[:, offsets[m]:offsets[m + 1]] for m in range(len(specs))])
    result = kernelfuse.solve(factors, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=C, C2=C2, tol=TOL)
    seconds = time.perf_counter() - start
    weights = np.concatenate([phi[:, offsets[m]:offsets[m + 1]].T @ result.coef[m] for m in range(len(specs))])
    X_test, y_test = ringnorm_block(10**6, TEST_ROWS)
    scores = (blocks.block_features(X_test, specs, "none", offsets) * scales) @ weights + result.intercept
    accuracy = float(np.mean(np.sign(scores) == y_test))
    print(f"single process N = {N:,}: {result.status} in {seconds:.1f} s, gap {result.gap:.2e}, "
          f"accuracy {accuracy:.4f}", flush=True)
    return {"N": N, "seconds": seconds, "status": result.status, "gap": result.gap, "accuracy": accuracy,
            "objective": result.objective}


def scale_checks(run_list: list[dict[str, Any]], label: str = "") -> list[dict[str, Any]]:
    """The targets every family's runs meet: N = 10^6 to 1e-3 within 15 minutes, time at most
    like N^1.1, peak memory per worker at most 1.5x its share (``label`` before each)."""
    runs = {r["N"]: r for r in run_list}
    out = []
    if 10**6 in runs:
        r = runs[10**6]
        out.append({"target": f"{label}N = 1,000,000, M = 20 to gap 1e-3 within 15 minutes on 2 workers",
                    "pass": r["status"] == "converged" and r["build"] + r["solve"] <= 900,
                    "detail": f"{r['build'] + r['solve']:.0f} s, {r['status']}"})
    if len(runs) >= 2:
        small, large = min(runs), max(runs)
        total = {n: runs[n]["build"] + runs[n]["solve"] for n in (small, large)}
        exponent = math.log(total[large] / total[small]) / math.log(large / small)
        out.append({"target": f"{label}time grows at most like N^1.1 from {small:,} to {large:,}",
                    "pass": exponent <= 1.1, "detail": f"N^{exponent:.2f}"})
    if run_list:
        worst = max(max(r["peak_rss"]) / r["share_bytes"] for r in run_list)
        out.append({"target": f"{label}peak memory per worker at most 1.5x its share of the feature blocks",
                    "pass": worst <= 1.5, "detail": f"{worst:.2f}x at worst"})
    return out


def checks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    runs = {r["N"]: r for r in payload["runs"]}
    out = scale_checks(payload["runs"])
    pass_ratio = max(r["pass_seconds"] / r["numpy_pass_seconds"] for r in payload["runs"])
    out.append({"target": "a pass within 2x of NumPy's matrix-vector products over the same bytes",
                "pass": pass_ratio <= 2.0, "detail": f"{pass_ratio:.2f}x at worst"})
    single = payload.get("single")
    if single and runs:
        top = runs[max(runs)]
        out.append({"target": f"test accuracy at N = {max(runs):,} at least the single machine's "
                              f"at N = {single['N']:,}",
                    "pass": top["accuracy"] >= single["accuracy"],
                    "detail": f"{top['accuracy']:.4f} vs {single['accuracy']:.4f}"})
    killed = payload.get("killed")
    if killed:
        base = runs[killed["N"]]
        same = abs(killed["objective"] - base["objective"]) <= TOL * max(1.0, abs(base["objective"]))
        out.append({"target": "a lost worker costs at most one extra pass, the answer unchanged",
                    "pass": killed["passes"] <= base["passes"] + 1 and same and killed["status"] == "converged",
                    "detail": f"{killed['passes']} passes vs {base['passes']}, {killed['solve']:.1f} s vs "
                             f"{base['solve']:.1f} s, objective {killed['objective']:.6g} vs {base['objective']:.6g}"})
    return out


def table(payload: dict[str, Any]) -> str:
    rows = []
    for r in payload["runs"]:
        rows.append([f"{r['N']:,}", r["M"], r["workers"], fmt(r["feature_bytes"] / 2**30), fmt(r["build"]),
                     fmt(r["solve"]), r["iterations"], r["passes"], r["status"], f"{r['gap']:.1e}",
                     fmt(max(r["peak_rss"]) / 2**30), fmt(max(r["peak_rss"]) / r["share_bytes"]),
                     fmt(r["pass_seconds"]), fmt(r["numpy_pass_seconds"]), f"{r['accuracy']:.4f}"])
    text = split_table(["N", "M", "workers", "features (GiB)", "build (s)", "solve (s)", "iterations",
                        "passes", "status", "gap", "peak RSS / worker (GiB)", "peak / share",
                        "pass (s)", "NumPy pass (s)", "test accuracy"], rows, keys=[0], groups=[
        ("Time to the certified gap:", [1, 2, 3, 4, 5, 6, 7, 8, 9]),
        ("Memory, the speed of one pass, and accuracy:", [10, 11, 12, 13, 14])])
    single = payload.get("single")
    if single:
        text += (f"\n\nSingle process, N = {single['N']:,} (SpicyMKL on the factors): {single['status']} in "
                 f"{single['seconds']:.1f} s, test accuracy {single['accuracy']:.4f}.")
    killed = payload.get("killed")
    if killed:
        text += (f"\n\nA worker killed after the second iteration at N = {killed['N']:,}: {killed['status']} "
                 f"in {killed['solve']:.1f} s, {killed['passes']} passes, objective {killed['objective']:.8g}.")
    text += "\n\n" + "\n".join(target_lines(checks(payload)))
    return text


def pnorm_table(payload: dict[str, Any]) -> str:
    """The ``pnorm_mkl`` runs: time, passes, gap, memory and accuracy by N, and their targets."""
    runs = payload.get("pnorm_runs", [])
    rows = [[f"{r['N']:,}", f"{r['lam']:.3g}", fmt(r["build"]), fmt(r["solve"]), r["iterations"], r["passes"],
             r["status"], f"{r['gap']:.1e}", fmt(max(r["peak_rss"]) / r["share_bytes"]), f"{r['accuracy']:.4f}"]
            for r in runs]
    text = split_table(["N", "lam", "build (s)", "solve (s)", "iterations", "passes", "status", "gap",
                        "peak / share", "test accuracy"], rows, keys=[0], groups=[
        ("Time to the certified gap:", [1, 2, 3, 4, 5, 6, 7]), ("Memory and accuracy:", [8, 9])])
    lines = scale_checks(runs, "pnorm_mkl: ")
    return text + ("\n\n" + "\n".join(target_lines(lines)) if lines else "")


TABLES = {"runs": table, "pnorm_runs": pnorm_table}


def main(argv: list[str] | None = None) -> int:
    import distributed

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 20,000 and 60,000 only, in a minute")
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 100000,300000,1000000)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    sizes = [20_000, 60_000] if args.quick else [100_000, 300_000, 1_000_000]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    payload: dict[str, Any] = {"machine": machine_info(), "runs": [], "pnorm_runs": []}

    def on_new_cluster(N: int, family: str = "l1_mkl", kill_after: int | None = None) -> dict[str, Any]:
        """One run on a LocalCluster of its own: worker processes started for it."""
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                      memory_limit=0, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            return run_size(client, N, family, kill_after)

    payload["runs"] = [on_new_cluster(N) for N in sizes]
    payload["pnorm_runs"] = [on_new_cluster(N, "pnorm_mkl") for N in sizes]
    payload["killed"] = on_new_cluster(sizes[0], kill_after=2)
    # Last: the single process's own arrays would otherwise be in the workers' start (see _peak_rss).
    payload["single"] = single_machine(20_000 if args.quick else SINGLE_N)
    out = RESULTS_DIR / ("distributed_solve_quick.json" if args.quick else "distributed_solve.json")
    write_json(out, payload)
    print(table(payload))
    print(pnorm_table(payload))
    print(f"raw measurements: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
