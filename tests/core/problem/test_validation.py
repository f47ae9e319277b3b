"""Bad input through ``kernelfuse.solve``: a clear error naming the problem, never a result."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

import kernelfuse
from kernelfuse import (
    IncompatiblePartsError,
    Loss,
    Model,
    Recipe,
    Registry,
    Solver,
    UnknownNameError,
    ValidationError,
)
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import PSD_TOL


def good_data(n=12, m=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    K = np.stack([np.outer(X[:, j], X[:, j]) + 0.01 * np.eye(n) for j in range(m)])
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return K, y


def create(K, y, family="l1_mkl", **kw):
    return Problem.create(K, y, family, **kw)


@pytest.mark.parametrize(
    "K, message",
    [
        (np.zeros((2, 12, 11)), r"shape \(M, N, N\)"),
        (np.zeros((12,)), r"shape \(M, N, N\)"),
        (np.zeros((0, 12, 12)), "empty"),
        (np.array([["a"]]), "numeric"),
        (np.ones((1, 12, 12)) * 1j, "real"),
    ],
)
def test_bad_kernel_shapes_and_types(K, message):
    _, y = good_data()
    with pytest.raises(ValidationError, match=message):
        create(K, y)


def test_nan_and_inf_in_kernels_name_the_kernel():
    K, y = good_data(m=3)
    K[2, 3, 4] = np.nan
    with pytest.raises(ValidationError, match=r"NaN or inf in kernel\(s\) 2"):
        create(K, y)
    K[2, 3, 4] = np.inf
    with pytest.raises(ValidationError, match="kernel"):
        create(K, y)


def test_non_symmetric_and_non_psd_kernels_rejected_where_psd_needed():
    K, y = good_data(m=3)
    K[1, 0, 1] += 1e-3
    with pytest.raises(ValidationError, match=r"kernel\(s\) 1 of K are not symmetric"):
        create(K, y)
    K, y = good_data(m=3)
    K[2] -= 2.0 * np.eye(12)
    with pytest.raises(ValidationError, match="kernel 2 of K is not positive semidefinite"):
        create(K, y, "vskl")
    # Skipping the PSD check is possible, the symmetry check stays.
    assert create(K, y, "vskl", check_psd=False).n_kernels == 3


def test_psd_tolerance_is_relative_to_the_largest_eigenvalue():
    K, y = good_data(m=1)
    w, V = np.linalg.eigh(K[0])
    top = w[-1]
    w[0] = -0.5 * PSD_TOL * top  # within tolerance
    ok = (V * w) @ V.T
    create(0.5 * (ok + ok.T), y)
    w[0] = -20 * PSD_TOL * top  # beyond it
    bad = (V * w) @ V.T
    with pytest.raises(ValidationError, match="not positive semidefinite"):
        create(0.5 * (bad + bad.T), y)


def test_mikl_accepts_indefinite_nonsymmetric_kernels():
    rng = np.random.default_rng(0)
    K = rng.normal(size=(2, 12, 12))
    _, y = good_data()
    problem = create(K, y, "mikl")
    assert problem.family.requires_psd is False
    np.testing.assert_array_equal(problem.K, K)


@pytest.mark.parametrize(
    "y, message",
    [
        (np.ones(12), "single class"),
        (np.r_[np.ones(6), np.zeros(6)], r"-1 or \+1"),
        (np.r_[np.ones(6), -np.ones(5), np.nan], "NaN"),
        (np.ones(11), "11 rows but K has 12 samples"),
        (np.ones((12, 2)), r"shape \(N,\)"),
    ],
)
def test_bad_binary_labels(y, message):
    K, _ = good_data()
    with pytest.raises(ValidationError, match=message):
        create(K, y)


def test_regression_loss_takes_real_targets_and_multilabel_needs_both_classes():
    K, _ = good_data()
    y = np.linspace(-3, 3, 12)
    assert create(K, y, loss="squared").loss.name == "squared"
    with pytest.raises(ValidationError, match=r"-1 or \+1"):
        create(K, y, loss="logistic")
    Y = np.where(np.arange(24).reshape(12, 2) % 3 == 0, 1.0, -1.0)
    Y[:, 1] = 1.0
    with pytest.raises(ValidationError, match=r"single class in label column\(s\) 1"):
        create(K, Y, "mlmkl_sum")
    with pytest.raises(ValidationError, match=r"shape \(N, L\)"):
        create(K, Y[:, 0], "mlmkl_max")


@pytest.mark.parametrize(
    "family, params, message",
    [
        ("l1_mkl", {"C": 0.0}, "C must be > 0"),
        ("l1_mkl", {"C": -1}, "C must be > 0"),
        ("l1_mkl", {"C": np.inf}, "finite"),
        ("l1_mkl", {"C2": -0.1}, "C2 must be >= 0"),
        ("l1_mkl", {"C": "abc"}, "must be a number"),
        ("pnorm_mkl", {"p": 1.0}, r"p must be in \(1, 2\]"),
        ("pnorm_mkl", {"p": 2.5}, r"p must be in \(1, 2\]"),
        ("pnorm_mkl", {"lam": 0}, "lam must be > 0"),
        ("vskl", {"q": 0.5}, "q must be >= 1"),
        ("mikl", {"r": 3}, "r must be 1 or 2"),
        ("mikl", {"p": 1.5}, "p must be 1 or 2"),
    ],
)
def test_parameters_out_of_range(family, params, message):
    K, y = good_data()
    with pytest.raises(ValidationError, match=message):
        create(K, y, family, **params)


def test_unknown_names_have_close_matches():
    K, y = good_data()
    with pytest.raises(UnknownNameError, match="did you mean 'l1_mkl'"):
        kernelfuse.solve(K, y, solver="cvxpy", family="l1mkl")
    with pytest.raises(UnknownNameError, match="did you mean 'cvxpy'"):
        kernelfuse.solve(K, y, solver="cvxyp", family="l1_mkl")
    with pytest.raises(UnknownNameError, match="did you mean 'logistic'"):
        kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", loss="logistik")
    with pytest.raises(UnknownNameError, match="did you mean 'C2'"):
        kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl", c2=1.0)


def test_loss_and_family_mismatches():
    K, y = good_data()
    with pytest.raises(ValidationError, match="defined with loss hinge"):
        create(K, y, "l1_mkl_sq", loss="logistic")
    with pytest.raises(ValidationError, match="binary or regression loss"):
        create(K, y, "l1_mkl", loss="crammer-singer")
    labels = np.arange(12) % 3
    with pytest.raises(ValidationError, match="crammer-singer"):
        create(K, labels, "pnorm_mkl", loss="hinge")
    with pytest.raises(ValidationError, match="does not use groups"):
        create(K, y, "l1_mkl", groups=[0, 1])
    with pytest.raises(ValidationError, match=r"groups must have shape \(2,\)"):
        create(K, y, "vskl", groups=[0, 1, 1])
    with pytest.raises(ValidationError, match="integers"):
        create(K, y, "vskl", groups=[0.5, 1])


class ValueOnlyLoss(Loss):
    """A loss with a value and nothing else."""

    name = "value-only"
    target = "binary"

    def value(self, y, f):
        return np.maximum(0.0, 1.0 - y * f)


class OnlyL1(Solver):
    """A solver for family l1_mkl only, needing a conjugate from its loss."""

    name = "only-l1"
    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl"})
    requires: ClassVar = {"loss": ("conjugate", ("hessian", "derivative"))}

    def run(self, problem, history):
        history.record(1.0)
        return Model(coef=np.zeros(problem.coef_shape))


def test_solver_asked_for_a_family_it_does_not_solve():
    registry = kernelfuse.get_registry()
    local = Registry()
    for entry in registry:
        local.add(entry.kind, entry.name, entry.factory)
    local.add("recipe", "only-l1", Recipe("only-l1", OnlyL1))
    K, y = good_data()
    with pytest.raises(IncompatiblePartsError, match="does not solve family 'vskl'"):
        kernelfuse.solve(K, y, solver="only-l1", family="vskl", registry=local)
    with pytest.raises(IncompatiblePartsError) as info:
        OnlyL1().solve(Problem.create(K, y, "l1_mkl", loss=ValueOnlyLoss()))
    # Every unmet requirement is named at once.
    assert "loss 'value-only' lacks conjugate()" in str(info.value)
    assert "lacks hessian() or derivative()" in str(info.value)
    # The family is implied when the solver has only one.
    result = kernelfuse.solve(K, y, solver="only-l1", registry=local)
    assert result.family == "l1_mkl" and result.objective == pytest.approx(12.0)  # 12 hinges of 1
    with pytest.raises(UnknownNameError, match="parameter of solver only-l1"):
        Recipe("only-l1", OnlyL1).build(local, tol=1.0)


# ---------------------------------------------------------------- check_psd: "auto", True, False


@pytest.mark.parametrize("value", ["yes", "exact", 1, 0, None, "True"])
def test_check_psd_takes_auto_true_or_false_only(value):
    K, y = good_data()
    with pytest.raises(ValidationError, match="check_psd must be 'auto'.*got"):
        kernelfuse.solve(K, y, solver="average", family="l1_mkl_sq", check_psd=value)
    with pytest.raises(ValidationError, match="check_psd"):
        create(K, y, check_psd=value)


def count_checks(monkeypatch):
    """Counters of the kernels the certificate factorises and of the exact check's calls."""
    from kernelfuse import validation

    calls = {"sample": 0, "exact": 0}

    def counted(name, key, count):
        original = getattr(validation, name)

        def wrapper(*args, **kwargs):
            calls[key] += count(*args)
            return original(*args, **kwargs)

        monkeypatch.setattr(validation, name, wrapper)

    counted("samples_fail", "sample", lambda submatrices, traces, tol: len(traces))
    counted("_check_psd", "exact", lambda *args: 1)
    return calls


def test_each_value_runs_its_check(monkeypatch):
    calls = count_checks(monkeypatch)
    K, y = good_data(m=3)
    create(K, y, check_psd=True)
    assert calls == {"sample": 0, "exact": 1}  # every kernel's eigenvalues, one batch
    create(K, y, check_psd="auto")
    assert calls == {"sample": 3, "exact": 1}  # a certificate per kernel, none flagged
    create(K, y, check_psd=False)
    create(K, y, "mikl", check_psd=True)  # mikl takes indefinite kernels: never checked
    assert calls == {"sample": 3, "exact": 1}


def test_symmetry_is_checked_by_probes_without_the_exact_check():
    K, y = good_data(m=3)
    K[1, 0, 1] += 1e-3
    for check_psd in ("auto", False):
        with pytest.raises(ValidationError, match=r"kernel\(s\) 1 of K are not symmetric .*random probes"):
            create(K, y, check_psd=check_psd)
    with pytest.raises(ValidationError, match=r"kernel\(s\) 1 of K are not symmetric \(max \|K - K'\|"):
        create(K, y, check_psd=True)
    K, y = good_data(m=3)
    K[2] += 1e-10 * np.random.default_rng(0).normal(size=K[2].shape)  # within the tolerance, spread out
    assert create(K, y, check_psd="auto").n_kernels == 3


@pytest.mark.parametrize("kind, size, seed", [
    ("sigmoid", None, 0), ("sigmoid", None, 1),
    ("low-rank-minus-one", 1e-3, 0), ("low-rank-minus-one", 1e-1, 1),
    ("noisy", 1e-2, 0), ("one-negative", 1e-1, 0), ("one-negative-smooth", 1e-1, 0),
])
def test_the_certificate_refuses_indefinite_kernels(kind, size, seed, monkeypatch):
    """Kinds and sizes the certificate caught in every draw of benchmarks/psd_certificate.py,
    at N = 455 (here 300, 96 rows sampled); the refusal quotes the exact eigenvalues."""
    from kernelfuse.testing import indefinite_kernel

    calls = count_checks(monkeypatch)
    bad = indefinite_kernel(kind, 300, size or 0.0, np.random.default_rng(seed))
    w = np.linalg.eigvalsh(bad)
    assert w[0] < -PSD_TOL * w[-1]  # indefinite by the exact rule
    K = np.stack([np.eye(300), bad])
    y = np.where(np.arange(300) % 2 == 0, 1.0, -1.0)
    message = f"kernel 1 of K is not positive semidefinite \\(smallest eigenvalue {w[0]:.3g}"
    with pytest.raises(ValidationError, match=message):
        create(K, y)
    assert calls == {"sample": 2, "exact": 1}


@pytest.mark.parametrize("kind", ["wide-gaussian", "linear", "polynomial", "duplicated-points", "constant",
                                  "within-tolerance"])
def test_the_certificate_passes_psd_kernels_near_singular_without_the_exact_check(kind, monkeypatch):
    from kernelfuse.testing import near_singular_kernel

    calls = count_checks(monkeypatch)
    K = near_singular_kernel(kind, 200, np.random.default_rng(0))
    w = np.linalg.eigvalsh(K)
    assert w[0] >= -PSD_TOL * w[-1]
    y = np.where(np.arange(200) % 2 == 0, 1.0, -1.0)
    assert create(K[None], y).n_kernels == 1
    assert calls == {"sample": 1, "exact": 0}


def test_a_flagged_kernel_the_exact_check_accepts_is_accepted(monkeypatch):
    """"auto" refuses only what the exact check refuses: a flag is a question, not a verdict."""
    from kernelfuse import validation

    monkeypatch.setattr(validation, "samples_fail", lambda submatrices, traces, tol: np.ones(len(traces), bool))
    K, y = good_data(m=2)
    assert create(K, y, check_psd="auto").n_kernels == 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_stack_cut_by_fancy_indexing_is_copied_once_into_c_order(dtype):
    K, y = good_data(n=16, m=3)
    rows = np.arange(12)
    cut = K.astype(dtype)[:, rows][:, :, rows]  # NumPy lays this out transposed
    assert not cut.flags.c_contiguous
    problem = create(cut, y[rows])
    assert problem.K.flags.c_contiguous and problem.K.dtype == dtype
    np.testing.assert_array_equal(problem.K, cut)
    direct = kernelfuse.solve(np.ascontiguousarray(cut), y[rows], solver="simplemkl", family="l1_mkl_sq", C=1.0)
    copied = kernelfuse.solve(cut, y[rows], solver="simplemkl", family="l1_mkl_sq", C=1.0)
    np.testing.assert_allclose(copied.kernel_weights, direct.kernel_weights, atol=1e-12)
    assert copied.counters["svm_calls"] == direct.counters["svm_calls"]


def test_a_read_only_stack_is_checked_once_while_it_lives(monkeypatch, tmp_path):
    """The estimators' training stacks are read-only: the first check reads them, the next check
    asking no more (a one-vs-rest class, a path point) does not; a writable stack, a memory-mapped
    one or a harder check reads again."""
    from kernelfuse import validation

    reads = []
    original = validation.sample_rows
    monkeypatch.setattr(validation, "sample_rows", lambda n: reads.append(n) or original(n))
    K, _ = good_data(m=3)
    frozen = K.copy()
    frozen.flags.writeable = False
    for check_psd in (False, False, "auto", "auto", False, True, "auto"):
        validation.check_kernels(frozen, require_psd=True, check_psd=check_psd)
    assert len(reads) == 3  # False, then "auto", then True: each a harder check than before
    for _ in range(2):
        validation.check_kernels(K, require_psd=True, check_psd=False)
    assert len(reads) == 5
    K[0, 0, 0] = np.nan  # a writable stack may change between checks: read every time
    with pytest.raises(ValidationError, match="NaN or inf in kernel"):
        validation.check_kernels(K, require_psd=True, check_psd=False)
    np.save(tmp_path / "K.npy", frozen)
    mapped = np.load(tmp_path / "K.npy", mmap_mode="r")  # read-only, but its file may change
    for _ in range(2):
        validation.check_kernels(mapped, require_psd=True, check_psd=False)
    assert len(reads) == 8
    base = frozen.copy()  # a read-only view of a writable array: the array may change it
    view = base[:]
    view.flags.writeable = False
    for _ in range(2):
        validation.check_kernels(view, require_psd=True, check_psd=False)
    assert len(reads) == 10
    base[0, 0, 0] = np.nan
    with pytest.raises(ValidationError, match="NaN or inf in kernel"):
        validation.check_kernels(view, require_psd=True, check_psd=False)
    key = id(frozen)
    del frozen
    assert key not in validation._CHECKED  # the record leaves with its array
