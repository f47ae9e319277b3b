"""The distributed l1_mkl solve on real Dask clusters: the single-process answer, faults, refusals.

Every answer is checked against the certified interval of SpicyMKL on the same factors in one
process (``FactorKernels``), on generated problems: random subsets of breast cancer, random
Gaussian kernels on random feature subsets, random ``C``, ``C2`` and losses.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import kernelfuse
from helpers import local_dask_cluster, strict_device, torch_device
from kernelfuse.distributed.cluster import client_for, connected_client
from kernelfuse.distributed.features import partition_features, read_shards
from kernelfuse.distributed.newton import DistributedNewton
from kernelfuse.errors import ValidationError
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.functions import KernelSpec, fitted_specs
from kernelfuse.plugins.kernels.gaussian import Gaussian

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

pytestmark = pytest.mark.timeout(180)


def test_no_client_is_named():
    """First in the module: before its cluster's client is the default."""
    if connected_client() is not None:
        pytest.skip("a client of another test is the default here")
    with pytest.raises(ValidationError, match="no Dask client is connected"):
        client_for(None)


@pytest.fixture(scope="module")
def client():
    """Two worker processes on this machine (each with a nanny, which restarts a killed one)."""
    with local_dask_cluster() as cluster, distributed.Client(cluster) as connected:
        yield connected


def generated_problem(seed: int) -> tuple[np.ndarray, np.ndarray, list[KernelSpec], dict]:
    """A random subset of breast cancer, random Gaussian kernels, a random loss and parameters."""
    rng = np.random.default_rng(seed)
    X, target = load_breast_cancer(return_X_y=True)
    rows = rng.choice(X.shape[0], size=int(rng.integers(120, 260)), replace=False)
    X = X[rows]
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(target[rows] == 1, 1.0, -1.0)
    specs = []
    for m in range(int(rng.integers(2, 6))):
        columns = tuple(int(c) for c in np.sort(rng.choice(30, size=int(rng.integers(1, 31)), replace=False)))
        specs.append(KernelSpec(Gaussian(width=float(rng.uniform(0.3, 3.0)), relative_to="median"), columns, m))
    loss = ("logistic", "squared-hinge", "squared")[seed % 3]
    params = {"C": float(10 ** rng.uniform(-2.5, 0)), "C2": float(rng.choice([0.0, 10 ** rng.uniform(-3, -1)]))}
    return X, y, fitted_specs(specs, X), {"loss": loss, **params}


def single_process(data, X: np.ndarray, y: np.ndarray, settings: dict) -> kernelfuse.Result:
    """SpicyMKL on the same normalised factors, to a gap of 1e-9."""
    phi = data.features(X)
    factors = FactorKernels([phi[:, data.offsets[m]:data.offsets[m + 1]] for m in range(data.n_kernels)])
    return kernelfuse.solve(factors, y, solver="spicymkl", family="l1_mkl", tol=1e-9, **settings)


def within(model, reference: kernelfuse.Result) -> None:
    """Each certified interval holds the other's optimum estimate: both bound the same optimum."""
    slack = 1e-9 * max(1.0, abs(reference.objective))
    assert model.dual_objective <= reference.objective + slack
    assert reference.dual_objective <= model.objective + slack
    both = (model.gap + reference.gap) * max(1.0, abs(model.objective))
    assert model.objective - reference.dual_objective <= both + slack


@pytest.mark.parametrize("seed", range(6))
def test_the_answer_of_the_single_process_factor_solve_on_generated_problems(client, seed):
    X, y, specs, settings = generated_problem(seed)
    data = partition_features(specs, da.from_array(X, chunks=70), da.from_array(y, chunks=70),
                              client=client, rank=int(np.random.default_rng(seed).integers(10, 40)), seed=seed)
    assert len(data.blocks) == -(-X.shape[0] // 70)
    model = DistributedNewton(tol=1e-6, max_iter=100).solve(data, "l1_mkl", **settings)
    assert model.status == "converged" and model.gap <= 1e-6
    within(model, single_process(data, X, y, settings))
    np.testing.assert_allclose(model.decision_function(da.from_array(X, chunks=50)).compute(),
                               model.decision_function(X), rtol=1e-12, atol=1e-12)


def generated_pnorm_problem(seed: int) -> tuple[np.ndarray, np.ndarray, list[KernelSpec], dict]:
    """A generated problem (:func:`generated_problem`) with ``pnorm_mkl``'s random ``lam`` and ``p``."""
    X, y, specs, _ = generated_problem(seed)
    rng = np.random.default_rng(1000 + seed)
    return X, y, specs, {"lam": float(10 ** rng.uniform(-3.5, -1.5)), "p": float(rng.uniform(1.05, 2.0))}


@pytest.mark.parametrize("seed", range(4))
def test_pnorm_mkl_with_the_hinge_has_the_reference_optimum_on_generated_problems(client, seed):
    """Newton on the smoothed hinge certifies the exact hinge problem: its interval holds the
    optimum of cvxpy's solve of the same kernels ``Phi_m Phi_m'`` (and the other way round)."""
    X, y, specs, params = generated_pnorm_problem(seed)
    data = partition_features(specs, da.from_array(X, chunks=70), da.from_array(y, chunks=70),
                              client=client, rank=int(np.random.default_rng(seed).integers(10, 30)), seed=seed)
    model = DistributedNewton(tol=1e-5, max_iter=300).solve(data, "pnorm_mkl", **params)
    assert model.status == "converged" and model.gap <= 1e-5 and model.intercept == 0.0
    assert (model.family, model.loss) == ("pnorm_mkl", "hinge")
    phi = data.features(X)
    K = np.stack([phi[:, a:b] @ phi[:, a:b].T for a, b in zip(data.offsets[:-1], data.offsets[1:])])
    reference = kernelfuse.solve(K, y, solver="cvxpy", family="pnorm_mkl", **params)
    assert reference.status == "converged"
    within(model, reference)
    lam, p = params["lam"], params["p"]  # the objective is P at the model, in OBJECTIVES.md units
    norms = model.kernel_norms
    hinge = np.maximum(0.0, 1.0 - y * model.decision_function(X)).mean()
    assert model.objective == pytest.approx(lam / 2 * np.sum(norms**p) ** (2 / p) + hinge, rel=1e-9)


def test_pnorm_mkl_ends_at_max_iter_and_time_limit_with_its_bound(client):
    X, y, specs, params = generated_pnorm_problem(5)
    data = partition_features(specs, X, y, client=client, rank=15)
    short = DistributedNewton(tol=1e-9, max_iter=2).solve(data, "pnorm_mkl", **params)
    assert short.status == "max_iter" and short.n_iter == 2
    assert short.dual_objective <= short.objective and np.isfinite(short.gap)
    with pytest.raises(ValidationError, match="before its first pass"):
        DistributedNewton(time_limit=1e-9).solve(data, "pnorm_mkl", **params)


def test_spherical_normalisation_and_ready_low_rank_kernels(client):
    """Kernels already low rank are kept as given; spherical rows have unit norm per kernel."""
    X, y, specs, settings = generated_problem(7)
    nystrom = kernelfuse.get_registry().get("kernel", "nystrom").factory
    ready = KernelSpec(nystrom.fit(Gaussian(width=2.0), X[:, :5], 20, seed=1), tuple(range(5)), 9)
    data = partition_features([*specs, ready], X, y, client=client, rank=15, normalization="spherical")
    assert data.specs[-1] is ready
    phi = data.features(X)
    for m in range(data.n_kernels):
        np.testing.assert_allclose(np.linalg.norm(phi[:, data.offsets[m]:data.offsets[m + 1]], axis=1), 1.0)
    model = DistributedNewton(tol=1e-6).solve(data, "l1_mkl", **settings)
    assert model.status == "converged"
    within(model, single_process(data, X, y, settings))


@pytest.mark.parametrize(("library", "seed"), [("array_api_strict", 0), ("array_api_strict", 1), ("torch", 2)])
def test_blocks_on_a_device_give_the_numpy_blocks_certified_answer(client, library, seed):
    """The passes run in the blocks' own namespace (array-api-strict's second device, which
    refuses NumPy's conversion as a GPU does; PyTorch where it is installed), with the same
    numbers: both certified intervals hold the other's optimum estimate, for l1_mkl (seed 0:
    logistic, 1: squared hinge, 2: squared) and pnorm_mkl."""
    pytest.importorskip(library)
    move = strict_device if library == "array_api_strict" else torch_device
    X, y, specs, settings = generated_problem(seed)
    _, _, _, params = generated_pnorm_problem(seed)
    host = partition_features(specs, X, y, client=client, rank=15, seed=seed)
    device = partition_features(specs, X, y, client=client, rank=15, seed=seed, to_device=move)
    assert type(client.gather(device.blocks[0])).__name__ in ("Array", "Tensor") and device.to_device is move
    np.testing.assert_allclose(device.scales, host.scales, rtol=1e-12)
    for family, problem in (("l1_mkl", settings), ("pnorm_mkl", params)):
        expected = DistributedNewton(tol=1e-6, max_iter=300).solve(host, family, **problem)
        model = DistributedNewton(tol=1e-6, max_iter=300).solve(device, family, **problem)
        assert expected.status == model.status == "converged"
        within(model, expected)


def test_blocks_on_a_device_refuse_a_numpy_only_loss(client):
    pytest.importorskip("array_api_strict")
    X, y, specs, _ = generated_problem(3)
    data = partition_features(specs, X, y, client=client, rank=10, to_device=strict_device)
    logistic = kernelfuse.get_registry().create("loss", "logistic")
    numpy_only = type("NumpyLogistic", (type(logistic),), {"array_api": False})()
    with pytest.raises(ValidationError, match="computes on NumPy arrays only"):
        DistributedNewton().solve(data, "l1_mkl", loss=numpy_only)
    with pytest.raises(ValidationError, match="to_device must be a function"):
        partition_features(specs, X, y, client=client, to_device="cuda")


def test_max_iter_and_time_limit_end_the_solve_with_what_it_has(client):
    X, y, specs, _ = generated_problem(1)
    data = partition_features(specs, X, y, client=client, rank=20)
    one = DistributedNewton(tol=1e-12, max_iter=1).solve(data, "l1_mkl", loss="logistic", C=0.01)
    assert one.status == "max_iter" and one.n_iter == 1 and "max_iter" in one.message
    assert one.dual_objective <= one.objective and np.isfinite(one.gap)
    with pytest.raises(ValidationError, match="before its first pass"):
        DistributedNewton(time_limit=1e-9).solve(data, "l1_mkl", loss="logistic")


def test_refusals_name_the_parameter(client):
    X, y, specs, _ = generated_problem(2)
    data = partition_features(specs, X, y, client=client, rank=10)
    with pytest.raises(ValidationError, match="smooth"):
        DistributedNewton().solve(data, "l1_mkl", loss="hinge")
    with pytest.raises(ValidationError, match="loss: name the loss"):
        DistributedNewton().solve(data, "l1_mkl")
    with pytest.raises(ValidationError, match="pnorm_mkl solve takes the binary hinge"):
        DistributedNewton().solve(data, "pnorm_mkl", loss="logistic")
    with pytest.raises(ValidationError, match="family vskl"):
        DistributedNewton().solve(data, "vskl")
    with pytest.raises(ValidationError, match="labels in"):
        DistributedNewton().solve(partition_features(specs, X, y * 2, client=client, rank=10), "l1_mkl",
                                  loss="logistic")
    with pytest.raises(ValidationError, match="normalization"):
        partition_features(specs, X, y, client=client, normalization="trace")
    with pytest.raises(ValidationError, match="rank"):
        partition_features(specs, X, y, client=client, rank=0)


def test_an_unreachable_scheduler_is_named_within_seconds():
    start = time.perf_counter()
    with pytest.raises(ValidationError, match=r"scheduler: no Dask scheduler answered at tcp://127\.0\.0\.1:9"):
        client_for("tcp://127.0.0.1:9", timeout=2.0)
    assert time.perf_counter() - start < 30.0


def test_a_worker_killed_mid_solve_leaves_the_certified_answer(client):
    """SIGKILL of a worker process after the second iteration: Dask recomputes its blocks, and the
    solve ends with an answer inside the undisturbed solve's certified interval."""
    X, y, specs, settings = generated_problem(3)
    X_blocks, y_blocks = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    data = partition_features(specs, X_blocks, y_blocks, client=client, rank=25)
    undisturbed = DistributedNewton(tol=1e-6).solve(data, "l1_mkl", **settings)
    pids = sorted(client.run(os.getpid).values())
    killed = []

    def kill(row):
        if row.iteration == 2 and not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    model = DistributedNewton(tol=1e-6).solve(data, "l1_mkl", callback=kill, **settings)
    assert killed
    assert model.status == "converged"
    within(model, kernelfuse.solve(
        FactorKernels([data.features(X)[:, data.offsets[m]:data.offsets[m + 1]] for m in range(data.n_kernels)]),
        y, solver="spicymkl", family="l1_mkl", tol=1e-9, **settings))
    assert abs(model.objective - undisturbed.objective) <= 2e-6 * max(1.0, abs(undisturbed.objective))
    client.wait_for_workers(2, timeout=60)


def _dask_command() -> str:
    found = shutil.which("dask", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("Dask's command line (dask) is not installed beside this Python")
    return found


def test_a_cluster_started_by_dasks_command_line(tmp_path):
    """A scheduler and two workers as separate processes on loopback, as a remote cluster is."""
    command = _dask_command()
    scheduler_file = tmp_path / "scheduler.json"
    processes = [subprocess.Popen([command, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        for _ in range(2):
            processes.append(subprocess.Popen([command, "worker", "--scheduler-file", str(scheduler_file),
                                               "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        import json

        address = json.loads(scheduler_file.read_text())["address"]
        remote = client_for(address, timeout=30.0)
        try:
            remote.wait_for_workers(2, timeout=60)
            X, y, specs, settings = generated_problem(4)
            data = partition_features(specs, da.from_array(X, chunks=60), da.from_array(y, chunks=60),
                                      client=remote, rank=20)
            assert len(remote.has_what()) == 2
            model = DistributedNewton(tol=1e-6).solve(data, "l1_mkl", **settings)
            assert model.status == "converged"
            within(model, single_process(data, X, y, settings))
        finally:
            remote.close()
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.parametrize("kind", ["npy", "parquet"])
def test_shard_files_give_the_in_memory_answer(client, tmp_path, kind):
    """Rows read from shard files on the workers: the same blocks, the same model, as the arrays."""
    X, y, specs, settings = generated_problem(5)
    cuts = [0, 50, 120, X.shape[0]]
    x_paths, y_paths = [], []
    for k in range(3):
        rows = slice(cuts[k], cuts[k + 1])
        if kind == "npy":
            x_paths.append(tmp_path / f"X_{k}.npy")
            y_paths.append(tmp_path / f"y_{k}.npy")
            np.save(x_paths[-1], X[rows])
            np.save(y_paths[-1], y[rows])
        else:
            pd = pytest.importorskip("pandas")
            pytest.importorskip("pyarrow")
            frame = pd.DataFrame(X[rows], columns=[f"x{j}" for j in range(X.shape[1])]).assign(label=y[rows])
            x_paths.append(tmp_path / f"part_{k}.parquet")
            frame.to_parquet(x_paths[-1])
    if kind == "npy":
        features, targets = read_shards(x_paths), read_shards(y_paths)
    else:
        features = read_shards(x_paths, columns=[f"x{j}" for j in range(X.shape[1])])
        targets = read_shards(x_paths, columns=["label"])[:, 0]
    assert features.chunks[0] == (50, 70, X.shape[0] - 120)
    sharded = partition_features(specs, features, targets, client=client, rank=15)
    in_memory = partition_features(specs, da.from_array(X, chunks=((50, 70, X.shape[0] - 120), 30)),
                                   da.from_array(y, chunks=((50, 70, X.shape[0] - 120),)), client=client, rank=15)
    np.testing.assert_array_equal(sharded.scales, in_memory.scales)
    a = DistributedNewton(tol=1e-6).solve(sharded, "l1_mkl", **settings)
    b = DistributedNewton(tol=1e-6).solve(in_memory, "l1_mkl", **settings)
    assert a.status == b.status == "converged"
    assert abs(a.objective - b.objective) <= 1e-6 * max(1.0, abs(b.objective))


def test_a_missing_shard_is_named(tmp_path):
    with pytest.raises(ValidationError, match=r"shard .*missing\.npy"):
        read_shards([tmp_path / "missing.npy"])


def test_workers_dying_on_a_block_name_the_block_size():
    """Workers that die on every try of a block's task (out of memory, say) end the build with an
    error naming the block's rows and bytes and the rechunk to try, not Dask's KilledWorker."""
    import dask

    from helpers import KillingFeatureMap
    from kernelfuse.errors import SolverError

    X = np.random.default_rng(0).normal(size=(300, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    spec = KernelSpec(KillingFeatureMap(os.getpid()), (0,), 0)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as local:
            with pytest.raises(SolverError, match=r"blocks of up to 150 rows .*X\.rechunk\(\{0: 75\}\)"):
                partition_features([spec], da.from_array(X, chunks=150), da.from_array(y, chunks=150),
                                   client=local, normalization="none")


def test_kernelfuses_local_cluster_leaves_malloc_trimming_to_glibc():
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_ for its workers (turning off glibc's adaptive
    mmap threshold); the clusters kernelfuse starts leave it out, keep the other settings, and
    leave this process's environment as it was."""
    from kernelfuse.distributed.cluster import local_cluster

    before = dict(os.environ)
    with local_cluster(1, processes=True, host="127.0.0.1") as cluster:
        assert dict(os.environ) == before  # the nanny's variables not left in this process
        (nanny,) = cluster.workers.values()
        assert "MALLOC_TRIM_THRESHOLD_" not in nanny.pre_spawn_env
        assert "OMP_NUM_THREADS" in nanny.pre_spawn_env
        assert cluster.scheduler_info["workers"] and len(cluster.workers) == 1
    with local_cluster(1, malloc_trim=True, processes=True, host="127.0.0.1") as cluster:  # Dask's own
        (nanny,) = cluster.workers.values()
        assert "MALLOC_TRIM_THRESHOLD_" in nanny.pre_spawn_env and dict(os.environ) == before
