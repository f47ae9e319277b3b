"""Kernel storages: a stack in memory, memory-mapped and written block by block, or rows on demand."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import kernelfuse
from helpers import traced_peak
from kernelfuse.errors import ValidationError
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.kernels.functions import compute_kernels, stack_bytes
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.kernels.storage import block_rows, choose_storage, memmap_stack


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
    with pytest.raises(ValidationError, match="over the memory budget .* and over the .* free") as refused:
        choose_storage(12, 1000, memory_budget=need // 2 - 1, folder=tmp_path)
    assert "kernel_dtype='float32'" not in str(refused.value)  # half the stack fits nowhere either
    with pytest.raises(ValidationError, match="use kernel_dtype='float32' \\(half the bytes"):
        choose_storage(12, 1000, memory_budget=need // 2, folder=tmp_path)  # float32 would fit memory
    choice = choose_storage(12, 1000, memory_budget=need // 2, dtype="float32")
    assert choice.storage == "memory" and "float32 stack" in choice.reason
    choice = choose_storage(12, 1000, memory_budget=1, factors=True)
    assert choice.storage == "factors" and "explicit features" in choice.reason


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
    _, peak = traced_peak(lambda: memmap_stack(specs, X, tmp_path / "K.npy", normalizer, block_bytes=block))
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
    from kernelfuse.kernels.storage import is_memory_mapped
    from kernelfuse.problem.instance import Problem
    from kernelfuse.problem.scaling import unit_scale

    X, y = data
    specs = kernel_grid(4, widths=(2.0,), degrees=())[:2]
    stack = memmap_stack(specs, X, tmp_path / "K.npy")  # entries up to 1, scaled below
    np.save(tmp_path / "big.npy", 1e7 * np.asarray(stack))
    big = np.load(tmp_path / "big.npy", mmap_mode="r")
    problem = Problem.create(big, y, "l1_mkl_sq", check_psd=False)
    assert is_memory_mapped(problem.K) and not is_memory_mapped(np.ones(3))
    assert unit_scale(problem) is None  # solved as given: rescaling would copy the stack
    assert unit_scale(Problem.create(np.array(big), y, "l1_mkl_sq", check_psd=False)) is not None


def _classification(n: int = 90, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where(X[:, 0] + 0.4 * rng.normal(size=n) > 0, 1, 0)


def test_estimators_pick_a_memory_map_over_the_budget_and_remove_it(tmp_path):
    from kernelfuse.frontends.estimators import MKLClassifier

    X, y = _classification()
    specs = kernel_grid(3, widths=(0.5, 2.0), degrees=(2,))
    in_memory = MKLClassifier(kernels=specs).fit(X, y)
    assert in_memory.kernel_storage_.storage == "memory"
    mapped = MKLClassifier(kernels=specs, memory_budget=10_000, storage_dir=str(tmp_path)).fit(X, y)
    assert mapped.kernel_storage_.storage == "memmap" and str(tmp_path) in mapped.kernel_storage_.reason
    assert list(tmp_path.iterdir()) == []  # the stack's file is gone after the fit
    np.testing.assert_allclose(mapped.coef_, in_memory.coef_, rtol=1e-7, atol=1e-9)
    # predictions by blocks of 10,000 bytes of test kernels: the same as in one block
    np.testing.assert_allclose(mapped.decision_function(X), in_memory.decision_function(X),
                               rtol=1e-7, atol=1e-9)


@pytest.mark.filterwarnings("ignore::kernelfuse.errors.ConvergenceWarning")  # obscure: its epochs
def test_estimators_read_rows_for_the_solvers_that_can(capsys):
    from kernelfuse import IncompatiblePartsError
    from kernelfuse.frontends.estimators import MKLClassifier

    X, y = _classification()
    specs = kernel_grid(3, widths=(0.5, 2.0), degrees=())
    model = MKLClassifier(kernels=specs, solver="obscure", family="pnorm_mkl", memory_budget=10_000,
                          random_state=0, verbose=True, tol=None).fit(X, y)
    assert model.kernel_storage_.storage == "rows"
    assert "kernel storage rows" in capsys.readouterr().err
    stack = MKLClassifier(kernels=specs, solver="obscure", family="pnorm_mkl", random_state=0,
                          tol=None).fit(X, y)
    np.testing.assert_allclose(model.coef_, stack.coef_, rtol=1e-9, atol=1e-12)
    with pytest.raises(IncompatiblePartsError, match="storage='rows' needs a solver that reads"):
        MKLClassifier(kernels=specs, storage="rows").fit(X, y)
    with pytest.raises(ValidationError, match="storage must be 'auto' or one of factors, memory, rows, memmap"):
        MKLClassifier(kernels=specs, storage="disk").fit(X, y)


@pytest.mark.filterwarnings("ignore::kernelfuse.ConvergenceWarning")
@pytest.mark.parametrize("solver, family, params", [
    ("spicymkl", "l1_mkl", {"C": 0.5, "tol": 1e-9}),  # f at a gap of 1e-6 is only ~1e-3 exact
    ("obscure", "pnorm_mkl", {"lam": 0.1, "p": 1.5, "tol": None, "max_iter": 20, "random_state": 0}),
])
def test_estimators_keep_low_rank_kernels_as_factors(data, solver, family, params):
    """Every kernel with explicit features and a solver that reads factors: ``auto`` keeps the
    factors (N r numbers per kernel), and the model is the one of the dense stack they stand for."""
    from kernelfuse.errors import IncompatiblePartsError
    from kernelfuse.frontends.estimators import MKLClassifier
    from kernelfuse.kernels.factors import FactorKernels
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.plugins.kernels.gaussian import Gaussian
    from kernelfuse.plugins.kernels.nystrom import Nystrom

    X, y = data
    specs = [KernelSpec(Nystrom.fit(Gaussian(width), X, 15, seed=m)) for m, width in enumerate((2.0, 8.0))]
    seen = []
    original = kernelfuse.assembly.api.solve

    def spy(K, *args, **kwargs):
        seen.append(K)
        return original(K, *args, **kwargs)

    kernelfuse.assembly.api.solve = spy
    try:
        factors = MKLClassifier(kernels=specs, solver=solver, family=family, **params).fit(X, y)
        stack = MKLClassifier(kernels=specs, solver=solver, family=family, storage="memory", **params).fit(X, y)
    finally:
        kernelfuse.assembly.api.solve = original
    assert factors.kernel_storage_.storage == "factors"
    assert "explicit features" in factors.kernel_storage_.reason
    assert isinstance(seen[0], FactorKernels) and list(seen[0].ranks) == [15, 15]
    assert isinstance(seen[1], np.ndarray)
    assert factors.result_.objective == pytest.approx(stack.result_.objective, rel=1e-6)
    np.testing.assert_allclose(factors.decision_function(X), stack.decision_function(X), atol=1e-4)
    with pytest.raises(IncompatiblePartsError, match="storage='factors' needs a solver that reads kernel factors"):
        MKLClassifier(kernels=specs, solver="mirror-vskl", family="l1_mkl_sq", storage="factors").fit(X, y)
    with pytest.raises(ValidationError, match=r"kernel\(s\) 0, 1 have none"):
        MKLClassifier(kernels=[KernelSpec(Gaussian(2.0)), KernelSpec(Gaussian(8.0))], storage="factors").fit(X, y)


@pytest.mark.parametrize("storage", ["memmap", "auto"])
def test_a_storage_dir_that_is_no_writable_folder_is_refused_by_name_before_any_kernel(tmp_path, monkeypatch,
                                                                                       storage):
    from kernelfuse.frontends import estimators

    X, y = _classification(30)
    specs = kernel_grid(3, widths=(1.0,), degrees=())
    (tmp_path / "a file").write_text("x")
    computed = []
    monkeypatch.setattr(estimators, "fitted_specs", lambda *args: computed.append(args))
    for folder, message in [(tmp_path / "missing", "storage_dir .*missing does not exist: create it"),
                            (tmp_path / "a file", "storage_dir .*a file exists and is not a folder"),
                            ("", "the storage_dir path is empty"),
                            (5, r"storage_dir must be a folder path \(str or os.PathLike\), got 5")]:
        with pytest.raises(ValidationError, match=message):
            estimators.MKLClassifier(kernels=specs, storage=storage, storage_dir=folder).fit(X, y)
    assert computed == []
    monkeypatch.undo()
    model = estimators.MKLClassifier(kernels=specs, storage="memmap", storage_dir=tmp_path).fit(X, y)
    assert model.kernel_storage_.storage == "memmap" and sorted(p.name for p in tmp_path.iterdir()) == ["a file"]
