"""Low-rank kernels: Nystrom (uniform and ridge-leverage landmarks) and random Fourier features.

Every measured number quoted below was measured on this machine when the
test was written (numpy's default_rng streams, so they are reproducible).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

import kernelfuse
from kernelfuse import ValidationError, get_registry
from kernelfuse.frontends.estimators import MKLClassifier
from kernelfuse.frontends.persistence import load_model
from kernelfuse.kernels.functions import KernelSpec, compute_kernels
from kernelfuse.kernels.normalization import KernelNormalizer
from kernelfuse.kernels.rows import SpecKernelRows
from kernelfuse.plugins.kernels.nystrom import Nystrom
from kernelfuse.plugins.kernels.random_features import RandomFourierFeatures

WIDTH = float(np.sqrt(30))  # Gaussian width sqrt(d) on the 30 standardised features


def gaussian(width: float = WIDTH):
    return get_registry().create("kernel", "gaussian", width=width)


def relative_error(approximation: np.ndarray, exact: np.ndarray) -> float:
    """``||K~ - K||_F / ||K||_F``."""
    return float(np.linalg.norm(approximation - exact) / np.linalg.norm(exact))


@pytest.fixture(scope="module")
def cancer():
    """Breast cancer, labels +-1, a seeded 300 / 269 split standardised on the training part."""
    X, y = load_breast_cancer(return_X_y=True)
    y = np.where(y == 1, 1.0, -1.0)
    rows = np.random.default_rng(0).permutation(y.size)
    train, test = rows[:300], rows[300:]
    scaler = StandardScaler().fit(X[train])
    return scaler.transform(X[train]), y[train], scaler.transform(X[test]), y[test]


def clustered(seed: int = 0) -> np.ndarray:
    """500 points of a standard 2-D Gaussian and 10 far clusters of 5 (spread 0.3, centres ~ N(0, 8^2 I))."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(500, 2))
    centres = rng.normal(size=(10, 2)) * 8.0
    return np.vstack([dense, *(c + 0.3 * rng.normal(size=(5, 2)) for c in centres)])


@pytest.mark.parametrize("sampling", ["uniform", "leverage"])
def test_nystrom_with_every_point_a_landmark_is_the_exact_kernel(cancer, sampling):
    X = cancer[0][:150]
    for base in (gaussian(), get_registry().create("kernel", "polynomial", degree=2, scale=1 / 30)):
        nystrom = Nystrom.fit(base, X, rank=150, sampling=sampling)
        np.testing.assert_array_equal(nystrom.landmarks, X)
        assert nystrom.features(X).shape == (150, 150) and nystrom.rank == 150
        np.testing.assert_allclose(nystrom(X, X), base(X, X), rtol=0, atol=1e-8)


def test_nystrom_error_decreases_as_the_rank_grows(cancer):
    """Uniform landmarks, mean relative Frobenius error over seeds 0-4 on 300 points:
    rank 10: 0.118, rank 40: 0.030, rank 160: 0.010."""
    X = cancer[0]
    K = gaussian()(X, X)
    errors = [np.mean([relative_error(Nystrom.fit(gaussian(), X, rank, seed=seed)(X, X), K)
                       for seed in range(5)]) for rank in (10, 40, 160)]
    assert errors[0] > 2 * errors[1] > 4 * errors[2]
    assert errors[0] < 0.2 and errors[2] < 0.02


def test_leverage_landmarks_beat_uniform_ones_on_clustered_data():
    """A dense Gaussian cloud of 500 points with 10 small far clusters (width 1), mean relative
    Frobenius error over seeds 0-9: rank 80: uniform 0.0344, leverage 0.0100; rank 160: uniform
    0.0143, leverage 0.0006.  Uniform landmarks fall in the dense cloud and miss the clusters;
    ridge leverage scores put landmarks on them.  (At rank 10-20 on these data leverage is
    slightly worse, 0.216 against 0.187 at rank 10, and on a plain Gaussian cloud the two are
    within 20%: the scores pay off where the data are non-uniform.)"""
    X = clustered()
    K = gaussian(1.0)(X, X)
    for rank, ratio in ((80, 0.6), (160, 0.2)):
        mean = {sampling: np.mean([relative_error(Nystrom.fit(gaussian(1.0), X, rank, sampling=sampling,
                                                              seed=seed)(X, X), K) for seed in range(10)])
                for sampling in ("uniform", "leverage")}
        assert mean["leverage"] <= ratio * mean["uniform"], (rank, mean)


def test_random_fourier_error_shrinks_like_one_over_sqrt_r(cancer):
    """200 points, width sqrt(30), seeds 0-2: mean relative Frobenius error 0.124 (r = 250),
    0.050 (1000), 0.026 (4000), a fitted slope of -0.56 in log-log; the largest absolute
    error at r = 4000 is 0.046-0.056 over the seeds, about 4.5 standard deviations
    sqrt(1 / (2 r)) = 0.011 of one entry over the 20,000 entries."""
    X = cancer[0][:200]
    K = gaussian()(X, X)
    ranks = np.array([250, 1000, 4000])
    errors = []
    for r in ranks:
        runs = [RandomFourierFeatures.draw(30, width=WIDTH, n_features=int(r), seed=seed)(X, X)
                for seed in range(3)]
        errors.append(np.mean([relative_error(A, K) for A in runs]))
    largest = max(np.abs(A - K).max() for A in runs)  # r = 4000
    slope = np.polyfit(np.log(ranks), np.log(errors), 1)[0]
    assert -0.7 < slope < -0.4, errors
    assert largest < 0.08 and errors[-1] < 0.04


def test_both_are_psd_consistent_and_go_through_compute_kernels_and_kernel_rows(cancer):
    X, _, X_test, _ = cancer
    X, X_test = X[:120], X_test[:40]
    kernels = [Nystrom.fit(gaussian(), X, 30, sampling="leverage", seed=1),
               RandomFourierFeatures.draw(30, width=WIDTH, n_features=200, seed=3)]
    specs = [KernelSpec(k) for k in kernels] + [KernelSpec(kernels[0], features=None, group=1)]
    K, K_test = compute_kernels(specs, X), compute_kernels(specs, X, X_test)
    for m, kernel in enumerate([*kernels, kernels[0]]):
        phi, phi_test = kernel.features(X), kernel.features(X_test)
        assert phi.shape == (120, (30, 200, 30)[m])
        np.testing.assert_array_equal(K[m], K[m].T)  # exactly symmetric
        np.testing.assert_allclose(K[m], phi @ phi.T, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(K_test[m], phi_test @ phi.T, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(kernel.diagonal(X), np.diag(K[m]), rtol=1e-12)
        eigenvalues = np.linalg.eigvalsh(K[m])
        assert kernel.psd and eigenvalues[0] > -1e-10 * eigenvalues[-1]
    rows = SpecKernelRows(specs, X, normalization="none")  # the Pairwise path of kernel rows
    np.testing.assert_allclose(rows.rows(7), K[:, 7, :], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rows.diagonal(), np.diagonal(K, axis1=1, axis2=2), rtol=1e-12)


def test_fits_and_draws_are_deterministic_in_the_seed(cancer):
    X = cancer[0]
    for sampling in ("uniform", "leverage"):
        a, b = (Nystrom.fit(gaussian(), X, 20, sampling=sampling, seed=5) for _ in range(2))
        c = Nystrom.fit(gaussian(), X, 20, sampling=sampling, seed=6)
        np.testing.assert_array_equal(a.landmarks, b.landmarks)
        np.testing.assert_array_equal(a.projection, b.projection)
        assert not np.array_equal(a.landmarks, c.landmarks)
    a, b = (RandomFourierFeatures.draw(30, n_features=50, seed=2) for _ in range(2))
    np.testing.assert_array_equal(a.frequencies, b.frequencies)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    # one draw at another width: the frequencies scale as 1 / width
    wide = attrs.evolve(a, width=4.0)
    np.testing.assert_allclose(wide.features(X[:5] * 4.0), a.features(X[:5]), rtol=1e-12, atol=1e-12)
    assert a.n_inputs == 30 and not a.frequencies.flags.writeable


def accuracy(K_test: np.ndarray, result: kernelfuse.Result, y_test: np.ndarray) -> float:
    return float(np.mean(np.sign(result.decision_function(K_test)) == y_test))


def test_solve_on_low_rank_stacks_matches_the_exact_kernels(cancer):
    """l1_mkl (spicymkl, logistic, C = 0.3) on 3 Gaussian widths, 300 training points:
    test accuracy exact 0.978, Nystrom (rank 100) 0.970, random features (r = 1000) 0.970."""
    X, y, X_test, y_test = cancer
    widths = [WIDTH * w for w in (0.5, 1.0, 2.0)]
    stacks = {
        "exact": [KernelSpec(gaussian(w)) for w in widths],
        "nystrom": [KernelSpec(Nystrom.fit(gaussian(w), X, 100, seed=0)) for w in widths],
        "random-fourier": [KernelSpec(RandomFourierFeatures.draw(30, width=w, n_features=1000, seed=m))
                           for m, w in enumerate(widths)],
    }
    scores = {}
    for name, specs in stacks.items():
        normalizer = KernelNormalizer("unit-trace").fit(specs, X)
        K = normalizer.transform(compute_kernels(specs, X))
        K_test = normalizer.transform(compute_kernels(specs, X, X_test), specs, X_test)
        result = kernelfuse.solve(K, y, solver="spicymkl", family="l1_mkl", loss="logistic", C=0.3,
                                  tol=1e-3)  # the PSD check runs on the low-rank stacks too
        assert result.converged
        scores[name] = accuracy(K_test, result, y_test)
    assert scores["exact"] > 0.95
    assert abs(scores["nystrom"] - scores["exact"]) <= 0.02, scores
    assert abs(scores["random-fourier"] - scores["exact"]) <= 0.02, scores


def test_mkl_classifier_with_low_rank_specs_and_its_saved_model(cancer, tmp_path):
    """MKLClassifier (spicymkl, l1_mkl) on [Gaussian] against [Nystrom (leverage, rank 50),
    random features (r = 300)] of the same Gaussian: test accuracy 0.978 and 0.970."""
    X, y, X_test, y_test = cancer
    exact = MKLClassifier(kernels=[KernelSpec(gaussian())]).fit(X, y).score(X_test, y_test)
    nystrom = Nystrom.fit(gaussian(), X, 50, sampling="leverage", seed=0)
    features = RandomFourierFeatures.draw(30, width=WIDTH, n_features=300, seed=0)
    model = MKLClassifier(kernels=[KernelSpec(nystrom, label="nystrom"),
                                   KernelSpec(features, label="rff")]).fit(X, y)
    assert exact > 0.95 and abs(model.score(X_test, y_test) - exact) <= 0.02
    path = tmp_path / "low_rank.npz"
    model.save(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.decision_function(X_test), model.decision_function(X_test))
    again, drawn = (spec.function for spec in loaded.kernels_)
    assert isinstance(again, Nystrom) and isinstance(drawn, RandomFourierFeatures)
    assert (again.base, dict(again.base_params)) == ("gaussian", {"width": WIDTH, "relative_to": None})
    np.testing.assert_array_equal(again.landmarks, nystrom.landmarks)
    np.testing.assert_array_equal(again.projection, nystrom.projection)
    assert (drawn.width, drawn.n_features, drawn.seed) == (WIDTH, 300, 0)
    np.testing.assert_array_equal(drawn.frequencies, features.frequencies)
    np.testing.assert_array_equal(drawn.offsets, features.offsets)


def test_registered_by_name_and_rebuilt_from_their_fields():
    registry = get_registry()
    assert {"nystrom", "random-fourier"} <= set(registry.names("kernel"))
    X = clustered()[:60]
    nystrom = Nystrom.fit(get_registry().create("kernel", "laplacian", width=2.0), X, 10, seed=0)
    fields = {f.name: getattr(nystrom, f.name) for f in attrs.fields(Nystrom)}
    rebuilt = registry.create("kernel", "nystrom", **fields)
    np.testing.assert_array_equal(rebuilt(X, X[:7]), nystrom(X, X[:7]))
    assert "base='laplacian'" in repr(rebuilt) and "<array of shape (10, 2)>" in repr(rebuilt)


def test_bad_parameters_are_refused_with_clear_messages():
    X = clustered()[:40]
    with pytest.raises(ValidationError, match=r"rank must be an integer in \[1, 40\].*got 0"):
        Nystrom.fit(gaussian(), X, 0)
    with pytest.raises(ValidationError, match=r"rank must be an integer in \[1, 40\].*got -3"):
        Nystrom.fit(gaussian(), X, -3)
    with pytest.raises(ValidationError, match=r"rank must be an integer in \[1, 40\] \(the landmarks are "
                                              r"rows of X\), got 41"):
        Nystrom.fit(gaussian(), X, 41)
    with pytest.raises(ValidationError, match="got 2.5"):
        Nystrom.fit(gaussian(), X, 2.5)
    with pytest.raises(ValidationError, match="sampling must be one of uniform, leverage, got 'greedy'"):
        Nystrom.fit(gaussian(), X, 5, sampling="greedy")
    with pytest.raises(ValidationError, match="oversample must be >= 1"):
        Nystrom.fit(gaussian(), X, 5, sampling="leverage", oversample=0.5)
    with pytest.raises(ValidationError, match="regularization must be > 0"):
        Nystrom.fit(gaussian(), X, 5, sampling="leverage", regularization=0.0)
    with pytest.raises(ValidationError, match="needs a PSD base kernel; 'sigmoid' is not PSD"):
        Nystrom.fit(get_registry().create("kernel", "sigmoid"), X, 5)
    with pytest.raises(ValidationError, match="'precomputed' has array parameters"):
        Nystrom.fit(get_registry().create("kernel", "precomputed", matrix=np.eye(40)), X, 5)
    with pytest.raises(ValidationError, match="reads 2 features, got an array of shape"):
        Nystrom.fit(gaussian(), X, 5)(X[:, :1], X[:, :1])
    with pytest.raises(ValidationError, match=r"projection must have shape \(r, r\) for r = 3"):
        Nystrom(base="gaussian", landmarks=X[:3], projection=np.eye(4))
    with pytest.raises(ValidationError, match="width must be > 0 and finite, got 0.0"):
        RandomFourierFeatures.draw(2, width=0.0)
    with pytest.raises(ValidationError, match="width must be > 0 and finite, got -1.0"):
        get_registry().create("kernel", "random-fourier", width=-1.0, n_features=1,
                              frequencies=np.ones((1, 2)), offsets=np.zeros(1))
    with pytest.raises(ValidationError, match="n_features must be a positive integer, got 0"):
        RandomFourierFeatures.draw(2, n_features=0)
    with pytest.raises(ValidationError, match="n_inputs must be a positive integer, got 0"):
        RandomFourierFeatures.draw(0)
    with pytest.raises(ValidationError, match=r"frequencies of shape \(3, d\) and offsets of shape \(3,\)"):
        RandomFourierFeatures(n_features=3, frequencies=np.ones((2, 2)), offsets=np.zeros(2))
    with pytest.raises(ValidationError, match="offsets must be a finite 1-D array"):
        RandomFourierFeatures(n_features=1, frequencies=np.ones((1, 2)), offsets=np.array([np.nan]))


@pytest.mark.parametrize("normalization", ["unit-trace", "spherical", "none"])
def test_factors_stand_for_the_normalised_stack(normalization):
    """``FactorKernels.from_specs``: ``Phi_m Phi_m'`` is the stack ``compute_kernels`` and the
    normaliser give, feature subsets included; rows, diagonal, products and ``K_m V`` agree."""
    from kernelfuse.kernels.factors import FactorKernels
    from kernelfuse.kernels.products import kernel_products, kernel_times

    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 5))
    specs = [KernelSpec(Nystrom.fit(gaussian(2.0), X[:, :3], 12, seed=0), features=(0, 1, 2)),
             KernelSpec(RandomFourierFeatures.draw(5, width=3.0, n_features=20, seed=1)),
             KernelSpec(Nystrom.fit(gaussian(1.0), X[:, 3:], 8, sampling="leverage", seed=2), features=(3, 4))]
    factors = FactorKernels.from_specs(specs, X, normalization)
    stack = KernelNormalizer(normalization).fit(specs, X).transform(compute_kernels(specs, X))
    assert factors.shape == stack.shape and list(factors.ranks) == [12, 20, 8]
    assert factors.nbytes == 8 * 60 * 40
    np.testing.assert_allclose(np.stack([F @ F.T for F in factors.factors]), stack, atol=1e-12)
    np.testing.assert_allclose(factors.rows(7), stack[:, 7, :], atol=1e-12)
    np.testing.assert_allclose(factors.diagonal(), np.diagonal(stack, axis1=1, axis2=2), atol=1e-12)
    V, coef = rng.normal(size=(60, 2)), rng.normal(size=(3, 4, 60))
    np.testing.assert_allclose(kernel_times(factors, V), kernel_times(stack, V), atol=1e-10)
    np.testing.assert_allclose(kernel_products(factors, coef), kernel_products(stack, coef), atol=1e-10)
    only = kernel_products(factors, coef, np.array([1]))
    assert not only[[0, 2]].any()
    np.testing.assert_allclose(only[1], kernel_products(stack, coef)[1], atol=1e-10)
    with pytest.raises(ValidationError, match=r"kernel\(s\) 1 have no explicit features"):
        FactorKernels.from_specs([specs[0], KernelSpec(gaussian(2.0))], X)


@pytest.mark.filterwarnings("ignore::kernelfuse.ConvergenceWarning")  # obscure: 20 epochs on purpose
@pytest.mark.parametrize("normalization", ["unit-trace", "spherical", "none"])
def test_low_rank_models_predict_from_features_as_from_test_kernels(normalization, monkeypatch):
    """Every kernel with features: predictions ``sum_m t_m(x) phi_m(x) . (Phi_m' coef_m)``, never
    a test kernel, equal the test-kernel path (binary one-vs-rest and a multiclass solver)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_train, y_train, X_test = X[::2], y[::2], X[1::2]
    specs = [KernelSpec(Nystrom.fit(gaussian(3.0), X_train[:, :6], 15, seed=0), features=tuple(range(6))),
             KernelSpec(RandomFourierFeatures.draw(13, width=4.0, n_features=25, seed=1))]
    for params in ({}, {"solver": "obscure", "family": "pnorm_mkl", "lam": 0.01, "max_iter": 20,
                        "random_state": 0, "tol": None}):
        model = MKLClassifier(kernels=specs, normalization=normalization, **params).fit(X_train, y_train)
        K = model._test_kernels(model._test_input(X_test))
        by_kernels = np.column_stack([r.decision_function(K) for r in model.results_])
        with monkeypatch.context() as patch:
            patch.setattr(model, "_test_kernels", lambda rows: pytest.fail("a test kernel was formed"))
            by_features = model.decision_function(X_test)
        np.testing.assert_allclose(by_features.reshape(by_kernels.shape), by_kernels, rtol=1e-9, atol=1e-12)
        assert model.score(X_test, y[1::2]) > 0.85


def test_random_features_refuse_a_width_whose_phases_overflow():
    X = np.random.default_rng(0).normal(size=(10, 5))
    huge = RandomFourierFeatures.draw(5, width=1e300, n_features=50, seed=0)
    np.testing.assert_allclose(huge(X, X), huge(X, X)[0, 0], rtol=1e-12)  # phases b only: a constant kernel
    tiny = RandomFourierFeatures.draw(5, width=1e-308, n_features=50, seed=0)
    with pytest.raises(ValidationError, match=r"random-fourier: width 1e-308 is too small .*give a larger width"):
        tiny.features(X)
