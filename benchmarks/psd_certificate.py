"""How often the "auto" PSD certificate misses an indefinite kernel, and flags a PSD one.

The certificate (``kernelfuse.validation.samples_fail``) factorises a principal submatrix
on a seeded sample of rows, shifted by ``2e-8 trace(K)``; a kernel it flags gets the exact
check, so "auto" refuses no kernel the exact check accepts.  Measured here, on kernels of
``kernelfuse.testing`` (N = 455, the main job's training set size):

* false negatives: indefinite kernels (the exact check refuses them) the sample does not
  flag, by kind (one negative eigenvalue of relative size 1e-3 ... 1e-1 along a random
  or a leading eigenvector, low rank minus one direction, a Gaussian kernel plus noise,
  sigmoid kernels), for several sample sizes (the library's is ``SAMPLE_ROWS``);
* false positives: PSD kernels near singular the sample flags (then cleared by the exact
  check, at its cost);
* the time of the sample check and of the exact check per kernel.

    python benchmarks/psd_certificate.py [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

import common
from kernelfuse.testing import INDEFINITE_KINDS, NEAR_SINGULAR_KINDS, indefinite_kernel, near_singular_kernel
from kernelfuse.validation import PSD_TOL, SAMPLE_ROWS, principal_samples, samples_fail

N = 455
SIZES = (1e-3, 1e-2, 1e-1)
SAMPLES = (32, 64, SAMPLE_ROWS, 160, 256)


def exact_refuses(K: np.ndarray) -> tuple[bool, float]:
    """The exact check's verdict and ``lambda_min / lambda_max``."""
    w = np.linalg.eigvalsh(K)
    return bool(w[0] < -PSD_TOL * max(w[-1], np.finfo(float).tiny)), float(w[0] / w[-1])


def sample_fails(K: np.ndarray, flat: np.ndarray) -> bool:
    """The certificate of one kernel ``K`` on the principal submatrix at the flat indices ``flat``."""
    return bool(samples_fail(*principal_samples(K[None], flat), PSD_TOL)[0])


def flags(K: np.ndarray, samples: dict[int, np.ndarray]) -> dict[int, bool]:
    return {s: bool(sample_fails(K, flat)) for s, flat in samples.items()}


def measure(trials: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    samples = {}
    for s in SAMPLES:
        rows = np.sort(np.random.default_rng(0).choice(N, s, replace=False))
        samples[s] = rows[:, None] * N + rows
    cases = [(kind, size) for kind in INDEFINITE_KINDS for size in (SIZES if kind != "sigmoid" else (None,))]
    negatives = []
    for kind, size in cases:
        missed = dict.fromkeys(SAMPLES, 0)
        indefinite, ratios = 0, []
        for _ in range(trials):
            K = indefinite_kernel(kind, N, size or 0.0, rng)
            refused, ratio = exact_refuses(K)
            if not refused:  # a sigmoid draw that happens to be PSD: not a case
                continue
            indefinite += 1
            ratios.append(ratio)
            for s, flagged in flags(K, samples).items():
                missed[s] += not flagged
        negatives.append({"kind": kind, "size": size, "indefinite": indefinite,
                          "lambda_ratio_median": float(np.median(ratios)) if ratios else None,
                          "false_negative_rate": {str(s): missed[s] / indefinite if indefinite else None
                                                  for s in SAMPLES}})
        print(f"{kind} {size}: {indefinite} indefinite, missed at s = "
              + ", ".join(f"{s}: {missed[s]}" for s in SAMPLES), flush=True)
    positives = []
    for kind in NEAR_SINGULAR_KINDS:
        flagged_count, accepted = dict.fromkeys(SAMPLES, 0), 0
        for _ in range(trials):
            K = near_singular_kernel(kind, N, rng)
            accepted += not exact_refuses(K)[0]
            for s, flagged in flags(K, samples).items():
                flagged_count[s] += flagged
        positives.append({"kind": kind, "kernels": trials, "exact_accepts": accepted,
                          "false_positive_rate": {str(s): flagged_count[s] / trials for s in SAMPLES}})
        print(f"{kind}: exact accepts {accepted}/{trials}, flagged at s = "
              + ", ".join(f"{s}: {flagged_count[s]}" for s in SAMPLES), flush=True)
    K = near_singular_kernel("wide-gaussian", N, rng)
    timings = {}
    for s, flat in samples.items():
        t0 = time.perf_counter()
        for _ in range(50):
            sample_fails(K, flat)
        timings[str(s)] = (time.perf_counter() - t0) / 50
    t0 = time.perf_counter()
    for _ in range(5):
        np.linalg.eigvalsh(K)
    return {"negatives": negatives, "positives": positives,
            "seconds_per_kernel": {"sample": timings, "exact": (time.perf_counter() - t0) / 5}}


def rates_table(payload: dict[str, Any]) -> str:
    """False-negative rate of the sample check per kind and sample size."""
    rows = [[r["kind"], r["size"] if r["size"] is not None else "-", r["indefinite"],
             common.fmt(r["lambda_ratio_median"]),
             *(common.fmt(r["false_negative_rate"][str(s)]) for s in SAMPLES)]
            for r in payload["negatives"]]
    rows += [[r["kind"] + " (PSD)", "-", r["kernels"], "-",
              *(common.fmt(r["false_positive_rate"][str(s)]) for s in SAMPLES)]
             for r in payload["positives"]]
    headers = ["kernel", "negative size", "kernels", "median lambda_min / lambda_max",
               *(f"{s} rows" for s in SAMPLES)]
    return common.split_table(headers, rows, keys=[0, 1], groups=[
        ("The stacks:", [2, 3]),
        ("Rate missed (indefinite) or flagged (PSD), by rows sampled:", list(range(4, len(headers))))])


TABLES = {"rates": rates_table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 kernels per case instead of 30")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or common.RESULTS_DIR / ("psd_certificate_quick.json" if args.quick else "psd_certificate.json")
    machine = common.machine_info()
    payload = {"machine": machine, "n": N, "sample_rows": SAMPLE_ROWS, "samples": list(SAMPLES),
               "trials": 10 if args.quick else 30, "seed": args.seed,
               **measure(10 if args.quick else 30, args.seed)}
    payload["machine"]["loadavg_end"] = list(__import__("os").getloadavg())
    print()
    print(rates_table(payload))
    timing = payload["seconds_per_kernel"]
    print(f"\nper kernel at N = {N}: sample check {common.fmt(timing['sample'][str(SAMPLE_ROWS)])} s "
          f"({SAMPLE_ROWS} rows), exact check {common.fmt(timing['exact'])} s")
    common.save_results(out, payload, lambda path: None)


if __name__ == "__main__":
    main()
