"""MKLpy as a peer for the kernelfuse benchmarks (not part of the library, not tests).

MKLpy (I. Lauriola and F. Aiolli, "MKLpy: a python-based framework for
Multiple Kernel Learning", arXiv:2007.09982, 2020; PyPI ``MKLpy``, GPL-3) is a
scikit-learn-style MKL library built on torch, cvxopt and scikit-learn.  It is
optional here: install it with ``.venv/bin/pip install MKLpy torch==2.13.0``
(0.6 is the latest release; ``torch==2.13.0`` is the CPU build on this
machine's disk, plain ``torch`` pulls a CUDA build of several GB).  Without
it, :func:`mklpy_status` says why and :func:`run_mklpy` returns
``status = "error: MKLpy not installed: <reason>"`` instead of raising.

Algorithms run (``MKLPY_ALGORITHMS``, every MKLpy 0.6 class that learns a
combination of a list of precomputed kernels for binary classification):

* ``AverageMKL``: uniform weights 1/M;
* ``EasyMKL`` (Aiolli & Donini 2015), ``lam = 0.1``;
* ``CKA``: centered kernel alignment (Cortes, Mohri & Rostamizadeh 2010);
  MKLpy solves the *unconstrained* ``M^-1 a`` and scales it to unit l2
  norm, so its weights can be negative (the combined kernel is then
  indefinite) and do not sum to one;
* ``FHeuristic`` (Qiu & Lane 2008): weights proportional to each kernel's
  alignment with ``y y^T``;
* ``PWMK`` (Tanabe et al. 2008): weights proportional to each kernel's
  3-fold cross-validated accuracy of the base learner;
* ``GRAM`` (radius/margin ratio), ``MEMO`` (margin maximisation with
  ``theta = 0``), ``RMKL`` (radius-margin, RMKL's own ``C`` set to ``C``):
  MKLpy's iterative ("two-step") algorithms with MKLpy's defaults,
  ``learning_rate = 0.01`` and ``max_iter = 1000``.  MKLpy 0.6 has no
  convergence test without a scheduler, so they always take 1000 steps
  (a QP or an SVM solve each).

Every algorithm gets the same base learner, a fresh
``sklearn.svm.SVC(kernel="precomputed", C=C)`` fitted on the combined kernel
(instead of MKLpy's per-class defaults: ``KOMD`` for EasyMKL, ``SVC(C=1000)``
for the one-step ones, MKLpy's own dual scores for the iterative ones), and
predictions are that SVC's on ``sum_k w_k K_k(test, train)``.  ``C`` applies
at the scale of the kernels given; the combined kernel has weights summing to
one for all but CKA.  With unit-trace kernels ``C`` must be of the order of
N: ``C = 1`` predicts the majority class.

Not comparable with kernelfuse's families: each algorithm optimises its own
criterion (margin distribution, alignment, radius/margin ratio, ...), none of
them the SVM-plus-regulariser objectives of kernelfuse's solvers, so only the
fit time, the test accuracy and the number of selected kernels are compared,
never objectives, gaps or iteration counts.

Threads: inside :func:`run_mklpy` torch runs on one intra-op thread
(``torch.set_num_threads(1)``, restored afterwards) for a single-thread
comparison with kernelfuse's solvers; cvxopt's and numpy's BLAS are left at
their defaults.  Inputs are converted to lists of float64 torch tensors
(zero-copy views of the numpy stacks), the labels to an int64 torch tensor,
before the clock starts.  ``time`` is ``fit`` alone, ``predict_time`` the
``predict`` on the test kernels; MKLpy's debug prints (MEMO) and the
UserWarnings torch raises on MKLpy's code (deprecated tensor idioms) are
swallowed.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
import warnings
from importlib import metadata
from types import ModuleType
from typing import Any

import numpy as np

MKLPY_ALGORITHMS: tuple[str, ...] = (
    "AverageMKL",
    "EasyMKL",
    "CKA",
    "FHeuristic",
    "PWMK",
    "GRAM",
    "MEMO",
    "RMKL",
)


def _import_mklpy() -> tuple[ModuleType, ModuleType]:
    """``(MKLpy.algorithms, torch)``; raises ImportError (or whatever MKLpy raises)."""
    import torch
    from MKLpy import algorithms

    return algorithms, torch


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def mklpy_status() -> dict[str, Any]:
    """Whether MKLpy imports here: ``{"available", "version", "torch", "reason"}``."""
    try:
        _import_mklpy()
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return {"available": False, "version": _version("MKLpy"), "torch": _version("torch"),
                "reason": f"{type(exc).__name__}: {exc}"}
    return {"available": True, "version": _version("MKLpy"), "torch": _version("torch"),
            "reason": None}


def run_mklpy(name: str, K_train: np.ndarray, y_train: np.ndarray, K_test: np.ndarray,
              y_test: np.ndarray, C: float = 1.0, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fit MKLpy's ``name`` on the kernels ``K_train`` (M, N, N), score it on ``K_test``.

    ``K_test`` is (M, n_test, N) (rows: test points, columns: training
    points), labels are in {-1, +1}.  Returns ``algorithm``, ``time`` (fit
    seconds), ``predict_time``, ``accuracy``, ``kernel_weights`` (M floats
    divided by the sum of their absolute values: they sum to one unless
    CKA gives negative ones), ``selected_kernels`` (``|w| > 1e-6 max |w|``)
    and ``status`` (``"ok"`` or ``"error: ..."``; never raises).  ``params``: more keyword
    arguments of the algorithm (``max_iter``, ``lam``, ...).
    """
    result: dict[str, Any] = {"algorithm": name, "time": math.nan, "predict_time": math.nan,
                              "accuracy": math.nan, "kernel_weights": [],
                              "selected_kernels": 0, "status": "ok"}
    try:
        algorithms, torch = _import_mklpy()
    except Exception as exc:  # noqa: BLE001 - as in mklpy_status
        result["status"] = f"error: MKLpy not installed: {type(exc).__name__}: {exc}"
        return result
    threads = torch.get_num_threads()
    try:
        from sklearn.svm import SVC

        if name not in MKLPY_ALGORITHMS:
            raise ValueError(f"unknown algorithm {name!r}; expected one of {MKLPY_ALGORITHMS}")
        K_train = np.ascontiguousarray(K_train, dtype=np.float64)
        K_test = np.ascontiguousarray(K_test, dtype=np.float64)
        y_train = np.asarray(y_train).astype(np.int64)
        y_test = np.asarray(y_test).astype(np.int64)
        M, N = K_train.shape[0], y_train.shape[0]
        if K_train.shape != (M, N, N) or K_test.shape != (M, y_test.shape[0], N):
            raise ValueError(f"kernel shapes {K_train.shape}, {K_test.shape} do not match "
                             f"M = {M}, N = {N}, n_test = {y_test.shape[0]}")
        if not set(np.unique(y_train)) <= {-1, 1}:
            raise ValueError("labels must be in {-1, +1}")
        KL_train = list(torch.from_numpy(K_train))
        KL_test = list(torch.from_numpy(K_test))
        Y = torch.from_numpy(y_train)
        extra: dict[str, Any] = {**({"C": C} if name == "RMKL" else {}), **(params or {})}
        model = getattr(algorithms, name)(learner=SVC(kernel="precomputed", C=C), **extra)

        torch.set_num_threads(1)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.filterwarnings("ignore", category=UserWarning, module=r"MKLpy\.")
            start = time.perf_counter()
            model.fit(KL_train, Y)
            result["time"] = time.perf_counter() - start
            start = time.perf_counter()
            predicted = np.asarray(model.predict(KL_test))
            result["predict_time"] = time.perf_counter() - start

        result["accuracy"] = float(np.mean(predicted == y_test))
        weights = np.asarray(model.solution.weights, dtype=np.float64)
        scale = np.abs(weights).sum()
        if scale > 0:
            weights = weights / scale
        result["kernel_weights"] = [float(w) for w in weights]
        result["selected_kernels"] = int(np.sum(np.abs(weights) > 1e-6 * np.abs(weights).max()))
    except Exception as exc:  # noqa: BLE001 - one algorithm's failure is a measurement
        result["status"] = f"error: {type(exc).__name__}: {exc}"
    finally:
        torch.set_num_threads(threads)
    return result
