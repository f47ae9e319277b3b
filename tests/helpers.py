"""Test helpers: small real-data kernel sets and paths (importable from any test)."""

from __future__ import annotations

import contextlib
import os
import signal
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import attrs
import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from kernelfuse.plugins.kernels.nystrom import FeatureMap

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
#: The pages a user runs from the top, every python and shell block in order
#: (tests/project/test_docs_commands.py); the other pages' python blocks: test_docs.py.
COMMAND_PAGES = (REPO / "README.md", REPO / "docs" / "tutorial.md")
SHARED_DATA = REPO.parent / "shared" / "data"
#: scikit-learn's checks the estimators fail by design: ``sample_weight`` weighs the loss only, the
#: standardisation, the grid's widths and the kernels' normalisation are those of the training
#: rows, so a row of weight 2 is not its duplicate at the estimator's level (in the problem it is:
#: tests/plugins/reference/test_weighted_reference.py).
WEIGHTS_ARE_NOT_REPEATS = {
    "check_sample_weight_equivalence_on_dense_data":
        "the features' standardisation, kernel widths and normalisation are unweighted",
}


def interruptible() -> None:
    """``preexec_fn`` of a child process a test sends SIGINT: SIGINT at its default, so that the
    child's Python raises KeyboardInterrupt.  A shell's background job (``make test &`` in a
    script) starts with SIGINT ignored, and its children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cpu_seconds(pid: int) -> float | None:
    """The CPU seconds process ``pid`` has used so far (Linux's /proc; None elsewhere): the work a
    child did, whatever else a loaded machine runs."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """The CPU seconds of this process's children reaped so far (``RUSAGE_CHILDREN``): around one
    child's wait, its whole CPU time."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def breast_cancer_kernels(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` unit-trace Gaussian kernels on random feature subsets of ``n`` samples (labels +-1)."""
    K, target = subset_kernels(load_breast_cancer(), n, m, seed)
    return K, np.where(target == 1, 1.0, -1.0)


def wine_kernels(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`breast_cancer_kernels` on scikit-learn's wine data: 3 classes (indices 0-2)."""
    return subset_kernels(load_wine(), n, m, seed)


def subset_kernels(data, n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """``m`` unit-trace Gaussian kernels on random feature subsets of ``n`` random rows, and their targets."""
    rng = np.random.default_rng(seed)
    rows = rng.permutation(data.target.size)[:n]
    X = StandardScaler().fit_transform(data.data)[rows]
    kernels = []
    for _ in range(m):
        cols = rng.choice(X.shape[1], size=rng.integers(1, 6), replace=False)
        width = rng.uniform(0.5, 3.0) * np.sqrt(cols.size)
        K = rbf_kernel(X[:, cols], gamma=1.0 / (2 * width**2))
        kernels.append(K / np.trace(K))
    return np.stack(kernels), data.target[rows]


def traced_peak(call: Callable[[], T]) -> tuple[T, int]:
    """``call()`` and the peak of memory it allocated, in bytes (tracemalloc: numpy arrays included)."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def random_pnorm_problem(seed: int, max_n: int = 400, max_m: int = 30) -> dict:  # type: ignore[type-arg]
    """A small ``pnorm_mkl`` problem no test was written for: a random subset of a scikit-learn
    data set (breast cancer or digits 3 vs 8: binary; wine or iris: 3 classes), ``N`` in
    36-``max_n`` rows, ``M`` in 8-``max_m`` Gaussian and polynomial kernels (random widths,
    degrees and feature subsets, spherically normalised), ``p`` in [1.1, 2], ``lam`` in
    1e-3.5-1e-2.  ``K``, ``y``, ``p``, ``lam`` and the data set's name."""
    from sklearn.datasets import load_digits, load_iris

    from kernelfuse.kernels.functions import KernelSpec, compute_kernels
    from kernelfuse.kernels.normalization import KernelNormalizer
    from kernelfuse.plugins.kernels.gaussian import Gaussian
    from kernelfuse.plugins.kernels.polynomial import Polynomial

    rng = np.random.default_rng(seed)
    name = ("breast-cancer", "digits", "wine", "iris")[seed % 4]
    data = {"breast-cancer": load_breast_cancer, "digits": load_digits, "wine": load_wine,
            "iris": load_iris}[name]()
    X, target = data.data, data.target
    if name == "digits":
        keep = np.isin(target, (3, 8))
        X, target = X[keep], np.where(target[keep] == 3, 1.0, -1.0)
    elif name == "breast-cancer":
        target = np.where(target == 1, 1.0, -1.0)
    n = int(rng.integers(36, min(max_n, target.size) + 1))
    rows = rng.permutation(target.size)[:n]
    X = StandardScaler().fit_transform(X[rows][:, X.std(axis=0) > 0])
    specs = []
    for _ in range(int(rng.integers(8, max_m + 1))):
        features = tuple(int(j) for j in rng.choice(X.shape[1], size=min(X.shape[1], int(rng.integers(1, 6))),
                                                    replace=False))
        function = Gaussian(width=float(rng.uniform(0.3, 4.0)) * np.sqrt(len(features))) \
            if rng.random() < 0.7 else Polynomial(degree=int(rng.integers(1, 4)))
        specs.append(KernelSpec(function, features, 0, ""))
    K = KernelNormalizer("spherical").fit(specs, X).transform(compute_kernels(specs, X))
    return {"K": K, "y": target[rows], "p": float(rng.uniform(1.1, 2.0)),
            "lam": float(10 ** rng.uniform(-3.5, -2.0)), "data": name}


def pnorm_reference(K: np.ndarray, y: np.ndarray, p: float, lam: float):  # type: ignore[no-untyped-def]
    """The cvxpy reference's certified ``pnorm_mkl`` optimum (its interval in ``.interval``)."""
    import kernelfuse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kernelfuse.solve(K, y, solver="cvxpy", family="pnorm_mkl", p=p, lam=lam)
    assert result.status == "converged", "the exact reference must certify its optimum"
    return result


def weighted_cancer_problem(seed: int, n: int = 40, real: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A weighted problem: ``(K, y, weights)`` on ``n`` random rows of breast cancer, 3 kernels
    (two Gaussians of random widths on random feature subsets, a linear one), labels in {-1, +1}
    (or, ``real``, the first feature, standardised),
    and random weights in [0.1, 5]."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    rows = rng.choice(y.size, n, replace=False)
    X = X[rows]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    kernels = []
    for width in rng.uniform(0.2, 3.0, size=2):
        cols = rng.choice(X.shape[1], 8, replace=False)
        distances = ((X[:, None, cols] - X[None, :, cols]) ** 2).sum(axis=-1)
        kernels.append(np.exp(-distances / (width * cols.size)))
    linear = X[:, 1:] @ X[:, 1:].T
    kernels.append(linear / np.trace(linear) * n)
    target = X[:, 0] if real else np.where(y[rows] > 0, 1.0, -1.0)
    return np.stack(kernels), target, rng.uniform(0.1, 5.0, size=n)


def dies_once(marker: str, value: float) -> float:
    """A parallel job whose first run with ``value`` 0 kills its own worker process (SIGKILL),
    as a lost machine would (``marker``: a file that says it has); ``2 value`` otherwise."""
    import os
    import signal

    if value == 0.0 and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return 2.0 * value



@attrs.frozen(eq=False)
class KillingFeatureMap(FeatureMap):
    """A kernel of two explicit features whose features kill the worker process computing them
    (SIGKILL), as a worker out of memory dies; in the process ``parent`` they are zeros."""

    name = "killing-features"
    parent: int

    @property
    def n_inputs(self) -> int:
        return 1

    def _map(self, X: np.ndarray) -> np.ndarray:
        import signal

        if os.getpid() != self.parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return np.zeros((X.shape[0], 2))


@contextlib.contextmanager
def local_dask_cluster(n_workers: int = 2) -> Iterator[object]:
    """A Dask ``LocalCluster`` of ``n_workers`` worker processes (one thread each) on loopback, with
    a nanny each (which restarts a killed worker); closed on exit."""
    import distributed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "Port 8787 is already in use"
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
    try:
        yield cluster
    finally:
        cluster.close()


def strict_device(block: np.ndarray) -> object:
    """``block`` on array-api-strict's second device, which refuses NumPy's own conversion as a
    GPU does (a ``to_device`` of distributed feature blocks: run on the workers, so defined here)."""
    import array_api_strict

    return array_api_strict.asarray(block, device=array_api_strict.Device("device1"))


def torch_device(block: np.ndarray) -> object:
    """``block`` as a PyTorch tensor (on the CPU: the same code a GPU's tensors take)."""
    import torch

    return torch.asarray(block)


@attrs.define
class RecordedCalls:
    """A graph's stand-in for :class:`kernelfuse.kernels.array_backend.Replayed` on any array
    library: recorded once, each replay runs the function again on the recorded inputs and
    writes its answers into the recorded outputs, as a CUDA graph's launches rewrite its memory."""

    function: Callable[..., tuple[object, ...]]
    inputs: tuple[object, ...]
    outputs: tuple[object, ...]
    replays: int = 0

    def replay(self) -> None:
        for out, new in zip(self.outputs, self.function(*self.inputs)):
            out[...] = new  # type: ignore[index]
        self.replays += 1


def record_as_a_graph(graphs: list[RecordedCalls], function: Callable[..., tuple[object, ...]],
                      inputs: tuple[object, ...]) -> tuple[RecordedCalls, tuple[object, ...]]:
    """A graph recorder (:func:`~kernelfuse.kernels.array_backend.graph_recorder`'s kind) that
    appends each graph it records to ``graphs``."""
    from kernelfuse.kernels.array_backend import device_namespace

    outputs = tuple(device_namespace(out).asarray(out, copy=True) for out in function(*inputs))
    graphs.append(RecordedCalls(function, inputs, outputs))
    return graphs[-1], outputs
