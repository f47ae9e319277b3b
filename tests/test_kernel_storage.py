"""Kernel storages: a stack in memory, memory-mapped and written block by block, or rows on demand."""

from __future__ import annotations

import tracemalloc
from collections import namedtuple

import numpy as np
import pytest

import kernelfuse
from kernelfuse.errors import ValidationError
from kernelfuse.kernel import compute_kernels, stack_bytes
from kernelfuse.kernel_grid import kernel_grid
from kernelfuse.kernel_normalization import KernelNormalizer
from kernelfuse.kernel_storage import block_rows, choose_storage, memmap_stack


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, 1.0, -1.0)


def test_the_budget_picks_memory_then_rows_then_memmap_and_says_why(tmp_path, monkeypatch):
    need = stack_bytes(12, 1000, 1000)
    choice = choose_storage(12, 1000, memory_budget=need)
    assert choice.storage == "memory" and "within the memory budget" in choice.reason
    choice = choose_storage(12, 1000, memory_budget=need - 1, reads_rows=True)
    assert choice.storage == "rows" and "computed on demand" in choice.reason
    choice = choose_storage(12, 1000, memory_budget=need - 1, folder=tmp_path)
    assert choice.storage == "memmap" and str(tmp_path) in choice.reason
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr("shutil.disk_usage", lambda path: Usage(need, need, need // 2))
    with pytest.raises(ValidationError, match="over the memory budget .* and over the .* free"):
        choose_storage(12, 1000, memory_budget=need - 1, folder=tmp_path)


@pytest.mark.parametrize("normalization", ["unit-trace", "spherical", "none"])
def test_a_memory_mapped_stack_is_the_stack(data, tmp_path, normalization):
    X, _ = data
    specs = kernel_grid(4, widths=(0.5, 2.0), degrees=(2,))
    normalizer = KernelNormalizer(normalization).fit(specs, X)
    expected = normalizer.transform(compute_kernels(specs, X), specs, X)
    block = stack_bytes(len(specs), 7, X.shape[0])  # 7 rows a block: 18 blocks
    stack = memmap_stack(specs, X, tmp_path / "K.npy", normalizer, block_bytes=block)
    assert isinstance(stack, np.memmap) and stack.shape == expected.shape
    np.testing.assert_allclose(stack, expected, rtol=1e-12, atol=1e-15)
    assert block_rows(len(specs), X.shape[0], block) == 7


def test_writing_a_memory_mapped_stack_holds_one_block_in_memory(data, tmp_path):
    X, _ = data
    X = np.vstack([X] * 4)  # N = 480
    specs = kernel_grid(4, widths=(0.5, 2.0), degrees=(2,))
    normalizer = KernelNormalizer("unit-trace").fit(specs, X)
    whole = stack_bytes(len(specs), X.shape[0], X.shape[0])
    block = whole // 20
    tracemalloc.start()
    memmap_stack(specs, X, tmp_path / "K.npy", normalizer, block_bytes=block)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 0.25 * whole, (peak, whole)  # a block and its pairwise products, not the stack


def test_solvers_read_a_memory_mapped_stack_as_an_array(data, tmp_path):
    X, y = data
    specs = kernel_grid(4, widths=(0.5, 2.0), degrees=(2,))
    normalizer = KernelNormalizer("unit-trace").fit(specs, X)
    in_memory = normalizer.transform(compute_kernels(specs, X), specs, X)
    on_disk = memmap_stack(specs, X, tmp_path / "K.npy", normalizer)
    for solver, family in (("spicymkl", "l1_mkl"), ("mirror-vskl", "l1_mkl_sq")):
        a = kernelfuse.solve(in_memory, y, solver=solver, family=family, C=1.0, check_psd=False)
        b = kernelfuse.solve(on_disk, y, solver=solver, family=family, C=1.0, check_psd=False)
        assert a.status == b.status == "converged"
        assert b.objective == pytest.approx(a.objective, rel=1e-10)
        np.testing.assert_allclose(b.coef, a.coef, rtol=1e-7, atol=1e-10)


def test_a_far_off_scale_memory_mapped_stack_is_not_copied_into_memory(data, tmp_path):
    from kernelfuse.kernel_scale import unit_scale
    from kernelfuse.kernel_storage import is_memory_mapped
    from kernelfuse.problem import Problem

    X, y = data
    specs = kernel_grid(4, widths=(2.0,), degrees=())[:2]
    stack = memmap_stack(specs, X, tmp_path / "K.npy")  # entries up to 1, scaled below
    np.save(tmp_path / "big.npy", 1e7 * np.asarray(stack))
    big = np.load(tmp_path / "big.npy", mmap_mode="r")
    problem = Problem.create(big, y, "l1_mkl_sq", check_psd=False)
    assert is_memory_mapped(problem.K) and not is_memory_mapped(np.ones(3))
    assert unit_scale(problem) is None  # solved as given: rescaling would copy the stack
    assert unit_scale(Problem.create(np.array(big), y, "l1_mkl_sq", check_psd=False)) is not None
