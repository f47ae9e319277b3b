"""Kernel functions against sklearn.metrics.pairwise, normalisation, the grid, memory budgets."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import pairwise

import kernelfuse
from kernelfuse import ValidationError, get_registry
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.kernels.functions import KernelSpec, compute_kernels, stack_bytes
from kernelfuse.kernels.normalization import KernelNormalizer


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 5)), rng.normal(size=(15, 5))


CASES = [
    ("linear", {}, lambda X, Z: pairwise.linear_kernel(X, Z)),
    ("polynomial", {"degree": 3, "scale": 0.5, "coef0": 2.0},
     lambda X, Z: pairwise.polynomial_kernel(X, Z, degree=3, gamma=0.5, coef0=2.0)),
    ("gaussian", {"width": 1.7}, lambda X, Z: pairwise.rbf_kernel(X, Z, gamma=1 / (2 * 1.7**2))),
    ("laplacian", {"width": 2.5}, lambda X, Z: pairwise.laplacian_kernel(X, Z, gamma=1 / 2.5)),
    ("sigmoid", {"scale": 0.3, "coef0": -0.2},
     lambda X, Z: pairwise.sigmoid_kernel(X, Z, gamma=0.3, coef0=-0.2)),
    ("negative-distance", {"power": 1.5},
     lambda X, Z: -pairwise.euclidean_distances(X, Z) ** 1.5),
]


@pytest.mark.parametrize("name, params, reference", CASES, ids=[c[0] for c in CASES])
def test_kernels_match_scikit_learn(data, name, params, reference):
    X, Z = data
    kernel = get_registry().create("kernel", name, **params)
    np.testing.assert_allclose(kernel(X, Z), reference(X, Z), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kernel.diagonal(X), np.diag(reference(X, X)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, params, reference", CASES, ids=[c[0] for c in CASES])
def test_kernels_on_shared_pairs_and_in_place_match(data, name, params, reference):
    """``on_pairwise`` and ``on_pairwise_into`` (with or without a workspace for the pairwise
    products) give the same matrix, bit for bit, as a fresh Pairwise."""
    from kernelfuse.kernels.functions import Pairwise

    X, Z = data
    kernel = get_registry().create("kernel", name, **params)
    fresh = kernel.on_pairwise(Pairwise(X, Z))
    np.testing.assert_allclose(fresh, reference(X, Z), rtol=1e-10, atol=1e-12)
    workspace = tuple(np.full((X.shape[0], Z.shape[0]), np.nan) for _ in range(3))
    out = np.full((X.shape[0], Z.shape[0]), np.nan)
    written = kernel.on_pairwise_into(Pairwise(X, Z, (Z * Z).sum(1), workspace), out)
    assert written is out
    np.testing.assert_array_equal(out, fresh)


def test_chi_squared_matches_scikit_learn_on_histograms(data):
    rng = np.random.default_rng(1)
    X, Z = rng.dirichlet(np.ones(6), size=30), rng.dirichlet(np.ones(6), size=10)
    X[0, :2] = 0.0  # empty bins: 0/0 terms count 0
    kernel = get_registry().create("kernel", "chi2", gamma=0.7)
    np.testing.assert_allclose(kernel(X, Z), pairwise.chi2_kernel(X, Z, gamma=0.7), rtol=1e-10)
    with pytest.raises(ValidationError, match="non-negative"):
        kernel(-X, Z)


def test_psd_flags_are_honest(data):
    X, _ = data
    for name, params, _ in CASES:
        kernel = get_registry().create("kernel", name, **params)
        smallest = np.linalg.eigvalsh(kernel(X, X))[0]
        if kernel.psd:
            assert smallest > -1e-8 * abs(np.linalg.eigvalsh(kernel(X, X))[-1])
    sigmoid = get_registry().create("kernel", "sigmoid", scale=1.0, coef0=-1.0)
    assert not sigmoid.psd and np.linalg.eigvalsh(sigmoid(X, X))[0] < -1e-3
    distance = get_registry().create("kernel", "negative-distance", power=1.0)
    G = distance(X, X)
    assert not distance.psd and np.linalg.eigvalsh(G)[0] < -1e-3
    centred = np.eye(40) - 1.0 / 40  # conditionally PD: PSD on vectors summing to zero
    assert np.linalg.eigvalsh(centred @ G @ centred)[0] > -1e-8 * np.abs(G).max()
    with pytest.raises(ValidationError, match="power must be in"):
        get_registry().create("kernel", "negative-distance", power=2.5)


def test_specs_read_their_features_and_stacks_have_the_right_layout(data):
    X, Z = data
    g = get_registry().create("kernel", "gaussian", width=1.0)
    specs = [KernelSpec(g, features=[1, 3]), KernelSpec(g)]
    K = compute_kernels(specs, X)
    Kt = compute_kernels(specs, X, Z)
    assert K.shape == (2, 40, 40) and Kt.shape == (2, 15, 40)
    np.testing.assert_allclose(K[0], pairwise.rbf_kernel(X[:, [1, 3]], gamma=0.5))
    np.testing.assert_allclose(Kt[1], pairwise.rbf_kernel(Z, X, gamma=0.5))
    K32 = compute_kernels(specs, X, dtype=np.float32)
    assert K32.dtype == np.float32 and np.allclose(K32, K, atol=1e-6)


def test_memory_budget_is_checked_before_allocating(data):
    X, _ = data
    specs = kernel_grid(5)
    need = stack_bytes(len(specs), 40, 40)
    assert need == len(specs) * 40 * 40 * 8
    with pytest.raises(ValidationError, match=rf"needs 1.98 MiB \({need} bytes\) \({len(specs)} kernels "
                       rf"of 40 x 40, float64\), over the memory budget of 1.98 MiB \({need - 1} bytes\)"):
        compute_kernels(specs, X, memory_budget=need - 1)
    assert compute_kernels(specs, X, memory_budget=need).shape == (len(specs), 40, 40)
    with pytest.raises(ValidationError, match="NaN"):
        compute_kernels(specs[:1], np.full((3, 5), np.nan))
    with pytest.raises(ValidationError, match="same number of columns"):
        compute_kernels(specs[:1], X, np.zeros((3, 4)))


def test_grid_is_the_papers(data):
    specs = kernel_grid(30)
    assert len(specs) == 27 * 31 == 837  # breast cancer: N = 455 x M = 837 in the design notes
    by_type = kernel_grid(4, group_by="type")
    assert {s.group for s in by_type} == {0, 1}
    assert [s.group for s in kernel_grid(2)][:27] == [0] * 27
    assert {s.features for s in specs} == {None, *((j,) for j in range(30))}
    widths = sorted({s.function.width for s in specs if s.function.name == "gaussian"})
    assert widths[:5] == [0.1, 0.25, 0.5, 0.75, 1.0] and widths[-1] == 20.0 and len(widths) == 24
    named = kernel_grid(2, widths=(1.0,), degrees=(), feature_names=["age", "dose"])
    assert [s.label for s in named] == ["gaussian(width=1) on all", "gaussian(width=1) on age",
                                        "gaussian(width=1) on dose"]
    with pytest.raises(ValidationError, match="2 names for 3 features"):
        kernel_grid(3, feature_names=["a", "b"])


@pytest.mark.parametrize("method", ["unit-trace", "spherical", "none"])
def test_normalisation_is_fitted_on_training_and_applied_to_test(data, method):
    X, Z = data
    reg = get_registry()
    specs = [KernelSpec(reg.create("kernel", "polynomial", degree=2)),
             KernelSpec(reg.create("kernel", "linear"), features=[0, 2])]
    normalizer = KernelNormalizer(method).fit(specs, X)
    K = normalizer.transform(compute_kernels(specs, X))
    Kt = normalizer.transform(compute_kernels(specs, X, Z), specs, Z)
    raw, raw_t = compute_kernels(specs, X), compute_kernels(specs, X, Z)
    if method == "unit-trace":
        np.testing.assert_allclose(np.trace(K, axis1=1, axis2=2), 1.0)
        scale = 1.0 / np.trace(raw, axis1=1, axis2=2)
        np.testing.assert_allclose(Kt, raw_t * scale[:, None, None])
    elif method == "spherical":
        np.testing.assert_allclose(np.diagonal(K, axis1=1, axis2=2), 1.0)
        for m, spec in enumerate(specs):
            full = spec.compute(np.vstack([X, Z]))
            d = np.sqrt(np.diag(full))
            cosine = full / np.outer(d, d)
            np.testing.assert_allclose(Kt[m], cosine[40:, :40], rtol=1e-10)
    else:
        np.testing.assert_allclose(K, raw)
        np.testing.assert_allclose(Kt, raw_t)


def test_normalisation_errors(data):
    X, _ = data
    spec = [KernelSpec(get_registry().create("kernel", "linear"))]
    with pytest.raises(ValidationError, match="must be one of"):
        KernelNormalizer("unit_trace")
    with pytest.raises(ValidationError, match="before fit"):
        KernelNormalizer().transform(np.zeros((1, 40, 40)))
    with pytest.raises(ValidationError, match="k\\(x, x\\) <= 0"):
        KernelNormalizer("spherical").fit(spec, np.vstack([X, np.zeros((1, 5))]))
    with pytest.raises(ValidationError, match="does not match"):
        KernelNormalizer().fit(spec, X).transform(np.zeros((2, 40, 40)))


def test_grid_kernels_feed_a_solver(data):
    X, _ = data
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    specs = kernel_grid(5, widths=(0.5, 2.0), degrees=(1,))
    K = KernelNormalizer().fit(specs, X).transform(compute_kernels(specs, X))
    result = kernelfuse.solve(K, y, solver="mirror-vskl", family="vskl", q=2.0,
                              groups=[s.group for s in specs], C=10.0)
    assert result.converged and result.gap <= 1e-6


def test_default_diagonal_for_third_party_kernels(data):
    from kernelfuse.kernels.functions import KernelFunction

    class Cosine(KernelFunction):
        """A kernel that does not override diagonal()."""

        name = "cosine-test"

        def __call__(self, X, Z):
            return pairwise.cosine_similarity(X, Z)

    X, _ = data
    np.testing.assert_allclose(Cosine().diagonal(X), 1.0)


def test_precomputed_kernel_indexes_its_matrix():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(8, 3))
    G = A @ A.T
    kernel = get_registry().create("kernel", "precomputed", matrix=G)
    idx = np.arange(8.0)[:, None]
    np.testing.assert_allclose(compute_kernels([KernelSpec(kernel)], idx)[0], G)
    np.testing.assert_allclose(kernel(idx[[5, 1]], idx[[0, 7, 2]]), G[np.ix_([5, 1], [0, 7, 2])])
    np.testing.assert_allclose(kernel.diagonal(idx[[3, 4]]), np.diag(G)[[3, 4]])
    assert kernel.psd
    similarity = get_registry().create("kernel", "precomputed", matrix=-G, positive_semidefinite=False)
    assert not similarity.psd
    with pytest.raises(ValidationError, match="indices must be integers"):
        kernel(np.array([[8.0]]), idx)
    with pytest.raises(ValidationError, match="finite 2-D matrix"):
        get_registry().create("kernel", "precomputed", matrix=np.ones(3))


@pytest.mark.parametrize("name, params, psd", [
    ("linear", {}, True), ("gaussian", {"width": 0.7}, True), ("laplacian", {"width": 0.5}, True),
    ("chi2", {"gamma": 0.5}, True), ("constant", {}, True),
    ("polynomial", {"degree": 3, "coef0": 1.0}, True), ("polynomial", {"degree": 3, "coef0": -1.0}, False),
    ("polynomial", {"degree": 1, "scale": -1.0, "coef0": 1.0}, False),
    ("polynomial", {"degree": 2.5}, False),
    ("sigmoid", {"scale": 1.0, "coef0": -1.0}, False), ("negative-distance", {}, False),
])
def test_kernels_declare_whether_they_are_psd(name, params, psd):
    """``psd`` is what the input checks trust: a Gram matrix of a kernel declaring it is PSD,
    and the ones declaring False here are indefinite on these points."""
    kernel = get_registry().create("kernel", name, **params)
    X = np.abs(np.random.default_rng(0).normal(size=(60, 4)))  # non-negative: chi2's domain
    w = np.linalg.eigvalsh(kernel(X, X))
    assert kernel.psd is psd
    assert bool(w[0] >= -1e-8 * max(w[-1], 1.0)) is psd


# ------------------------------------------------------------------ specs by kernel name and column
@pytest.mark.parametrize("name, params", [("gaussian", {"width": 2}), ("Polynomial", {"degree": 3}),
                                          ("laplacian", {"gamma": 0.5}), ("linear", {})])
def test_a_spec_by_registered_kernel_name_is_the_spec_of_the_kernel_built(data, name, params):
    X, Z = data
    by_name = KernelSpec(name, [0, 2], 1, "mine", **params)
    built = KernelSpec(get_registry().create("kernel", name, **params), [0, 2], 1, "mine")
    assert by_name == built
    np.testing.assert_allclose(compute_kernels([by_name], X, Z), compute_kernels([built], X, Z),
                               rtol=1e-12, atol=1e-14)


def test_a_spec_refuses_an_unknown_kernel_name_or_misplaced_parameters():
    with pytest.raises(kernelfuse.UnknownNameError,
                       match=r"unknown kernel 'gausian'; did you mean 'gaussian'.*Known kernel names: .*linear"):
        KernelSpec("gausian", width=2)
    with pytest.raises(ValidationError, match=r"KernelSpec\('gaussian', widht=2\): .*'widht'.*"
                                              r"takes width, gamma, relative_to"):
        KernelSpec("gaussian", widht=2)
    with pytest.raises(ValidationError, match=r"kernel parameters \(width\) go with a kernel name"):
        KernelSpec(get_registry().create("kernel", "gaussian"), width=2)
    with pytest.raises(ValidationError, match="function must be a KernelFunction or a registered kernel name"):
        KernelSpec(42)
    with pytest.raises(ValidationError, match="width must be > 0 and finite"):
        KernelSpec("gaussian", width=0.0)


@pytest.mark.parametrize("features, message", [
    ([7], r"features: column 7 is out of range for X of 5 columns"),
    ({"scale": 1}, r"features must be a list of columns .*got the mapping \{'scale': 1\}"),
    ("scale", r"features must be a list of columns, got 'scale': write \['scale'\]"),
    ([], "features has no columns"),
    ([0.5], "features: a column is an index or a column name, got 0.5"),
    (["scale"], "features: no column named 'scale'; X has no column names .*give column indices"),
    (np.zeros(5, dtype=bool), "features selects no column"),
])
def test_spec_features_out_of_range_or_of_the_wrong_kind_are_refused_by_name(data, features, message):
    X, _ = data
    with pytest.raises(ValidationError, match=message):
        compute_kernels([KernelSpec("linear", features=features)], X)


def test_spec_features_as_a_mask_names_or_negative_indices_read_those_columns(data):
    X, _ = data
    expected = compute_kernels([KernelSpec("gaussian", features=[0, 2])], X)
    mask = np.array([True, False, True, False, False])
    assert KernelSpec("linear", features=mask).features == (0, 2)
    for spec in (KernelSpec("gaussian", features=mask), KernelSpec("gaussian", features=[0, -3]).resolved(5),
                 KernelSpec("gaussian", features=["a", "c"]).resolved(5, ["a", "b", "c", "d", "e"])):
        assert spec.features == (0, 2)
        np.testing.assert_allclose(compute_kernels([spec], X), expected, rtol=1e-12, atol=1e-14)


EXTREME_WIDTHS = [5e-324, 1e-300, 1e-160, 1e-9, 1e160, 1e300, 1.7e308]


@pytest.mark.parametrize("width", EXTREME_WIDTHS)
@pytest.mark.parametrize("name", ["gaussian", "laplacian"])
def test_extreme_widths_give_a_finite_psd_kernel(data, name, width):
    """A tiny width gives the identity-like kernel (1 on equal rows, 0 elsewhere), a huge one the
    constant 1; nothing overflows or divides by zero on the way."""
    X = np.r_[data[0], data[0][:3]]  # three rows twice
    with np.errstate(divide="raise", invalid="raise"):  # no x / 0, no 0 x inf (underflow to 0 is the point)
        K = compute_kernels([KernelSpec(name, width=width)], X)[0]
    assert np.isfinite(K).all()
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(K)[0] >= -1e-10 * X.shape[0]
    np.testing.assert_allclose(np.diag(K), 1.0, rtol=1e-12)
    equal_rows = (X[:, None, :] == X[None, :, :]).all(axis=2)
    if width <= 1e-9:
        np.testing.assert_allclose(K, equal_rows, rtol=0, atol=1e-12)
    if width >= 1e160:
        np.testing.assert_allclose(K, 1.0, rtol=1e-12)
    gamma = get_registry().create("kernel", name, width=width).gamma
    assert 0.0 <= gamma <= np.inf and not np.isnan(gamma)


@pytest.mark.parametrize("gamma", [1e-320, 1e-300, 1e300, 1.7e308])
@pytest.mark.parametrize("name", ["gaussian", "laplacian"])
def test_extreme_gammas_give_a_positive_finite_width(name, gamma):
    width = get_registry().create("kernel", name, gamma=gamma).width
    assert 0.0 < width < np.inf


@pytest.mark.parametrize("width", [0.0, -1e-300, np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", ["gaussian", "laplacian"])
def test_non_positive_or_non_finite_widths_are_refused_by_name(name, width):
    with pytest.raises(ValidationError, match="width must be > 0 and finite"):
        KernelSpec(name, width=width)


def test_a_gaussian_narrower_than_the_gram_form_resolves_uses_the_differences():
    """Features far from the origin (norm 1e4) with rows 1e-3 apart: ``||x||^2 + ||z||^2 - 2 x'z``
    rounds to about 1e-7, as large as the distances; at a width of 1e-3 the kernel is taken from
    the differences of the close rows, as scikit-learn's exact formula gives it."""
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(3)
    X = 1e4 + 1e-3 * rng.normal(size=(30, 4))
    Z = np.r_[X[:5], X[5:10] + 1e-4]
    kernel = get_registry().create("kernel", "gaussian", width=1e-3)
    expected = np.exp(-cdist(Z, X, "sqeuclidean") / (2 * 1e-3**2))
    np.testing.assert_allclose(kernel(Z, X), expected, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(compute_kernels([KernelSpec(kernel)], X, Z)[0], expected, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(np.diag(kernel(X, X)), 1.0, rtol=1e-12)
