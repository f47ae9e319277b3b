"""Accuracy by the field's protocol: random splits, hyperparameters by cross-validation.

``python benchmarks/accuracy.py [--quick | --heldout] [--splits K] [--jobs J] [--time-limit S]
[--tol T] [--seed S [--allow-choice-seed]] [--sets NAME ...] [--methods METHOD ...]
[--out PATH | --merge-into PATH]``

The protocol of the MKL papers (SimpleMKL, Rakotomamonjy et al. 2008, section 5.1; SpicyMKL,
Suzuki & Tomioka 2011, section 6), for every data set:

* ``n_splits`` random 70/30 splits (stratified for classification; split ``k`` is seeded
  ``seed + k``, ``seed`` :data:`REPORT_SEED` by default: the estimators' defaults are chosen on
  the splits of :data:`CHOICE_SEED` by ``benchmarks/default_choice.py``, and a run on those is
  refused unless ``--allow-choice-seed``); features standardised (missing values imputed) on
  the training part only;
* SimpleMKL's kernel grid, built by :func:`kernelfuse.frontends.kernel_grid.kernel_grid`:
  Gaussian kernels of widths 0.5, 1, 2, 5, 7, 10, 12, 15, 17, 20 and polynomial kernels of
  degree 1, 2, 3, on all features and on each single feature (``13 (d + 1)`` kernels), each
  of unit trace on the training rows it is fitted on; computed once per split, each
  cross-validation fold taking its rows and columns and dividing them by their trace there;
* every method's hyperparameters (:data:`GRIDS`: C, and p or q where the family has them)
  chosen by 3-fold cross-validation inside the training part (the best mean fold score; ties
  go to the earlier grid point), then the method refitted on the whole training part with
  them and scored on the test part;
* per method and set: the test accuracy (classification) or RMSE (regression, in the target's
  units) as mean +- std over the splits, the kernels kept (weight above 1e-6), the fit time
  of the whole selection (every cross-validation fit and the refit, each fit with its
  predictions), and a paired test over the splits against the better of the two baselines
  (:data:`BASELINES`: the average-kernel SVM and scikit-learn's RBF SVC with C and gamma
  cross-validated, the one with the better mean; SVR for regression): paired t-test and
  Wilcoxon signed-rank (scipy), and whether the method is significantly worse than it
  (:func:`significantly_worse`).

Every fit has a time limit: kernelfuse's solvers take ``time_limit`` and stop with status
``time_limit``, their model is kept and counted in the JSON (``statuses``); an MKLpy fit runs
in a forked child that is killed at the limit: such a fit has no model, the method is recorded
as timed out on that split and not run on the set's later splits (``timed_out``).  Nothing is
dropped: a method that did not run says why (``skipped``).

The full run takes hours, so it keeps a checkpoint: each finished split is written at once
(atomically) to ``benchmarks/results/accuracy.partial/<set>.json``, and the same command run
again (same commit, clean or with the same changes, same settings) goes on from the next split;
a checkpoint from another commit or settings is refused with the difference named.  Each
split records its date and processor; the folder is removed once the results of all sets are
written.  Runs of some sets (``--sets``) at once share the cores: their checkpoints are kept,
and the run of all sets then gathers them into one JSON.

Beside the methods with their grids, ``MKLClassifier() defaults`` and ``MKLRegressor()
defaults`` are the estimators as a user runs them (their own kernel grid on the features, every
setting at its default): the measurement of the defaults (issue 26, item 5).  The defaults
are chosen on other splits of these sets (:data:`CHOICE_SEED`), and ``--heldout`` checks them
on sets no choice uses (:data:`HELDOUT`: IDA's official realisations instead of random
splits).  ``--merge-into PATH --methods ...`` reruns some rows on the splits of a results file
and replaces them there (the file records the rerun's commit and date under ``reruns``).

Writes ``benchmarks/results/accuracy[_quick|_heldout].json`` (``n_splits``, the grids, the machine,
git commit, library versions with MKLpy's and torch's) and prints the tables that
``benchmarks/report.py`` renders into README.md and docs/ (``solvers``, one row per method:
the first screen of docs/choosing-a-solver.md).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    CHOICE_SEED,
    REPORT_SEED,
    RESULTS_DIR,
    DataUnavailable,
    fmt,
    ida_realisation,
    load_uci,
    machine_info,
    markdown_table,
    read_shared,
    split_table,
    standardise,
    write_json,
)
from kernelfuse.frontends.kernel_grid import POLYNOMIAL_DEGREES, SIMPLEMKL_WIDTHS  # noqa: E402

#: SimpleMKL's kernel grid (Rakotomamonjy et al. 2008, section 5.1).
WIDTHS = SIMPLEMKL_WIDTHS
DEGREES = POLYNOMIAL_DEGREES
#: Every solver's certified relative duality gap: 0.01, SimpleMKL's stop in its toolbox's examples
#: (``options.seuildualitygap``), the setting of the paper's experiments.  On ionosphere (split
#: 0) 1e-3 chose the same grid points and gave the same test accuracy for spicymkl, mirror-vskl
#: and obscure, obscure's selection taking 51 s instead of 31 s (docs/benchmarks.md).
TOL = 1e-2
CLASSIFICATION = ("ionosphere", "sonar", "liver", "pima", "wpbc", "breast-cancer", "wine")
#: ``liver-drinks``: the Liver Disorders set with its documented regression target, the
#: number of drinks (``f5``), from the other five features (UCI's note on the set).
REGRESSION = ("diabetes", "liver-drinks")
#: ``--heldout``: sets the estimators' defaults were not chosen on, IDA's banana, ringnorm and
#: titanic with their official realisations (400, 400 and 150 training points), each test part
#: cut to a random ``HELDOUT_TEST`` rows; the methods of :data:`HELDOUT_METHODS`.
HELDOUT = ("banana", "ringnorm", "titanic")
HELDOUT_TEST = 2000
HELDOUT_METHODS = ("spicymkl (logistic)", "spicymkl (hinge)", "MKLClassifier() defaults", "MKLClassifierCV()",
                   "average-kernel SVM", "RBF SVC (CV)", "single best kernel")
#: The default ``--seed`` of ``--heldout``, that of its published run: it cuts the test parts
#: and seeds the folds; the realisations are IDA's, and no choice uses these sets.
HELDOUT_SEED = 0
#: ``gamma`` of the RBF baselines: these factors times scikit-learn's ``"scale"`` rule.
GAMMA_FACTORS = (0.1, 0.3, 1.0, 3.0)
#: The hyperparameter grids per method (full run), each a dict of name -> values; the
#: product is searched.  With unit-trace kernels (entries near 1/N) an SVM's C is of the
#: order of N; ``l1_mkl``'s C weighs the penalty (the larger, the sparser).
GRIDS: dict[str, dict[str, Sequence[Any]]] = {
    "spicymkl (logistic)": {"C": (0.03, 0.1, 0.3, 1.0)},
    "spicymkl (hinge)": {"C": (0.03, 0.1, 0.3, 1.0)},
    "simplemkl": {"C": (10.0, 100.0, 1000.0)},
    "mirror-vskl (vskl)": {"C": (10.0, 100.0, 1000.0), "q": (1.0, 2.0)},
    "obscure (p-norm)": {"lam": (1e-5, 1e-4, 1e-3), "p": (1.25, 2.0)},
    "mikl": {"lam": (0.1, 1.0), "q": (1.0, 2.0)},
    "MKLClassifier() defaults": {},
    "MKLClassifierCV()": {},
    "average-kernel SVM": {"C": (10.0, 100.0, 1000.0)},
    "RBF SVC (CV)": {"C": (0.1, 1.0, 10.0, 100.0), "gamma_factor": GAMMA_FACTORS},
    "single best kernel": {"C": (10.0, 100.0, 1000.0)},
    "MKLpy EasyMKL": {"C": (10.0, 100.0, 1000.0)},
    "MKLpy GRAM": {"C": (10.0, 100.0, 1000.0)},
    "MKLpy AverageMKL": {"C": (10.0, 100.0, 1000.0)},
    "MKLRegressor": {"C": (0.01, 0.03, 0.1, 0.3)},
    "MKLRegressor() defaults": {},
    "MKLRegressorCV()": {},
    "SVR (mean kernel)": {"C": (1.0, 10.0, 100.0), "epsilon": (0.1, 0.3)},
    "RBF SVR (CV)": {"C": (0.1, 1.0, 10.0, 100.0), "epsilon": (0.1,), "gamma_factor": GAMMA_FACTORS},
    "KernelRidge (mean kernel)": {"alpha": (1e-4, 1e-3, 1e-2, 1e-1)},
}
#: ``--quick``: the smaller grids (the first and last value of each).
QUICK_GRIDS = {method: {name: (values[0], values[-1]) if len(values) > 1 else tuple(values)
                        for name, values in grid.items()} for method, grid in GRIDS.items()}
CONFIGS: dict[str, dict[str, Any]] = {
    "full": {"classification": CLASSIFICATION, "regression": REGRESSION, "n_splits": 10,
             "time_limit": 60.0, "budget": None, "grids": GRIDS},
    "quick": {"classification": ("liver", "wine"), "regression": ("diabetes",), "n_splits": 2,
              "time_limit": 20.0, "budget": None, "grids": QUICK_GRIDS},
    "heldout": {"classification": HELDOUT, "regression": (), "n_splits": 10,
                "time_limit": 60.0, "budget": None, "grids": GRIDS},
}
FOLDS = 3
#: The two baselines per task; the paired tests of a set are against the better of them
#: (:func:`better_baseline`).
BASELINES = {"classification": ("average-kernel SVM", "RBF SVC (CV)"),
             "regression": ("SVR (mean kernel)", "RBF SVR (CV)")}
#: A method is significantly worse than the baseline where its mean is lower and the paired
#: t-test's two-sided p is below this.
ALPHA = 0.05


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def git_state() -> str | None:
    """``HEAD``'s commit, with ``+dirty:<hash of the diff>`` where the tree has changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), *args],
                              capture_output=True, text=True, timeout=30).stdout
    try:
        commit, diff = git("rev-parse", "HEAD").strip(), git("diff", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}+dirty:{hashlib.sha1(diff.encode()).hexdigest()[:12]}" if diff else commit or None


# ---------------------------------------------------------------------------- data


def load_set(name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """Features (NaN where missing), targets and the task of ``name``; :class:`DataUnavailable`
    (one line saying how to get it) where it cannot be had."""
    from sklearn.datasets import load_diabetes, load_wine

    if name == "wine":
        X, y = load_wine(return_X_y=True)
        return X, y.astype(float), "classification"
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True, scaled=False)
        return X, y.astype(float), "regression"
    if name == "liver-drinks":
        X, y, _ = read_shared("liver", target="f5")
        return X, y, "regression"
    X, y, _ = load_uci(name)
    return X, y, "classification"


def split_indices(name: str, y: np.ndarray, task: str, seed: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Split ``k``: a random 70/30 split (seed ``seed + k``, stratified for classification), or
    for a :data:`HELDOUT` set its IDA realisation ``k + 1``, the test part cut to a random
    :data:`HELDOUT_TEST` rows."""
    from sklearn.model_selection import train_test_split

    if name in HELDOUT:
        train, test = ida_realisation(name, k + 1)
        if test.size > HELDOUT_TEST:
            test = np.random.default_rng(seed + k).choice(test, HELDOUT_TEST, replace=False)
        return np.sort(train), np.sort(test)
    train, test = train_test_split(np.arange(y.size), test_size=0.3, random_state=seed + k,
                                   stratify=y if task == "classification" else None)
    return np.sort(train), np.sort(test)


def raw_kernels(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SimpleMKL's grid on standardised features, unnormalised: ``(M, N, N)`` and ``(M, T, N)``."""
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.functions import compute_kernels

    specs = kernel_grid(X_train.shape[1], widths=WIDTHS, degrees=DEGREES)
    return compute_kernels(specs, X_train), compute_kernels(specs, X_train, X_test)


def unit_trace(K: np.ndarray, rows: np.ndarray, K_eval: np.ndarray, eval_rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The training stack on ``rows`` and the evaluation stack (``eval_rows`` of ``K_eval``
    against ``rows``), both divided by each kernel's trace on ``rows``."""
    train = np.ascontiguousarray(K[:, rows][:, :, rows])  # NumPy lays the cut out transposed
    scale = 1.0 / np.einsum("mii->m", train)
    train *= scale[:, None, None]
    evaluation = np.ascontiguousarray(K_eval[:, eval_rows][:, :, rows]) * scale[:, None, None]
    return train, evaluation


# ------------------------------------------------------------------------- methods
# Each method: ``fit(params, K, y, K_eval, y_eval, run, X, X_eval) -> dict`` with ``score``
# (accuracy, or minus the RMSE), ``seconds`` (fit and predict), ``status``, ``kept`` (kernels);
# ``run`` holds the solvers' ``time_limit`` and ``tol``.
# ``X`` and ``X_eval`` are the standardised features of the same rows (the estimators' defaults
# build their own kernels from them; the other methods take the grid's kernels).


def _score(task: str, predicted: np.ndarray, y: np.ndarray) -> float:
    if task == "classification":
        return float(np.mean(predicted == y))
    return -float(np.sqrt(np.mean((predicted - y) ** 2)))


def kernelfuse_fit(solver: str, family: str, fixed: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    """A kernelfuse solver on the stack; more than two classes one-vs-rest (argmax)."""
    def fit(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
            y_eval: np.ndarray, run: dict[str, float], *_: np.ndarray) -> dict[str, Any]:
        import kernelfuse

        classes = np.unique(y)
        positives = classes[1:] if classes.size == 2 else classes
        start = time.perf_counter()
        scores, statuses, kept = [], [], np.zeros(K.shape[0], dtype=bool)
        for positive in positives:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = kernelfuse.solve(K, np.where(y == positive, 1.0, -1.0), solver=solver,
                                          family=family, **{"check_psd": False, **run, **fixed},
                                          **params)
            scores.append(result.decision_function(K_eval))
            statuses.append(result.status)
            kept |= _kept(result)
        f = np.column_stack(scores)
        predicted = np.where(f[:, 0] >= 0, classes[-1], classes[0]) if classes.size == 2 \
            else classes[np.argmax(f, axis=1)]
        seconds = time.perf_counter() - start
        worst = next((s for s in statuses if s != "converged"), "converged")
        return {"score": _score("classification", predicted, y_eval), "seconds": seconds,
                "status": worst, "kept": int(kept.sum())}
    return fit


def _kept(result: Any) -> np.ndarray:
    """Kernels the model uses: weight above 1e-6, or (no weights: mikl) a nonzero coefficient."""
    if result.kernel_weights is not None:
        return np.asarray(result.kernel_weights) > 1e-6
    coef = np.abs(np.asarray(result.coef)).reshape(result.coef.shape[0], -1)
    return coef.max(axis=1) > 1e-6 * max(coef.max(), 1e-300)


def mkl_regressor(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
                  y_eval: np.ndarray, run: dict[str, float], *_: np.ndarray) -> dict[str, Any]:
    """``MKLRegressor`` (SpicyMKL, ``l1_mkl`` with the squared loss) on the precomputed stack."""
    from kernelfuse import MKLRegressor

    start = time.perf_counter()
    model = MKLRegressor(kernels="precomputed", normalization="none", check_psd=False,
                         **run, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(np.moveaxis(K, 0, 2), y)
        predicted = model.predict(np.moveaxis(K_eval, 0, 2))
    seconds = time.perf_counter() - start
    return {"score": _score("regression", predicted, y_eval), "seconds": seconds,
            "status": model.result_.status, "kept": int(_kept(model.result_).sum())}


def mean_kernel(estimator: str, task: str) -> Callable[..., dict[str, Any]]:
    """A scikit-learn estimator (``SVC``, ``SVR``, ``KernelRidge``) on the mean kernel."""
    def fit(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
            y_eval: np.ndarray, run: dict[str, float], *_: np.ndarray) -> dict[str, Any]:
        start = time.perf_counter()
        model = _sklearn(estimator, **params).fit(K.mean(axis=0), y)
        predicted = model.predict(K_eval.mean(axis=0))
        return {"score": _score(task, predicted, y_eval), "seconds": time.perf_counter() - start,
                "status": "ok", "kept": int(K.shape[0])}
    return fit


def rbf_svm(task: str) -> Callable[..., dict[str, Any]]:
    """scikit-learn's ``SVC`` (``SVR`` for regression) with the RBF kernel on the standardised
    features: the baseline a scikit-learn user picks.  ``params``: ``C`` (and ``epsilon``), and
    ``gamma_factor``, which multiplies scikit-learn's ``"scale"`` rule ``1 / (d X.var())`` taken
    on the fit's own training rows."""
    def fit(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
            y_eval: np.ndarray, run: dict[str, float], X: np.ndarray, X_eval: np.ndarray
            ) -> dict[str, Any]:
        from sklearn.svm import SVC, SVR

        start = time.perf_counter()
        variance = float(X.var())
        scale = 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0  # scikit-learn's "scale"
        settings = {name: value for name, value in params.items() if name != "gamma_factor"}
        model = (SVC if task == "classification" else SVR)(
            kernel="rbf", gamma=params["gamma_factor"] * scale, **settings).fit(X, y)
        predicted = model.predict(X_eval)
        return {"score": _score(task, predicted, y_eval), "seconds": time.perf_counter() - start,
                "status": "ok", "kept": 1}
    return fit


def single_kernel(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
                  y_eval: np.ndarray, run: dict[str, float], *_: np.ndarray) -> dict[str, Any]:
    """``SVC`` on the kernel ``params["kernel"]`` alone."""
    from sklearn.svm import SVC

    start = time.perf_counter()
    m = params["kernel"]
    model = SVC(kernel="precomputed", C=params["C"]).fit(K[m], y)
    predicted = model.predict(K_eval[m])
    return {"score": _score("classification", predicted, y_eval),
            "seconds": time.perf_counter() - start, "status": "ok", "kept": 1}


def estimator_defaults(task: str, settings: dict[str, Any] | None = None,
                       cv: bool = False) -> Callable[..., dict[str, Any]]:
    """``MKLClassifier()`` or ``MKLRegressor()`` as a user runs it: on the standardised features,
    every setting at its default (its own kernel grid and normalisation, solver, family and C;
    only ``time_limit`` set), so a one-point grid: no selection.  With ``settings`` (keyword
    arguments of the estimator): the same estimator with those (the candidates of
    ``benchmarks/default_choice.py``).  With ``cv``: ``MKLClassifierCV()`` or ``MKLRegressorCV()``,
    which choose C by their own cross-validation on the training part."""
    def fit(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
            y_eval: np.ndarray, run: dict[str, float], X: np.ndarray, X_eval: np.ndarray
            ) -> dict[str, Any]:
        from kernelfuse import MKLClassifier, MKLClassifierCV, MKLRegressor, MKLRegressorCV

        start = time.perf_counter()
        kinds = {(True, False): MKLClassifier, (True, True): MKLClassifierCV,
                 (False, False): MKLRegressor, (False, True): MKLRegressorCV}
        model = kinds[task == "classification", cv](time_limit=run["time_limit"], **(settings or {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            predicted = model.fit(X, y).predict(X_eval)
        seconds = time.perf_counter() - start
        kept = np.zeros(len(model.result_.coef), dtype=bool)
        for result in model.results_:
            kept |= _kept(result)
        worst = next((r.status for r in model.results_ if r.status != "converged"), "converged")
        return {"score": _score(task, predicted, y_eval), "seconds": seconds, "status": worst,
                "kept": int(kept.sum())}
    return fit


def mklpy_fit(algorithm: str) -> Callable[..., dict[str, Any]]:
    """MKLpy's ``algorithm`` (``benchmarks/mklpy_peer.py``: an SVC on its combined kernel) in a
    forked child killed at ``time_limit``; binary labels only."""
    def fit(params: dict[str, Any], K: np.ndarray, y: np.ndarray, K_eval: np.ndarray,
            y_eval: np.ndarray, run: dict[str, float], *_: np.ndarray) -> dict[str, Any]:
        from mklpy_peer import run_mklpy

        out = in_child(run_mklpy, run["time_limit"], algorithm, K, y, K_eval, y_eval, params["C"])
        if out is None:
            return {"score": math.nan, "seconds": run["time_limit"], "status": "timed_out", "kept": None}
        ok = out["status"] == "ok"
        return {"score": out["accuracy"] if ok else math.nan,
                "seconds": out["time"] + out["predict_time"] if ok else math.nan,
                "status": out["status"], "kept": out["selected_kernels"] if ok else None}
    return fit


def in_child(function: Callable[..., Any], time_limit: float, *args: Any) -> Any:
    """``function(*args)`` in a forked child process; None where it takes over ``time_limit``
    seconds (the child is then killed).  The child inherits the arrays (no copy)."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(send, function, args), daemon=True)
    child.start()
    send.close()
    try:
        return receive.recv() if receive.poll(time_limit) else None
    except EOFError:  # the child died without answering
        return {"status": f"error: the child process died (exit code {child.exitcode})"}
    finally:
        child.kill()
        child.join()
        receive.close()


def _child_main(send: Any, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    send.send(function(*args))
    send.close()


#: Method -> (task, fit function, why it cannot run on more than two classes, or None).
METHODS: dict[str, tuple[str, Callable[..., dict[str, Any]], str | None]] = {
    "spicymkl (logistic)": ("classification", kernelfuse_fit("spicymkl", "l1_mkl", {"loss": "logistic"}), None),
    "spicymkl (hinge)": ("classification", kernelfuse_fit("spicymkl", "l1_mkl", {"loss": "hinge"}), None),
    "simplemkl": ("classification", kernelfuse_fit("simplemkl", "l1_mkl_sq", {}), None),
    "mirror-vskl (vskl)": ("classification", kernelfuse_fit("mirror-vskl", "vskl", {}), None),
    "obscure (p-norm)": ("classification", kernelfuse_fit("obscure", "pnorm_mkl", {"seed": 0}), None),
    "mikl": ("classification", kernelfuse_fit("mikl", "mikl", {}), None),
    "MKLClassifier() defaults": ("classification", estimator_defaults("classification"), None),
    "MKLClassifierCV()": ("classification", estimator_defaults("classification", cv=True), None),
    "average-kernel SVM": ("classification", mean_kernel("SVC", "classification"), None),
    "RBF SVC (CV)": ("classification", rbf_svm("classification"), None),
    "single best kernel": ("classification", single_kernel, None),
    "MKLpy EasyMKL": ("classification", mklpy_fit("EasyMKL"), "benchmarks/mklpy_peer.py takes labels +1/-1"),
    "MKLpy GRAM": ("classification", mklpy_fit("GRAM"), "benchmarks/mklpy_peer.py takes labels +1/-1"),
    "MKLpy AverageMKL": ("classification", mklpy_fit("AverageMKL"), "benchmarks/mklpy_peer.py takes labels +1/-1"),
    "MKLRegressor": ("regression", mkl_regressor, None),
    "MKLRegressor() defaults": ("regression", estimator_defaults("regression"), None),
    "MKLRegressorCV()": ("regression", estimator_defaults("regression", cv=True), None),
    "SVR (mean kernel)": ("regression", mean_kernel("SVR", "regression"), None),
    "RBF SVR (CV)": ("regression", rbf_svm("regression"), None),
    "KernelRidge (mean kernel)": ("regression", mean_kernel("KernelRidge", "regression"), None),
}


def _sklearn(name: str, **params: Any) -> Any:
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.svm import SVC, SVR

    return {"SVC": SVC, "SVR": SVR, "KernelRidge": KernelRidge}[name](kernel="precomputed", **params)


def grid_points(method: str, grids: dict[str, dict[str, Sequence[Any]]], n_kernels: int
                ) -> list[dict[str, Any]]:
    grid = dict(grids[method])
    if method == "single best kernel":
        grid = {"kernel": range(n_kernels), **grid}
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in product(*(grid[n] for n in names))]


# ------------------------------------------------------------------------ protocol


def select_and_fit(method: str, grid: list[dict[str, Any]], data: dict[str, np.ndarray],
                   task: str, seed: int, run: dict[str, float]) -> dict[str, Any]:
    """3-fold cross-validation over ``grid`` on the training part (none for a one-point grid),
    the refit with the best point, its test score; every fit's time summed (``seconds``, wall
    clock; ``cpu_seconds``, this process's CPU time, which a loaded machine inflates less;
    MKLpy's fits run in a child and count in ``seconds`` only).  ``data``: the split's ``K``,
    ``K_test`` (raw grid kernels), ``X``, ``X_test`` (standardised features), ``y``, ``y_test``;
    ``run``: the solvers' ``time_limit`` and ``tol``.  Stops at the first fit that timed out."""
    from sklearn.model_selection import KFold, StratifiedKFold

    _, method_fit, _ = METHODS[method]
    K, X, y = data["K"], data["X"], data["y"]

    def fit(*args: Any) -> dict[str, Any]:  # a failing fit is a measurement, not a stop
        try:
            return method_fit(*args)
        except Exception as exc:  # noqa: BLE001
            return {"score": math.nan, "seconds": math.nan, "kept": None,
                    "status": f"error: {type(exc).__name__}: {str(exc)[:200]}"}
    splitter = (StratifiedKFold if task == "classification" else KFold)(
        FOLDS, shuffle=True, random_state=seed)
    all_rows = np.arange(y.size)
    seconds, statuses = 0.0, {}
    cpu_start = time.process_time()
    cv_scores = np.zeros(len(grid))
    folds = splitter.split(all_rows, y if task == "classification" else None) if len(grid) > 1 else ()
    for fold_train, fold_val in folds:
        K_fold, K_val = unit_trace(K, fold_train, K, fold_val)
        for i, params in enumerate(grid):
            out = fit(params, K_fold, y[fold_train], K_val, y[fold_val], run, X[fold_train], X[fold_val])
            statuses[out["status"]] = statuses.get(out["status"], 0) + 1
            if out["status"] == "timed_out":
                return {"timed_out": True, "seconds": seconds + run["time_limit"], "statuses": statuses,
                        "cpu_seconds": time.process_time() - cpu_start}
            seconds += _finite(out["seconds"])
            cv_scores[i] += out["score"] / FOLDS if math.isfinite(out["score"]) else -math.inf
    best = int(np.argmax(cv_scores))
    K_train, K_eval = unit_trace(K, all_rows, data["K_test"], np.arange(data["K_test"].shape[1]))
    out = fit(grid[best], K_train, y, K_eval, data["y_test"], run, X, data["X_test"])
    statuses[out["status"]] = statuses.get(out["status"], 0) + 1
    timed_out = out["status"] == "timed_out"
    failed = timed_out or not math.isfinite(out["score"])
    return {"timed_out": timed_out, "score": None if failed else out["score"],
            "cv_score": float(cv_scores[best]) if len(grid) > 1 else None, "params": grid[best],
            "kept": out["kept"], "refit_status": out["status"],
            "seconds": seconds + _finite(out["seconds"]),
            "cpu_seconds": time.process_time() - cpu_start, "statuses": statuses}


def _finite(seconds: float) -> float:
    """A fit's seconds, 0 for one that failed before timing itself (nan)."""
    return seconds if math.isfinite(seconds) else 0.0


def split_data(name: str, k: int, seed: int) -> tuple[str, dict[str, np.ndarray], float]:
    """The task, the standardised features ``X``, ``X_test`` and targets ``y``, ``y_test`` of split
    ``k`` of the set ``name`` (regression targets standardised on the training part), and the
    factor that gives a regression score back in the target's units."""
    X, y, task = load_set(name)
    train, test = split_indices(name, y, task, seed, k)
    X_train, X_test = standardise(X[train], X[test])
    y_train, y_test = y[train], y[test]
    shift, scale = (y_train.mean(), y_train.std()) if task == "regression" else (0.0, 1.0)
    return task, {"X": X_train, "X_test": X_test, "y": (y_train - shift) / scale,
                  "y_test": (y_test - shift) / scale}, float(scale)


def one_split(name: str, k: int, cfg: dict[str, Any], methods: list[str],
              skip: dict[str, str]) -> dict[str, Any]:
    """Every method of ``methods`` (not in ``skip``) on split ``k`` of the set ``name``."""
    task, data, scale = split_data(name, k, cfg["seed"])
    start = time.perf_counter()
    K, K_test = raw_kernels(data["X"], data["X_test"])
    kernel_seconds = time.perf_counter() - start
    data.update(K=K, K_test=K_test)
    runs: dict[str, Any] = {}
    for method in methods:
        if method in skip:
            runs[method] = {"skipped": skip[method]}
            continue
        grid = grid_points(method, cfg["grids"], K.shape[0])
        run = select_and_fit(method, grid, data, task, cfg["seed"] + k,
                             {"time_limit": cfg["time_limit"], "tol": cfg["tol"]})
        if task == "regression" and run.get("score") is not None:
            run["score"] *= scale  # minus the RMSE in the target's units
        runs[method] = run
        log(f"  {name} split {k}: {method:26s} score {fmt(run.get('score'))}, "
            f"{fmt(run['seconds'])} s{' TIMED OUT' if run['timed_out'] else ''}")
    return {"split": k, "n_train": int(data["y"].size), "n_test": int(data["y_test"].size),
            "kernel_seconds": kernel_seconds, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "cpu": machine_info()["cpu"], "runs": runs}


def run_set(name: str, cfg: dict[str, Any], mklpy_reason: str | None,
            checkpoint: Path | None = None) -> dict[str, Any]:
    """Every split of the set ``name``.  With ``checkpoint`` (a file), the splits already there
    (written by a run of the same commit and settings, :func:`run_key`) are kept and the run
    goes on from the next one; each finished split is added to it at once (atomically), so an
    interrupted run loses at most the split in progress."""
    X, y, task = load_set(name)
    n_classes = int(np.unique(y).size) if task == "classification" else None
    methods = [m for m, (t, _, _) in METHODS.items() if t == task and m in cfg["methods"]]
    skip = {}
    for method in methods:
        binary_only = METHODS[method][2]
        if method.startswith("MKLpy") and mklpy_reason:
            skip[method] = f"MKLpy not available: {mklpy_reason}"
        elif binary_only and n_classes and n_classes > 2:
            skip[method] = f"{n_classes} classes: {binary_only}"
    if any(method.startswith("MKLpy") and method not in skip for method in methods):
        from mklpy_peer import mklpy_status

        mklpy_status()  # MKLpy and torch imported here (a joblib worker too), not in each child
    log(f"{name}: {task}, N = {y.size}, d = {X.shape[1]}, M = {13 * (X.shape[1] + 1)}")
    splits = read_checkpoint(checkpoint, cfg) if checkpoint else []
    resumed = len(splits)
    if splits:
        log(f"{name}: {len(splits)} split(s) from {checkpoint}")
    spent = dict.fromkeys(methods, 0.0)
    for k in range(cfg["n_splits"]):
        for method in methods:
            if cfg["budget"] is not None and method not in skip and spent[method] >= cfg["budget"]:
                skip[method] = f"over its {cfg['budget']:g} s budget after {k} splits"
        split = splits[k] if k < len(splits) else one_split(name, k, cfg, methods, skip)
        for method, run in split["runs"].items():
            spent[method] += run.get("seconds", 0.0)
            if run.get("timed_out"):
                skip[method] = f"timed out on split {k} (a fit over {cfg['time_limit']:g} s)"
        if k >= len(splits):
            splits.append(split)
            if checkpoint:
                write_json(checkpoint, {"key": run_key(cfg), "splits": splits})
    return {"name": name, "task": task, "n": int(y.size), "d": int(X.shape[1]),
            "M": 13 * int(X.shape[1] + 1), "n_classes": n_classes, "methods": methods,
            "resumed_splits": resumed,
            "splits": splits}


def run_key(cfg: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the commit (a clean tree) and the settings."""
    return {"git_commit": git_state(), **{k: cfg[k] for k in (
        "n_splits", "time_limit", "budget", "grids", "tol", "seed", "methods")}}


def read_checkpoint(path: Path, cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """The splits of the checkpoint ``path`` (none where it does not exist); a
    :class:`SystemExit` naming the difference where it is from another commit or settings."""
    if not path.exists():
        return []
    saved = json.loads(path.read_text())
    key = json.loads(json.dumps(run_key(cfg)))  # tuples as lists, like the file's
    if saved["key"] != key:
        differ = sorted(k for k in key if saved["key"].get(k) != key[k])
        raise SystemExit(f"{path}: written by another run ({', '.join(differ)} differ: "
                         f"{ {k: saved['key'].get(k) for k in differ} }); remove the "
                         f"folder {path.parent} to start afresh, or resume from that commit and settings")
    return list(saved["splits"])


# -------------------------------------------------------------------------- tables


def score_sign(task: str) -> float:
    """+1 where a higher score is better (accuracy), -1 for the scores of regression (minus the
    RMSE, reported as the RMSE)."""
    return 1.0 if task == "classification" else -1.0


def score_digits(task: str) -> int:
    """Significant digits of a reported score: accuracy 3, RMSE 2."""
    return 3 if task == "classification" else 2


def _baseline_means(data: dict[str, Any]) -> dict[str, float]:
    """The mean test score (higher is better) of each of the set's :data:`BASELINES` that has a
    score on every split."""
    means = {}
    for method in BASELINES[data["task"]]:
        scores = [(split["runs"].get(method) or {}).get("score") for split in data["splits"]]
        if scores and None not in scores:
            means[method] = float(np.mean(scores))
    return means


def better_baseline(data: dict[str, Any]) -> str | None:
    """The baseline of the set's paired tests: of :data:`BASELINES`, the one with the better mean
    score over the splits (ties to the first) among those scored on every split; where only one
    was (a results file from before the RBF baseline), that one; None where neither was."""
    means = _baseline_means(data)
    return max(means, key=means.__getitem__) if means else None


def _baseline_note(data: dict[str, Any]) -> str:
    """Which of the set's :data:`BASELINES` the better one was not chosen among, and why."""
    means = _baseline_means(data)
    missing = [f"{m} {'not run on every split' if m in data.get('methods', ()) else 'not in this run'}"
               for m in BASELINES[data["task"]] if m not in means]
    return f" ({'; '.join(missing)})" if missing else ""


def significantly_worse(scores: Sequence[float], baseline: Sequence[float]) -> bool:
    """Whether paired scores over the splits (higher is better: accuracy, minus the RMSE) are
    significantly worse than the baseline's: a lower mean and a two-sided paired t-test with
    p < :data:`ALPHA` (a difference the same on every split, which has no t statistic, counts
    where it is negative).  Fewer than two pairs are never significant."""
    from scipy import stats

    a, b = np.asarray(scores, dtype=float), np.asarray(baseline, dtype=float)
    if a.size < 2 or np.mean(a - b) >= 0:
        return False
    if np.std(a - b) == 0:
        return True
    return float(stats.ttest_rel(a, b).pvalue) < ALPHA


@functools.cache
def wilcoxon_pvalue(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """The paired Wilcoxon signed-rank test's two-sided p-value (scipy's ``stats.wilcoxon`` at its
    defaults), computed once per pair of score lists: the report's tables compare the same pairs
    many times.

    With ties or zero differences and at most 13 pairs, scipy's answer is the exact permutation
    test over the ``2^n`` sign patterns of the differences, which it evaluates one pattern at a
    time (0.5 s a pair at n = 10).  Here the same null distribution is one matrix product: a sign
    pattern changes which differences are positive, not the ranks of their magnitudes, so each
    pattern's statistic ``r_plus`` is its positive differences' ranks summed.  The ranks are
    multiples of 1/2, so the sums, and the counts that make the p-value, are exact."""
    from scipy import stats

    d = np.subtract(a, b)
    magnitudes = np.abs(d[d != 0])
    ties_or_zeros = magnitudes.size < d.size or np.unique(magnitudes).size < magnitudes.size
    if not ties_or_zeros or d.size > 13 or magnitudes.size == 0:  # scipy's exact or normal null
        return float(stats.wilcoxon(np.array(a), np.array(b)).pvalue)
    ranks = np.zeros(d.size)
    ranks[d != 0] = stats.rankdata(magnitudes)  # average ranks; zero differences are dropped
    flips = ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1).astype(bool)
    null = ((d > 0) ^ flips) @ ranks
    observed = float(ranks[d > 0].sum())
    tolerance = abs(100 * np.finfo(float).eps * observed)  # scipy's, for ties of the statistic
    below, above = np.mean(null <= observed + tolerance), np.mean(null >= observed - tolerance)
    return float(np.clip(2 * min(below, above), 0.0, 1.0))


def method_summary(data: dict[str, Any], method: str) -> dict[str, Any]:
    """Mean and std of the test score over the splits where the method ran, its kernels kept,
    its selection's seconds, its non-converged fits, and against the set's better baseline
    (``baseline``: :func:`better_baseline`) on the splits both have: the mean gain (``gain``,
    +: better), the paired tests' p-values and whether the method is significantly worse
    (``worse``: :func:`significantly_worse`); those None for the baseline itself."""
    from scipy import stats

    runs = [split["runs"][method] for split in data["splits"]]
    done = [r for r in runs if r.get("score") is not None]
    scores = np.array([score_sign(data["task"]) * r["score"] for r in done])
    baseline = better_baseline(data)
    pairs = [(r["score"], split["runs"][baseline]["score"])
             for split, r in zip(data["splits"], runs, strict=True) if r.get("score") is not None
             ] if baseline is not None and method != baseline else []
    t_p = wilcoxon_p = gain = worse = None
    if pairs:
        a, b = np.array(pairs).T
        gain, worse = float(np.mean(a - b)), significantly_worse(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if len(pairs) >= 2 and np.std(a - b) > 0:  # a constant difference has no t statistic
                t_p = float(stats.ttest_rel(a, b).pvalue)
            if len(pairs) >= 2 and np.any(a != b):
                wilcoxon_p = wilcoxon_pvalue(tuple(a), tuple(b))
    statuses: dict[str, int] = {}
    for r in runs:
        for status, count in r.get("statuses", {}).items():
            statuses[status] = statuses.get(status, 0) + count
    why = next((r["skipped"] for r in runs if "skipped" in r), None)
    timed_out = next((split["split"] for split, r in zip(data["splits"], runs, strict=True)
                      if r.get("timed_out")), None)
    kept = [r["kept"] for r in done if r.get("kept") is not None]
    return {"n": len(done), "mean": float(scores.mean()) if done else None,
            "std": float(scores.std(ddof=1)) if len(done) > 1 else None,
            "kept": float(np.mean(kept)) if kept else None,
            "seconds": float(np.mean([r["seconds"] for r in done])) if done else None,
            "baseline": baseline, "gain": gain, "t_p": t_p, "wilcoxon_p": wilcoxon_p, "worse": worse,
            "statuses": statuses, "skipped": why, "timed_out_split": timed_out}


def _outcome(summary: dict[str, Any], n_splits: int) -> str:
    """What kept a method from some splits, and its fits that ended without the certified gap."""
    notes = []
    if summary["timed_out_split"] is not None:
        notes.append(f"timed out on split {summary['timed_out_split']}")
    elif summary["skipped"]:
        notes.append(f"{'not run' if not summary['n'] else 'then not run'}: {summary['skipped']}")
    other = {s: c for s, c in summary["statuses"].items() if s not in ("converged", "ok", "timed_out")}
    if other:
        total = sum(summary["statuses"].values())
        notes.append(", ".join(f"{c}/{total} fits {s}" for s, c in sorted(other.items())))
    if summary["n"] and summary["n"] < n_splits:
        notes.append(f"{summary['n']} of {n_splits} splits")
    return "; ".join(notes) or "-"


def pm(summary: dict[str, Any], digits: int = 3) -> str:
    """A summary's mean ± std (its mean alone from one split), ``digits`` decimals."""
    if summary["mean"] is None:
        return "-"
    std = "" if summary["std"] is None else f" ± {summary['std']:.{digits}f}"
    return f"{summary['mean']:.{digits}f}{std}"


def not_worse_mark(summary: dict[str, Any]) -> str:
    """The mark of the target: ``yes`` where the method is not significantly worse than the
    better baseline, ``NO`` where it is, ``-`` for the baseline itself (or no pairs)."""
    return "-" if summary["worse"] is None else "NO" if summary["worse"] else "yes"


def results_table(payload: dict[str, Any], task: str = "classification") -> str:
    """One row per set and method: score mean ± std, kernels kept, seconds, paired tests against
    the set's better baseline (named per row) and whether the method is not significantly
    worse than it."""
    metric = "accuracy" if task == "classification" else "RMSE"
    rows = []
    for data in payload["sets"]:
        if data["task"] != task:
            continue
        n_splits = len(data["splits"])
        against = f"{better_baseline(data) or 'none'}{_baseline_note(data)}"
        for method in data["methods"]:
            s = method_summary(data, method)
            digits = score_digits(task)
            rows.append([f"{data['name']} (M = {data['M']})", method, pm(s, digits), s["kept"],
                         s["seconds"], against, s["t_p"], s["wilcoxon_p"], not_worse_mark(s),
                         _outcome(s, n_splits)])
    headers = ["set", "method", f"test {metric} (mean ± std)", "kernels kept", "s per split (wall)",
               "against (the better baseline)", "p (paired t)", "p (Wilcoxon)",
               "not significantly worse (p ≥ 0.05 or better)", "fits not converged / splits missing"]
    return split_table(headers, rows, keys=[0, 1], groups=[
        (f"Test {metric} over the splits, kernels kept, seconds of the whole selection per split:",
         [2, 3, 4]),
        (f"Paired tests over the splits against the better of the two baselines "
         f"({' and '.join(BASELINES[task])}, by mean {metric}), and what kept a method from "
         "some fits or splits:", [5, 6, 7, 8, 9])])


#: The estimators at their defaults (issue 26, item 5), one per task.
DEFAULTS = {"classification": "MKLClassifier() defaults", "regression": "MKLRegressor() defaults"}


def _complete(data: dict[str, Any], summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The summaries of the methods that ran on every split of the set."""
    return {m: s for m, s in summaries.items() if s["n"] == len(data["splits"]) and s["mean"] is not None}


def _best_of(methods: Sequence[str], complete: dict[str, dict[str, Any]], task: str) -> str | None:
    """The one of ``methods`` with the best mean score (None where there are none)."""
    sign = score_sign(task)
    return max(methods, key=lambda m: sign * complete[m]["mean"]) if methods else None


def _standings(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Per set with a method run on every split: the summaries (:func:`method_summary`) of the
    methods run on every split, the best of them, the estimator's defaults, the better
    baseline (its cell: name, mean ± std, a baseline missing from the file) and the best MKL
    method (neither the defaults, nor a baseline, nor a mean kernel or a single kernel)."""
    out = []
    for data in payload["sets"]:
        task = data["task"]
        summaries = {m: method_summary(data, m) for m in data["methods"]}
        complete = _complete(data, summaries)
        best = _best_of(list(complete), complete, task)
        if best is None:
            continue
        baseline, defaults, digits = better_baseline(data), DEFAULTS[task], score_digits(task)
        mkl = [m for m in complete if m not in (defaults, *BASELINES[task])
               and "mean kernel" not in m and m not in ("single best kernel", "MKLpy AverageMKL")]
        baseline_cell = ("none run on every split" if baseline is None else
                         f"{baseline} {pm(summaries[baseline], digits)}") + _baseline_note(data)
        out.append({"data": data, "sign": score_sign(task), "complete": complete, "best": best,
                    "defaults": summaries.get(defaults), "baseline_cell": baseline_cell,
                    "best_mkl": _best_of(mkl, complete, task), "digits": digits})
    return out


#: The verdicts of a method against the set's better baseline (:func:`verdict`), in order.
VERDICTS = ("significantly worse", "not significantly worse", "significantly better")


def verdict(summary: dict[str, Any] | None) -> str | None:
    """A method against the set's better baseline (:func:`method_summary`): one of
    :data:`VERDICTS` (significantly better: a higher mean and a paired t-test with p <
    :data:`ALPHA`); None for the baseline itself, or where there are no pairs."""
    if summary is None or summary["worse"] is None:
        return None
    p = summary["t_p"]
    return (VERDICTS[0] if summary["worse"] else VERDICTS[2]
            if summary["gain"] > 0 and p is not None and p < ALPHA else VERDICTS[1])


def _versus(summary: dict[str, Any] | None) -> str:
    """A method against the set's better baseline: the mean gain over the paired splits (+:
    better), the paired t-test's p, and its :func:`verdict`."""
    said = verdict(summary)
    if summary is None or said is None:
        return "-"
    p = summary["t_p"]
    return f"{summary['gain']:+.3g}{'' if p is None else f' (p = {p:.2g})'}, {said}"


def _against(standing: dict[str, Any]) -> str:
    """The best MKL method against the better baseline (:func:`_versus`), by name."""
    best_mkl = standing["best_mkl"]
    versus = "-" if best_mkl is None else _versus(standing["complete"][best_mkl])
    return "-" if versus == "-" else f"{best_mkl}: {versus}"


def winners_table(payload: dict[str, Any]) -> str:
    """Per set: the best method by its mean score over the splits (every split run), the methods
    within one standard deviation of that mean, where the estimator's defaults stand against
    it, the better baseline, and the defaults and the best MKL method against that baseline
    (mean gain, paired t-test, significantly worse or not).  A method that missed splits does
    not compete for best."""
    rows = []
    for st in _standings(payload):
        complete, best, digits = st["complete"], st["best"], st["digits"]
        top, spread = complete[best]["mean"], complete[best]["std"] or 0.0
        close = [m for m, s in complete.items() if m != best and abs(s["mean"] - top) <= spread]
        default = st["defaults"]
        if default is None or default["mean"] is None:
            default_cell = "not run"
        else:
            behind = st["sign"] * (top - default["mean"])
            default_cell = (f"{pm(default, digits)}: {'best' if behind <= 0 else f'{behind:.3g} behind'}, "
                            f"{'within' if behind <= spread else 'NOT within'} one std")
        rows.append([st["data"]["name"], f"{best} {pm(complete[best], digits)}", ", ".join(close) or "none",
                     default_cell, st["baseline_cell"], _versus(default), _against(st)])
    return markdown_table(["set", "best (mean ± std)", "within one std of the best", "estimator defaults",
                           "better baseline (mean ± std)", "estimator defaults against it (+: better)",
                           "best MKL method against it (+: better)"], rows) + _stale(payload)


def headline_table(payload: dict[str, Any]) -> str:
    """The README's short form of :func:`winners_table`: per set the best method, the better
    baseline, the defaults, and the defaults and the best MKL method against that baseline."""
    rows = []
    for st in _standings(payload):
        digits, best = st["digits"], st["best"]
        rows.append([st["data"]["name"], f"{best} {pm(st['complete'][best], digits)}", st["baseline_cell"],
                     "-" if st["defaults"] is None or st["defaults"]["mean"] is None else pm(st["defaults"], digits),
                     _versus(st["defaults"]), _against(st)])
    return markdown_table(["set", "best", "better baseline", "estimator defaults",
                           "defaults against the baseline (+: better)",
                           "best MKL method against the baseline (+: better)"], rows) + _stale(payload)


def _solver_row(method: str, sets: Sequence[dict[str, Any]], scale: float
                ) -> tuple[bool, float | None, list[str]]:
    """One row of :func:`solvers_table`, ``method`` over the sets it ran on: whether it was paired
    with the better baseline on every set, its mean gain over it (``scale`` times the score's; 0
    on a set where it is that baseline; None where it was never paired), and the row's cells."""
    gains, counts, baseline_of = [], dict.fromkeys(VERDICTS, 0), 0
    seconds, kept = [], []
    for data in sets:
        summary = method_summary(data, method) if method in data["methods"] else {"n": 0}
        if not summary["n"]:
            continue
        if better_baseline(data) == method:
            gains.append(0.0)
            baseline_of += 1
        elif (said := verdict(summary)) is not None:
            gains.append(scale * summary["gain"])
            counts[said] += 1
        seconds += [split["runs"][method]["seconds"] for split in data["splits"]
                    if split["runs"][method].get("score") is not None]
        if summary["kept"] is not None:
            kept.append(summary["kept"])
    if not seconds:
        ran = any(method in data["methods"] for data in sets)
        return False, None, [method, "not run" if ran else "not in this run", "-", "-", "-"]
    mean = float(np.mean(gains)) if gains else None
    cover = "" if len(gains) == len(sets) else f" ({len(gains)} of {len(sets)} sets)"
    tally = " / ".join(str(counts[v]) for v in VERDICTS)
    if baseline_of:
        tally = "the baseline" if baseline_of == len(gains) else f"{tally} (the baseline on {baseline_of})"
    low, high = (f"{k:.0f}" for k in (min(kept, default=math.nan), max(kept, default=math.nan)))
    spread = "-" if not kept else low if low == high else f"{low} to {high}"
    gain = "-" if mean is None else f"{mean:+.1f}{cover}"
    return len(gains) == len(sets), mean, [method, gain, tally, fmt(float(np.median(seconds)), 2), spread]


def solvers_table(payload: dict[str, Any], task: str = "classification") -> str:
    """One row per method of the run on the sets of ``task`` (those run on every set first, by
    their mean gain), then the two baselines (:data:`BASELINES`): the test score's mean gain over
    the better baseline of each set (:func:`method_summary`; in points of accuracy, +: better),
    averaged over the sets the method ran on; on how many sets it is significantly worse, not
    significantly worse, or significantly better than that baseline (:func:`verdict`: paired
    t-test over the splits); the median seconds of one selection (every cross-validation fit and
    the refit) over all its splits; and the range over the sets of the kernels it keeps (mean
    over the splits).  What the columns mean is a note under the table."""
    sets = [data for data in payload["sets"] if data["task"] == task]
    scale, unit = (100.0, "points") if task == "classification" else (1.0, "RMSE, +: lower")
    methods = list(dict.fromkeys(m for data in sets for m in data["methods"] if m not in BASELINES[task]))
    rows = sorted((_solver_row(m, sets, scale) for m in methods),
                  key=lambda row: (row[1] is None, not row[0], -(row[1] or 0.0)))
    rows += [_solver_row(m, sets, scale) for m in BASELINES[task]]
    sizes = sorted({data["M"] for data in sets}) or [0]
    score = "accuracy" if task == "classification" else "RMSE"
    note = (f"\n\n_{len(sets)} sets, {payload['n_splits']} random 70/30 splits each, every method's "
            f"hyperparameters chosen by {payload['folds']}-fold cross-validation inside the training part. "
            f"Gain: test {score} minus that of the set's better baseline (the better of "
            f"{' and '.join(BASELINES[task])} by its mean), averaged over the sets. Worse / same / better: "
            f"the sets where a paired t-test over the splits finds it significantly worse (p < {ALPHA:g}), "
            "neither, or significantly better. Seconds: one whole selection, every cross-validation fit "
            f"and the refit. Kernels kept: of SimpleMKL's grid, {sizes[0]} to {sizes[-1]} kernels a set "
            "(the estimators' defaults build their own)._")
    return markdown_table(
        ["method", f"gain over the better baseline ({unit})", "sets worse / same / better",
         "seconds per selection (median)", "kernels kept"],
        [cells for *_, cells in rows]) + note + _stale(payload)


def skipped_lines(payload: dict[str, Any]) -> str:
    lines = [f"- {line}" for line in payload.get("skipped_sets", [])]
    return "\n".join(lines) if lines else "Every set of the run could be had."


def settings_table(payload: dict[str, Any]) -> str:
    rows = [[method, ", ".join(f"{name} in {{{', '.join(fmt(v) for v in values)}}}"
                              for name, values in grid.items())]
            for method, grid in payload["grids"].items()]
    lead = (f"{payload['n_splits']} splits{_seed_note(payload)}, {payload['folds']}-fold cross-validation, "
            f"a time limit of {payload['time_limit']:g} s per fit, "
            f"solvers stopped at a certified relative gap of {payload.get('tol', 1e-3):g}, "
            f"{'no budget' if payload['budget'] is None else str(payload['budget']) + ' s per method and set'}, "
            f"{payload['jobs']} job(s) at once"
            f"{' (two concurrent workers: the seconds are under load)' if payload['jobs'] > 1 else ''}; "
            f"load average {_load(payload['machine'].get('loadavg_1_5_15min'))} at the start, "
            f"{_load(payload.get('loadavg_end_1_5_15min'))} at the end; "
            f"MKLpy {payload['mklpy'].get('version') or 'absent'}, torch {payload['mklpy'].get('torch') or 'absent'}."
            f"{_span(payload)}{_reruns(payload)}")
    return lead + "\n\n" + markdown_table(["method", "grid searched"], rows)


def _stale(payload: dict[str, Any]) -> str:
    """A line under a table of random splits seeded :data:`CHOICE_SEED`: the splits the defaults
    were chosen on, so the table is to be regenerated."""
    if payload.get("seed") != CHOICE_SEED or payload.get("heldout"):
        return ""
    return (f"\n\n_Measured on the splits the estimators' defaults were chosen on (seed {CHOICE_SEED}): "
            f"to be regenerated from seed {REPORT_SEED}, the default of `python benchmarks/accuracy.py`._")


def _seed_note(payload: dict[str, Any]) -> str:
    """The splits' seed, and where a run of random splits is on those the defaults are chosen on."""
    seed = payload.get("seed")
    if seed is None:
        return ""
    if payload.get("heldout"):
        return f" (IDA's realisations, each test part cut with seed {seed} + k)"
    if seed == CHOICE_SEED:
        return (f" (split k seeded {seed} + k: the splits the estimators' defaults were chosen on, "
                f"so these tables are to be regenerated from seed {REPORT_SEED})")
    return f" (split k seeded {seed} + k)"


def _span(payload: dict[str, Any]) -> str:
    """When and on which processors the splits ran (a resumed run spans several starts)."""
    splits = [split for data in payload["sets"] for split in data["splits"] if "date" in split]
    if not splits:
        return ""
    dates = sorted(split["date"] for split in splits)
    cpus = sorted({split["cpu"] for split in splits})
    resumed = sum(1 for data in payload["sets"] if data.get("resumed_splits"))
    return (f" The splits ran from {dates[0]} to {dates[-1]} on {' and '.join(cpus)}"
            f"{f' ({resumed} set(s) resumed from a checkpoint)' if resumed else ''}.")


def _reruns(payload: dict[str, Any]) -> str:
    """The rows rerun into the file (``--merge-into``), with their commit and date."""
    return "".join(f" Rerun on the same splits at git {str(r['git_commit'])[:8]}, {r['date']}, {r['cpu']}: "
                   f"{', '.join(r['methods'])}." for r in payload.get("reruns", []))


def _load(loadavg: Sequence[float] | None) -> str:
    return "not recorded" if not loadavg else f"{loadavg[0]:.1f} (1 min)"


TABLES: dict[str, Callable[..., str]] = {
    "classification": lambda d: results_table(d, "classification"),
    "regression": lambda d: results_table(d, "regression"),
    "winners": winners_table,
    "headline": headline_table,
    "solvers": solvers_table,
    "settings": settings_table,
    "skipped": skipped_lines,
}


# ---------------------------------------------------------------------------- main


#: The methods of the overview figure (:func:`draw_overview`), in its legend's order.
OVERVIEW = ("MKLClassifier() defaults", "MKLClassifierCV()", "spicymkl (logistic)", "simplemkl",
            "MKLpy EasyMKL", "average-kernel SVM", "RBF SVC (CV)")


def draw_overview(payload: dict[str, Any], png: Path) -> Path | None:
    """The home page's figure: per classification set, each of :data:`OVERVIEW`'s test accuracy
    against the set's better baseline (:func:`better_baseline`: the mean and std over the splits
    of the paired difference, in points of accuracy; the better baseline is 0), and the seconds of
    its whole selection (every cross-validation fit and the refit, mean over the splits); None
    without matplotlib."""
    from common import have_matplotlib
    from kernelfuse.runtime.files import write_png

    if not have_matplotlib():
        return None
    import matplotlib.pyplot as plt

    sets = [data for data in payload["sets"] if data["task"] == "classification"]
    methods = [m for m in OVERVIEW if m in payload["methods"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.6 * len(sets) + 2.2), sharey=True)
    rows = np.arange(len(sets))
    for k, method in enumerate(methods):
        gains, spreads, seconds = [], [], []
        for data in sets:
            baseline = better_baseline(data)
            pairs = [(split["runs"][method].get("score"), split["runs"][baseline].get("score"))
                     for split in data["splits"]] if baseline else []
            diffs = 100 * np.array([a - b for a, b in pairs if a is not None and b is not None])
            gains.append(diffs.mean() if diffs.size else np.nan)
            spreads.append(diffs.std(ddof=1) if diffs.size > 1 else 0.0)
            seconds.append(method_summary(data, method)["seconds"] or np.nan)
        offset = rows + (k - (len(methods) - 1) / 2) * 0.11
        marker = "o" if method.startswith("MKLClassifier") else "s" if "SVC" in method or "SVM" in method else "^"
        left.errorbar(gains, offset, xerr=spreads, fmt=marker, ms=5, capsize=2, label=method)
        right.plot(seconds, offset, marker, ms=5)
    left.axvline(0.0, color="0.5", lw=0.8)
    left.set_yticks(rows, [data["name"] for data in sets])
    left.invert_yaxis()
    left.set_xlabel("test accuracy minus the better baseline's (points; mean +- std over the splits)")
    right.set_xscale("log")
    right.set_xlabel("seconds per selection and refit (mean)")
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    fig.legend(loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(f"{payload['n_splits']} random 70/30 splits (seeds {payload['seed']}-"
                 f"{payload['seed'] + payload['n_splits'] - 1}), hyperparameters by 3-fold "
                 "cross-validation; better baseline: the average-kernel SVM or the RBF SVC", fontsize=9)
    fig.tight_layout(rect=(0.0, 0.1, 1.0, 1.0))
    write_png(fig, png, dpi=110)
    plt.close(fig)
    return png


def merge_rows(into: dict[str, Any], rerun: dict[str, Any]) -> dict[str, Any]:
    """``into`` with the rows of ``rerun`` (the same splits: seed, ``n_splits``) replacing its
    rows of the same methods, split by split, and adding the methods it did not have (to its
    ``methods`` and each set's); ``into["reruns"]`` records which methods were rerun, when,
    where and at which commit."""
    sets = {data["name"]: data for data in into["sets"]}
    for data in rerun["sets"]:
        merged = sets[data["name"]]
        for old, new in zip(merged["splits"], data["splits"], strict=True):
            old["runs"].update(new["runs"])
        merged["methods"] += [m for m in data["methods"] if m not in merged["methods"]]
    into["methods"] += [m for m in rerun["methods"] if m not in into["methods"]]
    machine = rerun["machine"]
    into.setdefault("reruns", []).append({
        "methods": rerun["methods"], "sets": [data["name"] for data in rerun["sets"]],
        "git_commit": machine["git_commit"], "date": machine["date"], "cpu": machine["cpu"],
        "tol": rerun["tol"], "wall_seconds": rerun["wall_seconds"]})
    return into


def check_mklpy() -> int:
    """``--check-mklpy`` (``make bench-env``): MKLpy's EasyMKL fitted on the CPU on two kernels of
    40 random points; prints the versions, exit status 1 where it does not run."""
    from mklpy_peer import mklpy_status, run_mklpy

    status = mklpy_status()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    K = np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    K /= np.einsum("mii->m", K)[:, None, None]
    run = run_mklpy("EasyMKL", K, y, K, y, C=100.0) if status["available"] else {"status": status["reason"]}
    print(f"MKLpy {status['version']}, torch {status['torch']}: EasyMKL {run['status']}"
          + (f", training accuracy {run['accuracy']:.2f}" if run["status"] == "ok" else ""))
    return 0 if run["status"] == "ok" else 1



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 splits, 3 small sets, 2-point grids")
    parser.add_argument("--heldout", action="store_true",
                        help="the IDA sets the estimators' defaults were not chosen on, their "
                             "realisations, a few methods (accuracy_heldout.json)")
    parser.add_argument("--splits", type=int, default=None, help="number of random splits")
    parser.add_argument("--sets", nargs="+", default=None, help="only these sets")
    parser.add_argument("--jobs", type=int, default=1,
                        help="sets run at once (joblib, one process each; >1 loads the cores)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per fit")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds per method and set: once spent, its later splits are not run")
    parser.add_argument("--methods", nargs="+", default=None, choices=list(METHODS),
                        metavar="METHOD", help="only these methods (names as in the tables)")
    parser.add_argument("--tol", type=float, default=TOL,
                        help="the solvers' certified relative duality gap")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"split k seeded SEED + k (default {REPORT_SEED}; --heldout {HELDOUT_SEED})")
    parser.add_argument("--allow-choice-seed", action="store_true",
                        help=f"allow --seed {CHOICE_SEED}, the splits the defaults are chosen on "
                             "(to reproduce tables published from those splits)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--merge-into", type=Path, default=None, metavar="JSON",
                        help="rerun --methods on the splits of this results file and replace their "
                             "rows in it (the file records the rerun's commit and date)")
    parser.add_argument("--check-mklpy", action="store_true",
                        help="only check that MKLpy fits on the CPU here (make bench-env)")
    parser.add_argument("--draw", type=Path, default=None, metavar="JSON",
                        help="only draw the overview figure of this results file (its name, .png)")
    args = parser.parse_args(argv)
    if args.check_mklpy:
        return check_mklpy()
    if args.draw:
        png = draw_overview(json.loads(args.draw.read_text()), args.draw.with_suffix(".png"))
        print(f"plot: {png}" if png else "accuracy.py: --draw needs matplotlib", file=sys.stderr)
        return 0 if png else 1
    if args.quick and args.heldout:
        parser.error("--quick and --heldout are two different runs: give one")
    config = "quick" if args.quick else "heldout" if args.heldout else "full"
    cfg = dict(CONFIGS[config])
    if args.splits:
        cfg["n_splits"] = args.splits
    if args.time_limit:
        cfg["time_limit"] = args.time_limit
    if args.budget:
        cfg["budget"] = args.budget
    seed = args.seed if args.seed is not None else HELDOUT_SEED if args.heldout else REPORT_SEED
    cfg.update(tol=args.tol, seed=seed,
               methods=list(args.methods or (HELDOUT_METHODS if args.heldout else METHODS)))
    names = [*cfg["classification"], *cfg["regression"]]
    if args.sets:
        names = list(args.sets)
    if args.merge_into:
        if not args.methods:
            parser.error("--merge-into needs --methods: the rows to rerun")
        merged = json.loads(args.merge_into.read_text())
        cfg.update(n_splits=merged["n_splits"], seed=merged["seed"], time_limit=merged["time_limit"])
        names = [data["name"] for data in merged["sets"] if data["name"] in (args.sets or [data["name"]])
                 and any(METHODS[m][0] == data["task"] for m in cfg["methods"])]
    heldout = args.heldout or bool(args.merge_into and merged.get("heldout"))
    if cfg["seed"] == CHOICE_SEED and not heldout and not args.allow_choice_seed:
        print(f"accuracy.py: --seed {CHOICE_SEED} gives the splits the estimators' defaults are chosen "
              f"on (CHOICE_SEED); publish from --seed {REPORT_SEED} (the default), or give "
              "--allow-choice-seed to reproduce the old tables", file=sys.stderr)
        return 2
    from mklpy_peer import mklpy_status

    mklpy = mklpy_status()  # imports MKLpy and torch here, before any child is forked
    skipped, available = [], []
    for name in names:
        try:
            load_set(name)
            available.append(name)
        except DataUnavailable as exc:  # liver-drinks: the line says "liver: skipped ..."
            line = str(exc) if str(exc).startswith(f"{name}:") else f"{name}: from {exc}"
            log(line)
            skipped.append(line)
    machine = machine_info()
    machine["versions"].update({"MKLpy": mklpy["version"], "torch": mklpy["torch"]})
    out = args.merge_into or args.out or RESULTS_DIR / f"accuracy{'' if config == 'full' else '_' + config}.json"
    partial = out.with_name(out.stem + (".rerun.partial" if args.merge_into else ".partial"))
    start = time.perf_counter()
    if args.jobs > 1:
        from joblib import Parallel, delayed

        sets = Parallel(n_jobs=args.jobs)(delayed(run_set)(
            name, cfg, mklpy["reason"], partial / f"{name}.json") for name in available)
    else:
        sets = [run_set(name, cfg, mklpy["reason"], partial / f"{name}.json") for name in available]
    payload = {"benchmark": "accuracy", "quick": args.quick, "heldout": args.heldout, "n_splits": cfg["n_splits"],
               "folds": FOLDS, "time_limit": cfg["time_limit"], "budget": cfg["budget"],
               "seed": cfg["seed"],
               "jobs": args.jobs, "tol": args.tol, "widths": WIDTHS,
               "degrees": DEGREES, "methods": cfg["methods"],
               "grids": {m: cfg["grids"][m] for m in cfg["methods"]}, "mklpy": mklpy,
               "skipped_sets": skipped, "sets": sets,
               "wall_seconds": time.perf_counter() - start, "machine": machine,
               "loadavg_end_1_5_15min": list(os.getloadavg())}
    if args.merge_into:
        payload = merge_rows(merged, payload)
    write_json(out, payload)
    if config == "full":
        draw_overview(payload, out.with_suffix(".png"))
    if not args.sets:  # a run of some sets keeps them for the run of all that gathers them
        shutil.rmtree(partial, ignore_errors=True)
    for table in TABLES.values():
        print(table(payload) + "\n")
    print(f"raw measurements: {out} ({payload['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
