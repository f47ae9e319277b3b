"""Parallel fits through joblib (kernelfuse.runtime.parallel): the serial results, bit for bit, on loky,
threads and a real Dask LocalCluster; warnings, errors and n_jobs validation."""

from __future__ import annotations

import os
import warnings

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_wine, make_multilabel_classification
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info

import kernelfuse
from kernelfuse.frontends import estimators
from kernelfuse.frontends.estimators import MKLClassifier, MultiLabelMKLClassifier
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.frontends.persistence import load_model
from kernelfuse.kernels.functions import compute_kernels, empty_aligned
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.kernels.storage import compute_kernels_blocked, row_blocks, training_stack
from kernelfuse.runtime.parallel import (
    MappedFile,
    check_n_jobs,
    effective_n_jobs,
    lost_worker,
    map_jobs,
    remove_shared,
    shared_empty,
    shared_with_jobs,
    shares_files,
)

#: 13 features, 2 widths, linear: 42 kernels (13 single-feature Gaussians per width + all-feature ones).
SPECS = kernel_grid(13, widths=(1.0, 5.0), degrees=(1,))
GRID = {"C": [0.1, 0.3, 1.0]}


@pytest.fixture(scope="module")
def wine():
    """Wine, 3 classes, standardised: 178 x 13."""
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def assert_same_fit(a, b):
    """Two fitted estimators: the same model, bit for bit."""
    for name in ("coef_", "intercept_", "kernel_weights_"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.n_iter_ == b.n_iter_
    assert [r.objective for r in a.results_] == [r.objective for r in b.results_]


def assert_same_search(a, b):
    assert a.best_params_ == b.best_params_
    for key in ("mean_test_score", *(f"split{k}_test_score" for k in range(3))):
        assert np.array_equal(a.cv_results_[key], b.cv_results_[key]), key
    assert_same_fit(a.best_estimator_, b.best_estimator_)


def test_one_vs_rest_with_two_workers_is_the_serial_fit(wine, monkeypatch):
    X, y = wine
    serial = MKLClassifier(kernels=SPECS, n_jobs=1).fit(X, y)
    created: list[str] = []

    def recorded(*args, **kwargs):  # the fit's own shared files (another run's may come and go)
        array, path = shared_empty(*args, **kwargs)
        created.append(path)
        return array, path

    monkeypatch.setattr(estimators, "shared_empty", recorded)
    parallel = MKLClassifier(kernels=SPECS, n_jobs=2).fit(X, y)
    assert created and not any(os.path.exists(path) for path in created)  # shared, then removed
    assert len(parallel.results_) == 3
    assert_same_fit(parallel, serial)
    assert np.array_equal(parallel.decision_function(X), serial.decision_function(X))
    assert np.array_equal(parallel.predict(X), serial.predict(X))
    assert parallel.score(X, y) >= 0.95


def test_per_label_problems_and_the_threading_backend():
    X, Y = make_multilabel_classification(n_samples=120, n_features=5, n_classes=3, random_state=0)
    specs = kernel_grid(5, widths=(1.0, 5.0), degrees=(1,))
    serial = MultiLabelMKLClassifier(kernels=specs, standardize=True).fit(X, Y)
    assert_same_fit(MultiLabelMKLClassifier(kernels=specs, standardize=True, n_jobs=2).fit(X, Y), serial)
    threads_before = [pool["num_threads"] for pool in threadpool_info()]
    with joblib.parallel_config(backend="threading", n_jobs=2):  # n_jobs=None: the context's
        threaded = MultiLabelMKLClassifier(kernels=specs, standardize=True).fit(X, Y)
    assert_same_fit(threaded, serial)
    assert [pool["num_threads"] for pool in threadpool_info()] == threads_before  # BLAS restored


@pytest.mark.parametrize("solver, family", [("mlmkl-sum", "mlmkl_sum"), ("mlmkl-sa", "mlmkl_max")])
def test_one_shared_multilabel_fit_solves_its_label_svms_in_parallel(solver, family):
    """A shared ML-MKL fit is one problem: ``n_jobs`` goes to its per-label SVMs (LabelSVMs),
    and the model is the serial one bit for bit."""
    X, Y = make_multilabel_classification(n_samples=150, n_features=5, n_classes=6, random_state=0)
    specs = kernel_grid(5, widths=(1.0, 5.0), degrees=(1,))
    common = dict(kernels=specs, standardize=True, solver=solver, family=family, random_state=0,
                  max_iter=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        serial = MultiLabelMKLClassifier(**common).fit(X, Y)
        parallel = MultiLabelMKLClassifier(**common, n_jobs=2).fit(X, Y)
    assert len(parallel.results_) == 1 and parallel.results_[0].coef.shape[1] == 6
    assert_same_fit(parallel, serial)
    with pytest.raises(kernelfuse.ValidationError, match="n_jobs must be None"):
        kernelfuse.solve(np.eye(4)[None], np.array([[1, -1], [-1, 1], [1, -1], [-1, 1]]),
                         solver="mlmkl-sum", family="mlmkl_sum", n_jobs=0)


def test_warnings_and_errors_come_back_from_the_workers(wine):
    X, y = wine
    with pytest.warns(kernelfuse.ConvergenceWarning) as caught:
        MKLClassifier(kernels=SPECS, max_iter=1, n_jobs=2).fit(X, y)
    assert sum(issubclass(w.category, kernelfuse.ConvergenceWarning) for w in caught) == 3
    # UnknownNameError's __init__ takes (kind, name, known): it still travels back whole.
    with pytest.raises(kernelfuse.UnknownNameError, match="unknown solver 'nope'") as error:
        MKLClassifier(kernels=SPECS, solver="nope", n_jobs=2).fit(X, y)
    assert error.value.kind == "solver"


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2", True])
def test_n_jobs_must_be_none_or_a_nonzero_integer(wine, n_jobs):
    X, y = wine
    with pytest.raises(kernelfuse.ValidationError, match=r"n_jobs must be None.*-1 for all cores"):
        MKLClassifier(kernels=SPECS, n_jobs=n_jobs).fit(X, y)
    with pytest.raises(kernelfuse.ValidationError, match="n_jobs"):
        map_jobs(abs, [(1,), (2,)], n_jobs=n_jobs)


def test_n_jobs_meaning():
    assert check_n_jobs(None) is None and check_n_jobs(np.int64(-1)) == -1
    assert effective_n_jobs(None) == 1 and effective_n_jobs(1) == 1
    assert effective_n_jobs(-1) == joblib.cpu_count()
    with joblib.parallel_config(n_jobs=2):
        assert effective_n_jobs(None) == 2 and effective_n_jobs(1) == 1
    assert map_jobs(divmod, [(7, 2), (9, 4), (5, 5)], n_jobs=2) == [(3, 1), (2, 1), (1, 0)]


def test_a_parallel_model_saves_and_loads(wine, tmp_path):
    X, y = wine
    model = MKLClassifier(kernels=SPECS, n_jobs=2).fit(X, y)
    model.save(tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz")
    assert loaded.get_params()["n_jobs"] == 2
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))


def test_kernel_row_blocks_match_the_one_shot_stack(wine):
    X, _ = wine
    Xtr, Z = X[:100], X[100:]
    specs = kernel_grid(13, widths=(1.0, 5.0), degrees=(1, 2))
    for rows, n_jobs, n_blocks in ((Z, 2, None), (None, 2, None), (Z, 1, 2)):
        one_shot = compute_kernels(specs, Xtr, rows)
        blocked = compute_kernels_blocked(specs, Xtr, rows, n_jobs=n_jobs, n_blocks=n_blocks)
        # Every entry is the same dot product; BLAS may pick another kernel for another shape,
        # so the last bits are not promised (equal in every case measured with OpenBLAS).
        scale = np.abs(one_shot).max(axis=(1, 2), keepdims=True)
        assert blocked.shape == one_shot.shape
        assert np.all(np.abs(blocked - one_shot) <= 1e-13 * scale)
    assert [(b.start, b.stop) for b in row_blocks(200, 3)] == [(0, 67), (67, 133), (133, 200)]
    assert row_blocks(100, 4) == [slice(0, 100)]  # blocks keep at least 64 rows
    with pytest.raises(kernelfuse.ValidationError, match="over the memory budget"):
        compute_kernels_blocked(specs, Xtr, Z, n_jobs=2, memory_budget=2**16)


def test_workers_build_the_stack_in_a_shared_file_and_map_it(wine, tmp_path):
    X, _ = wine
    normalizer = KernelNormalizer("unit-trace").fit(SPECS, X)
    serial = training_stack(SPECS, X, empty_aligned((len(SPECS), len(X), len(X))), normalizer,
                            block_bytes=2**16)
    assert shares_files(2) and not shares_files(1)
    shared, path = shared_empty(serial.shape, folder=str(tmp_path))
    plain = np.empty(serial.shape)
    assert shared_with_jobs(shared, 2) and not shared_with_jobs(plain, 2) and shared_with_jobs(plain, 1)
    with joblib.parallel_config(backend="threading"):
        assert shared_with_jobs(plain, 2)
    # 16 blocks written by the workers into the file: the serial stack, bit for bit
    assert np.array_equal(training_stack(SPECS, X, shared, normalizer, block_bytes=2**16, n_jobs=2), serial)
    shared.flags.writeable = False
    # A job maps the same file (read-only, at the caller's offset modulo 64): nothing sent, nothing copied.
    views = map_jobs(np.sum, [(shared[1:],), (shared[:2],)], n_jobs=2)
    assert views == [np.sum(shared[1:]), np.sum(shared[:2])]
    remove_shared(path)
    assert not os.path.exists(path)
    assert np.array_equal(shared, serial)  # the caller's array outlives its file
    with pytest.raises(kernelfuse.ValidationError, match="does not see"):
        MappedFile(path, 0, (2,), "<f8", False, False, 0, 0).open()


def test_a_memory_mapped_stack_is_built_and_solved_in_parallel(wine, tmp_path):
    X, y = wine
    serial = MKLClassifier(kernels=SPECS, storage="memmap", storage_dir=str(tmp_path)).fit(X, y)
    parallel = MKLClassifier(kernels=SPECS, storage="memmap", storage_dir=str(tmp_path), n_jobs=2).fit(X, y)
    assert_same_fit(parallel, serial)
    assert not list(tmp_path.iterdir())


def test_grid_search_with_n_jobs_is_the_serial_search(wine):
    X, y = wine
    serial = GridSearchCV(MKLClassifier(kernels=SPECS), GRID, cv=3).fit(X, y)
    assert_same_search(GridSearchCV(MKLClassifier(kernels=SPECS), GRID, cv=3, n_jobs=2).fit(X, y), serial)


@pytest.mark.timeout(60)
def test_an_in_process_dask_cluster_gives_the_serial_results(wine):
    """Workers as threads of this process: concurrent solves must not race on BLAS limits."""
    distributed = pytest.importorskip("distributed")
    X, y = wine
    serial = MKLClassifier(kernels=SPECS).fit(X, y)
    threads_before = [pool["num_threads"] for pool in threadpool_info()]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with joblib.parallel_config(backend="dask"):
            for _ in range(3):
                assert_same_fit(MKLClassifier(kernels=SPECS).fit(X, y), serial)
            with pytest.warns(kernelfuse.ConvergenceWarning):
                MKLClassifier(kernels=SPECS, max_iter=1).fit(X, y)
    assert [pool["num_threads"] for pool in threadpool_info()] == threads_before


@pytest.fixture(scope="module")
def dask_client():
    """A real two-process Dask cluster on this machine, shut down after the module's tests."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "Port 8787 is already in use"
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
    try:
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


@pytest.mark.timeout(60)
def test_the_dask_backend_gives_the_serial_results(wine, dask_client):
    X, y = wine
    specs = kernel_grid(13, widths=(1.0, 5.0), degrees=(1, 2))
    serial_fit = MKLClassifier(kernels=SPECS).fit(X, y)
    serial_search = GridSearchCV(MKLClassifier(kernels=SPECS), GRID, cv=3).fit(X, y)
    one_shot = compute_kernels(specs, X[:100], X[100:])
    with joblib.parallel_config(backend="dask"):
        assert effective_n_jobs(None) == 2  # the cluster's workers
        fit = MKLClassifier(kernels=SPECS).fit(X, y)
        search = GridSearchCV(MKLClassifier(kernels=SPECS), GRID, cv=3, n_jobs=-1).fit(X, y)
        blocked = compute_kernels_blocked(specs, X[:100], X[100:], n_blocks=2)
    assert_same_fit(fit, serial_fit)
    assert_same_search(search, serial_search)
    scale = np.abs(one_shot).max(axis=(1, 2), keepdims=True)
    assert np.all(np.abs(blocked - one_shot) <= 1e-13 * scale)
    assert sum(dask_client.run(lambda: 1).values()) == 2  # both workers still up


@pytest.mark.timeout(120)
def test_jobs_of_a_worker_killed_mid_run_are_submitted_again(tmp_path):
    """A worker process dies during a run on a Dask cluster: the unfinished independent jobs are
    submitted again and the results are the undisturbed ones (before: FutureCancelledError)."""
    distributed = pytest.importorskip("distributed")
    from helpers import dies_once  # a module the workers import (tests/ is on their path)

    marker = str(tmp_path / "died")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
    try:
        with distributed.Client(cluster), joblib.parallel_config(backend="dask"):
            values = [float(v) for v in range(6)]
            assert map_jobs(dies_once, [(marker, v) for v in values], n_jobs=2) == [2.0 * v for v in values]
            assert os.path.exists(marker)  # a worker did die
    finally:
        cluster.close()


def test_only_a_lost_worker_is_resubmitted():
    from distributed.client import FutureCancelledError

    assert lost_worker(FutureCancelledError("key", "already forgotten"))
    assert not lost_worker(ValueError("a job's own error"))
