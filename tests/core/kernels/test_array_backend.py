"""Kernel stacks of another array library, read where they are (kernelfuse.kernels.array_backend).

The generic path is checked on the CPU with ``array-api-strict`` (the standard and nothing
more): kernel building, the stack products and SpicyMKL must give NumPy's numbers, and
SpicyMKL's certified answer.  PyTorch's CPU build is used where it is installed.  The
benchmark's smoke run (benchmarks/gpu.py) and its generated table are checked too.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
import warnings

import numpy as np
import pytest

import kernelfuse
from helpers import REPO, breast_cancer_kernels, record_as_a_graph
from kernelfuse import ValidationError
from kernelfuse.errors import IncompatiblePartsError
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.kernels import array_backend
from kernelfuse.kernels.functions import KernelSpec, compute_kernels
from kernelfuse.kernels.products import add_kernel, kernel_products, kernel_times, kernels_times, weighted_sum
from kernelfuse.kernels.rows import kernel_diagonal
from kernelfuse.plugins.kernels.gaussian import Gaussian
from kernelfuse.plugins.kernels.laplacian import Laplacian
from kernelfuse.plugins.spicymkl.kernel_norm_bounds import kernel_times_and_frobenius

xp = pytest.importorskip("array_api_strict")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks and batches of a few kernels' rows, so that every blocked loop runs several times."""
    monkeypatch.setattr(array_backend, "DEVICE_BLOCK_ENTRIES", 700)
    monkeypatch.setattr(array_backend, "GATHER_BYTES", 3 * 40 * 40 * 8)


def _stack(dtype=np.float64) -> np.ndarray:
    K, _ = breast_cancer_kernels(40, 20, seed=3)
    return K.astype(dtype)


def test_namespace_is_none_for_numpy_and_the_standard_for_others():
    assert array_backend.namespace(np.zeros(3)) is None
    assert array_backend.namespace(np.zeros((3, 3), np.float32).T) is None
    assert not array_backend.is_device_array([1.0, 2.0])
    assert array_backend.is_device_array(xp.asarray([1.0]))


@pytest.mark.parametrize("gpu", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stack_products_equal_numpys(dtype, gpu, small_blocks, monkeypatch):
    monkeypatch.setattr(array_backend, "on_gpu", lambda K: gpu)  # True: kernels 2 apart share a read
    monkeypatch.setattr(array_backend, "MERGE_BYTES", 2 * 40 * 40 * 8)
    K = _stack(dtype)
    K_dev = xp.asarray(K)
    rng = np.random.default_rng(0)
    V = rng.normal(size=(40, 2))
    coef = rng.normal(size=(20, 40))
    coef[[1, 4]] = 0.0
    kernels = np.array([15, 0, 2, 5, 9, 3])  # under a third of the kernels: read by runs
    weights = rng.uniform(size=20)
    np.testing.assert_allclose(kernel_times(K_dev, V), kernel_times(K, V), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(kernels_times(K_dev, V[:, 0], kernels), kernels_times(K, V[:, 0], kernels),
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(kernel_products(K_dev, coef), kernel_products(K, coef), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(array_backend.to_numpy(weighted_sum(K_dev, weights)), weighted_sum(K, weights),
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(array_backend.to_numpy(weighted_sum(K_dev, weights, kernels)),
                               weighted_sum(K, weights, kernels), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(kernel_diagonal(K_dev), kernel_diagonal(K).astype(np.float64))
    products, frobenius = kernel_times_and_frobenius(K_dev, V)
    expected_products, expected_frobenius = kernel_times_and_frobenius(K, V)
    np.testing.assert_allclose(products, expected_products, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(frobenius, expected_frobenius, rtol=1e-13)


def test_kept_sums_on_the_device_equal_numpys(small_blocks):
    K = _stack(np.float32)
    out, out_dev = np.zeros((40, 40), np.float32), array_backend.zeros(xp.asarray(K), (40, 40))
    for m, w in ((2, 0.5), (6, -1.25), (2, 0.75)):
        add_kernel(out, K, m, w)
        add_kernel(out_dev, xp.asarray(K), m, w)
    np.testing.assert_allclose(array_backend.to_numpy(out_dev), out, rtol=1e-6, atol=1e-8)
    batched = array_backend.zeros(xp.asarray(K), (40, 40))
    array_backend.add_kernels(batched, xp.asarray(K), np.array([2, 6, 2]), np.array([0.5, -1.25, 0.75]))
    np.testing.assert_allclose(array_backend.to_numpy(batched), out, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernels_built_from_device_features_equal_numpys(dtype):
    rng = np.random.default_rng(1)
    X, Z = rng.normal(size=(30, 5)), rng.normal(size=(12, 5))
    specs = kernel_grid(5, widths=(0.5, 3.0), degrees=(1, 2)) + [KernelSpec(Gaussian(2.0), (4, 0, 2))]
    K_dev = compute_kernels(specs, xp.asarray(X), xp.asarray(Z), dtype=dtype)
    assert array_backend.is_device_array(K_dev)
    np.testing.assert_allclose(array_backend.to_numpy(K_dev), compute_kernels(specs, X, Z, dtype=dtype),
                               rtol=1e-12 if dtype == np.float64 else 1e-6, atol=1e-14)


def test_a_kernel_without_a_device_form_is_refused_by_name():
    with pytest.raises(ValidationError, match="'laplacian' has no form"):
        compute_kernels([KernelSpec(Laplacian(1.0))], xp.asarray(np.ones((4, 2))))
    with pytest.raises(ValidationError, match="memory budget"):
        compute_kernels([KernelSpec(Gaussian(1.0))], xp.asarray(np.ones((40, 2))), memory_budget=100)


@pytest.mark.parametrize("device", ["CPU_DEVICE", "device1"])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_spicymkl_on_a_strict_stack_gives_numpys_certified_answer(loss, device):
    """On its default device and on another (which refuses NumPy's own conversion: results come
    back by DLPack, as from a GPU of any array API library)."""
    K, y = breast_cancer_kernels(60, 12, seed=0)
    expected = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss=loss, C=0.5, tol=1e-8)
    stack = xp.asarray(K, device=xp.Device(device))
    result = kernelfuse.solve(stack, y, solver="spicymkl", family="l1_mkl", loss=loss, C=0.5, tol=1e-8)
    assert expected.status == result.status == "converged"
    assert isinstance(result.coef, np.ndarray) and isinstance(result.kernel_weights, np.ndarray)
    # each inside the other's certified interval (the device's line search takes another path)
    assert result.gap <= 1e-8
    for one, other in ((result, expected), (expected, result)):
        assert other.dual_objective - 1e-12 * abs(other.objective) <= one.objective


@pytest.mark.parametrize(("low", "high"), [(0.0, None), (None, 0.0), (-0.5, 0.25)])
def test_clip_to_numbers_equals_numpys_on_either_side(low, high):
    values = np.random.default_rng(3).normal(size=(7, 5))
    values[0, 0] = np.nan  # kept: clipping propagates NaN
    expected = np.clip(values, low, high)
    np.testing.assert_array_equal(array_backend.clip(values, low, high), expected)
    device = xp.asarray(values, device=xp.Device("device1"))
    clipped = array_backend.clip(device, low, high)
    assert clipped.device == device.device
    np.testing.assert_array_equal(array_backend.to_numpy(clipped), expected)


def test_a_replayed_function_gives_its_answers_as_copies(monkeypatch):
    graphs = []
    monkeypatch.setattr(array_backend, "graph_recorder", lambda x: functools.partial(record_as_a_graph, graphs))
    replayed = array_backend.Replayed(lambda a, b: (a * b, a + b))
    device, answers = xp.Device("device1"), []
    for k in range(5):
        a, b = xp.asarray([1.0, 2.0, 3.0], device=device) * k, xp.asarray(0.5, device=device)
        answers.append((replayed(a, b), (a * b, a + b)))
    assert len(graphs) == 1 and graphs[0].replays == 4  # recorded by the second call, replayed from there
    for got, expected in answers:  # each call's answers kept past the later replays
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(array_backend.to_numpy(g), array_backend.to_numpy(e))
    other = replayed(xp.asarray([1.0, 2.0], device=device), xp.asarray(3.0, device=device))  # another shape: called
    np.testing.assert_array_equal(array_backend.to_numpy(other[0]), [3.0, 6.0])
    assert graphs[0].replays == 4


def test_a_function_that_cannot_be_recorded_is_called(monkeypatch):
    def refuse(function, inputs):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(array_backend, "graph_recorder", lambda x: refuse)
    calls = []
    replayed = array_backend.Replayed(lambda a: calls.append(1) or (2.0 * a,))
    for k in range(4):
        a = xp.asarray([1.0, -1.0], device=xp.Device("device1")) * k
        np.testing.assert_array_equal(array_backend.to_numpy(replayed(a)[0]), [2.0 * k, -2.0 * k])
    assert len(calls) == 4 and replayed.replays == 0


def test_a_device_array_comes_back_to_numpy_by_the_standard():
    on_other = xp.asarray(np.arange(6.0).reshape(2, 3), device=xp.Device("device1"))
    with pytest.raises(RuntimeError, match="device1"):
        np.asarray(on_other)  # what a non-CPU device does with NumPy's own conversion
    back = array_backend.to_numpy(on_other)
    assert isinstance(back, np.ndarray) and back.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert array_backend.to_numpy(xp.sum(on_other)) == 15.0


def test_spicymkl_on_a_float32_strict_stack_in_blocks(small_blocks):
    K, y = breast_cancer_kernels(40, 7, seed=3)
    K = K.astype(np.float32)
    expected = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", C=0.5, tol=1e-8)
    result = kernelfuse.solve(xp.asarray(K), y, solver="spicymkl", family="l1_mkl", C=0.5, tol=1e-8)
    assert expected.status == result.status == "converged"
    assert abs(result.objective - expected.objective) <= (result.gap + expected.gap) * abs(expected.objective)


def test_device_stacks_are_validated_on_their_device():
    K, y = breast_cancer_kernels(20, 3, seed=0)
    bad = K.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValidationError, match="kernel 1 of K holds NaN"):
        kernelfuse.solve(xp.asarray(bad), y, solver="spicymkl", family="l1_mkl", C=0.5)
    bad = K.copy()
    bad[2, 0, 1] += 0.1
    with pytest.raises(ValidationError, match="kernel 2 of K is not symmetric"):
        kernelfuse.solve(xp.asarray(bad), y, solver="spicymkl", family="l1_mkl", C=0.5)
    bad = K.copy()
    bad[0] -= 0.5 * np.eye(20) * bad[0].max()
    with pytest.raises(ValidationError, match="kernel 0 of K is not positive semidefinite"):
        kernelfuse.solve(xp.asarray(bad), y, solver="spicymkl", family="l1_mkl", C=0.5)


def test_solvers_that_read_numpy_stacks_refuse_a_device_stack():
    K, y = breast_cancer_kernels(20, 3, seed=0)
    with pytest.raises(IncompatiblePartsError, match="spicymkl"):
        kernelfuse.solve(xp.asarray(K), y, solver="simplemkl", family="l1_mkl_sq", C=1.0)


def test_spicymkl_on_a_torch_stack_when_torch_is_installed():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: a thread pool only waits (0.6 s instead of 0.25 s)
    try:
        _solve_on_torch(torch)
    finally:
        torch.set_num_threads(threads)


def _solve_on_torch(torch) -> None:  # type: ignore[no-untyped-def]
    K, y = breast_cancer_kernels(40, 6, seed=1)
    for stack in (K, K.astype(np.float32)):
        expected = kernelfuse.solve(stack, y, solver="spicymkl", family="l1_mkl", loss="hinge", C=0.5, tol=1e-8)
        result = kernelfuse.solve(torch.asarray(stack), y, solver="spicymkl", family="l1_mkl", loss="hinge",
                                  C=0.5, tol=1e-8)
        assert expected.status == result.status == "converged"
        assert abs(result.objective - expected.objective) <= (result.gap + expected.gap) * abs(expected.objective)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_gpu_benchmark_smoke_run_and_its_generated_table(tmp_path, capsys):
    gpu = _load("gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gpu.main(["--device", "cpu", "--xp", "strict", "--smoke", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "gpu_smoke.json").read_text())
    assert payload["smoke"] is True and payload["machine"]["xp"] == "strict"
    for runs in payload["grid"]["runs"].values():
        device, cpu = runs["device"], runs["cpu_one"]
        assert device["status"] == cpu["status"] == "converged" and device["gap"] <= 1e-6
        assert abs(device["objective"] - cpu["objective"]) <= 1e-6 * abs(cpu["objective"])
    assert payload["large"]["run"]["status"] == "converged" and payload["large"]["run"]["gap"] <= 1e-3
    features = payload["features"]  # the distributed solve, its blocks on the strict device
    assert features["run"]["status"] == "converged" and features["run"]["gap"] <= 1e-3
    report = _load("report")
    text = report.render("gpu_smoke.json", "gpu", report._renderers(), results=tmp_path)
    assert "| breast cancer 120 x 93 | hinge | CPU, 1 core | converged |" in text
    assert "ringnorm 4,000, 20 Nystrom kernels of rank 100 (distributed" in text
    assert "gpu_smoke.json" in text and "--smoke" in text
