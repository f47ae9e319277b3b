"""Large N on one machine: peak memory and time of a fit per kernel storage.

``python benchmarks/storage.py [--quick] [--runs STORAGE:N,...]``

Each run fits ``MKLClassifier`` in a fresh process on Ringnorm-like data
(Breiman 1996: 20 features, one class N(0, 4 I), the other N(a, I),
a = 2 / sqrt(20); generated, so that N can exceed the 7,400 points of
``../shared/data/ringnorm``) with a dozen Gaussian kernels (widths 0.5, 1,
2, 5 x sqrt(20) on all features and widths 1, 5 on four single features),
unit-trace normalised, and tests on 2,000 fresh points:

* ``memory`` and ``memmap``: SpicyMKL on ``l1_mkl`` (logistic, C = 0.3,
  gap 1e-3), the stack in RAM, or written to disk block by block and read
  through a memory map; ``memory-f32`` and ``memmap-f32``: the same with a
  float32 stack (``kernel_dtype="float32"``), half the bytes;
* ``factors``: the same twelve kernels as Nystrom kernels of rank
  :data:`FACTOR_RANK` (uniform landmarks), their factors ``Phi_m`` only
  (``N r`` numbers per kernel), SpicyMKL on ``l1_mkl`` as in memory;
* ``rows``: OBSCURE on ``pnorm_mkl`` (lam = 1 / N, p = 1.5, spherical
  normalisation: with unit-trace kernels lam = 1 / N leaves every margin near
  0 and the test accuracy at chance), kernel rows computed on demand with a
  512 MiB cache, for a fixed number of epochs.

Per run: the stack's size, the peak of memory the fit allocated
(``tracemalloc``: numpy arrays included, the pages of a memory-mapped file
not, since the operating system holds those), the process's peak resident
set (``ru_maxrss``, which counts the mapped pages it touched), the ratio of
the traced peak to the stack, the fit time and the test accuracy.  Targets
of issue 11: at most 1.3 x the stack in memory; bounded by the cache for
rows.  Writes ``benchmarks/results/storage[_quick].json``; ``--update``
replaces the runs it makes in that file (each marked with its own date and
commit) and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS_DIR, machine_info, markdown_table, save_results  # noqa: E402

CONFIGS = {
    "quick": [("memory", 1000), ("memory", 2000), ("memory-f32", 2000), ("memmap", 2000), ("rows", 2000),
              ("factors", 2000)],
    "full": [("memory", 2000), ("memory", 4000), ("memory", 8000), ("memory-f32", 2000),
             ("memory-f32", 4000), ("memory-f32", 8000), ("memmap", 4000), ("memmap", 10000),
             ("memmap-f32", 10000), ("rows", 10000), ("rows", 50000), ("factors", 10000),
             ("factors", 50000)],
}
#: OBSCURE epochs on kernel rows (the online stage's one, then stochastic ones).
ROWS_EPOCHS = 3
#: Landmarks of each Nystrom kernel of the ``factors`` runs.
FACTOR_RANK = 50
N_TEST = 2000


def ringnorm(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Breiman's Ringnorm: half N(0, 4 I), half N(a 1, I), a = 2 / sqrt(20), labels 0 / 1."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = np.where(y[:, None] == 0, 2.0 * rng.normal(size=(n, 20)),
                 rng.normal(size=(n, 20)) + 2.0 / np.sqrt(20))
    return X, y


def specs() -> list[Any]:
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.parts.registry import get_registry

    gaussian = lambda w: get_registry().create("kernel", "gaussian", width=w)  # noqa: E731
    return ([KernelSpec(gaussian(w * np.sqrt(20))) for w in (0.5, 1.0, 2.0, 5.0)]
            + [KernelSpec(gaussian(w), features=[j]) for j in range(4) for w in (1.0, 5.0)])


def nystrom_specs(X: np.ndarray) -> list[Any]:
    """:func:`specs` as Nystrom kernels of rank :data:`FACTOR_RANK` on ``X`` (uniform landmarks)."""
    import attrs

    from kernelfuse.plugins.kernels.nystrom import Nystrom

    out = []
    for m, spec in enumerate(specs()):
        columns = X if spec.features is None else X[:, list(spec.features)]
        out.append(attrs.evolve(spec, function=Nystrom.fit(spec.function, columns, FACTOR_RANK, seed=m)))
    return out


def one_run(storage: str, N: int) -> dict[str, Any]:
    """A fit in this process (called in a fresh one by :func:`main`)."""
    import resource
    import time
    import tracemalloc
    import warnings

    from kernelfuse.frontends.estimators import MKLClassifier
    from kernelfuse.kernels.functions import stack_bytes

    X, y = ringnorm(N, seed=0)
    X_test, y_test = ringnorm(N_TEST, seed=1)
    kernels = nystrom_specs(X) if storage == "factors" else specs()
    dtype = "float32" if storage.endswith("-f32") else "float64"
    if storage == "rows":
        model = MKLClassifier(kernels=kernels, solver="obscure", family="pnorm_mkl", lam=1.0 / N,
                              p=1.5, normalization="spherical", storage="rows",
                              max_iter=ROWS_EPOCHS, tol=None, random_state=0)
    else:
        model = MKLClassifier(kernels=kernels, storage=storage.removesuffix("-f32"), kernel_dtype=dtype)
    warnings.simplefilter("ignore")
    tracemalloc.start()
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    stack = stack_bytes(len(kernels), N, N, dtype)
    return {"storage": storage, "N": N, "M": len(kernels), "dtype": dtype, "stack_bytes": stack,
            "peak_traced_bytes": traced, "ratio": traced / stack,
            "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "fit_seconds": seconds, "status": model.result_.status, "n_iter": model.result_.n_iter,
            "test_accuracy": float(model.score(X_test, y_test)),
            "kernel_storage": model.kernel_storage_.reason}


def storage_table(payload: dict[str, Any]) -> str:
    return markdown_table(
        ["storage", "N", "M", "stack (GiB)", "traced peak (GiB)", "peak / stack", "max RSS (GiB)",
         "fit (s)", "status", "test accuracy"],
        [[r["storage"], r["N"], r["M"], r["stack_bytes"] / 2**30, r["peak_traced_bytes"] / 2**30,
          r["ratio"], r["max_rss_bytes"] / 2**30, r["fit_seconds"], r["status"], r["test_accuracy"]]
         if "error" not in r else [r["storage"], r["N"], "-", "-", "-", "-", "-", "-", r["error"], "-"]
         for r in payload["runs"]])


TABLES = {"storage": storage_table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", help="STORAGE:N,... instead of the mode's list")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # STORAGE:N, in the child process
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--update", action="store_true",
                        help="replace (or add) these runs in the existing JSON, each marked with its date "
                             "and commit, instead of writing a new one")
    args = parser.parse_args()
    if args.one:
        storage, N = args.one.split(":")
        print(json.dumps(one_run(storage, int(N))))
        return 0
    runs = ([(s, int(n)) for s, n in (item.split(":") for item in args.runs.split(","))]
            if args.runs else CONFIGS["quick" if args.quick else "full"])
    results = []
    for storage, N in runs:
        done = subprocess.run([sys.executable, __file__, "--one", f"{storage}:{N}"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            results.append({"storage": storage, "N": N, "error": done.stderr.strip().splitlines()[-1]})
        else:
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    out = args.out or RESULTS_DIR / f"storage{'_quick' if args.quick else ''}.json"
    payload = {"benchmark": "storage", "mode": "quick" if args.quick else "full",
               "rows_epochs": ROWS_EPOCHS, "machine": machine_info(), "runs": results}
    if args.update:
        machine = payload["machine"]
        for run in results:
            run["measured"] = {"date": machine["date"], "git_commit": machine["git_commit"]}
        payload = json.loads(out.read_text())
        fresh = {(run["storage"], run["N"]) for run in results}
        kept = [run for run in payload["runs"] if (run["storage"], run["N"]) not in fresh]
        order = [name for name, _ in CONFIGS["full"]]
        payload["runs"] = sorted(kept + results, key=lambda run: (order.index(run["storage"]), run["N"]))
    print("\n" + storage_table(payload))
    save_results(out, payload, lambda path: None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
