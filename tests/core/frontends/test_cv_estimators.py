"""MKLClassifierCV and MKLRegressorCV: the certified path, the choice of C, the refit, multiclass,
parallel folds, precomputed stacks, scikit-learn's conventions."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import kernelfuse
from helpers import WEIGHTS_ARE_NOT_REPEATS
from kernelfuse import ValidationError
from kernelfuse.frontends.cv_estimators import MKLClassifierCV, MKLRegressorCV
from kernelfuse.frontends.estimators import MKLClassifier, MKLRegressor
from kernelfuse.frontends.kernel_grid import kernel_grid
from kernelfuse.kernels.functions import compute_kernels
from kernelfuse.kernels.normalization import KernelNormalizer


def small_grid(d: int) -> list:
    return kernel_grid(d, widths=(1.0, 5.0), degrees=(1,))


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.default_rng(0).permutation(y.size)[:150]
    return X[rows, :6], y[rows]


@pytest.fixture(scope="module")
def fitted(cancer):
    X, y = cancer
    return MKLClassifierCV(kernels=small_grid(6), Cs=6, cv=3).fit(X, y)


@pytest.mark.parametrize(("cv_class", "base"), [(MKLClassifierCV, MKLClassifier), (MKLRegressorCV, MKLRegressor)])
def test_every_base_parameter_is_a_parameter_of_the_cv_estimator(cv_class, base):
    """scikit-learn reads the parameters off the explicit ``__init__``: one the base gains and
    the CV estimator lacks fails here, until it is added there."""
    own = inspect.signature(cv_class.__init__).parameters
    for name, parameter in inspect.signature(base.__init__).parameters.items():
        assert name in own, f"{cv_class.__name__} lacks the {base.__name__} parameter {name!r}"
        assert own[name].default == parameter.default, name
    assert set(own) - set(inspect.signature(base.__init__).parameters) == {"Cs", "C2s", "cv", "scoring", "refit"}
    assert kernelfuse.MKLClassifierCV is MKLClassifierCV and "MKLRegressorCV" in kernelfuse.__all__


def test_the_path_is_certified_and_the_best_mean_score_chooses_c(fitted):
    clf = fitted
    assert clf.Cs_.shape == (6,) and np.all(np.diff(clf.Cs_) < 0)  # from C_max down
    assert clf.Cs_[-1] == pytest.approx(1e-3 * clf.Cs_[0])
    assert clf.scores_.shape == clf.path_gaps_.shape == clf.path_statuses_.shape == (3, 6)
    converged = clf.path_statuses_ == "converged"
    assert np.all(clf.path_gaps_[converged] <= clf.tol)  # a status names any point that is not
    assert converged.all()
    assert clf.C_ == clf.Cs_[np.argmax(clf.scores_.mean(axis=0))]
    assert clf.cv_results_["mean_test_score"] == pytest.approx(clf.scores_.mean(axis=0))
    assert clf.cv_results_["rank_test_score"][np.argmax(clf.scores_.mean(axis=0))] == 1
    assert clf.scores_[:, 0].max() < clf.scores_.mean(axis=0).max()  # C_max: the zero model, the majority


def test_the_refit_is_the_estimator_at_the_chosen_c(fitted, cancer, tmp_path):
    X, y = cancer
    clf = fitted
    plain = MKLClassifier(kernels=small_grid(6), C=clf.C_).fit(X, y)
    assert clf.result_.converged and plain.result_.converged
    certified = sum(r.gap * max(1.0, abs(r.objective)) for r in (clf.result_, plain.result_))
    assert abs(clf.result_.objective - plain.result_.objective) <= certified
    assert np.mean(clf.predict(X) == plain.predict(X)) >= 0.98 and clf.score(X, y) >= 0.85
    assert clf.coef_.shape == (len(clf.kernels_), y.size) and clf.kernel_weights_.sum() == pytest.approx(1.0)
    clf.save(tmp_path / "model.npz")
    from kernelfuse.frontends.persistence import load_model

    loaded = load_model(tmp_path / "model.npz")
    assert type(loaded) is MKLClassifier and loaded.C == clf.C_
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_multiclass_one_c_for_every_class_on_the_multiclass_score():
    X, y = load_iris(return_X_y=True)
    clf = MKLClassifierCV(kernels=small_grid(4), Cs=4, cv=3).fit(X, y)
    assert len(clf.results_) == 3 and clf.coef_.shape[0] == 3
    assert clf.C_ == clf.Cs_[np.argmax(clf.scores_.mean(axis=0))]
    assert clf.score(X, y) >= 0.9 and set(clf.predict(X)) <= {0, 1, 2}
    assert np.all(clf.path_gaps_[clf.path_statuses_ == "converged"] <= clf.tol)


def test_parallel_folds_give_the_serial_scores(cancer):
    X, y = cancer
    folds = list(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    serial = MKLClassifierCV(kernels=small_grid(6), Cs=3, cv=folds).fit(X, y)
    parallel = MKLClassifierCV(kernels=small_grid(6), Cs=3, cv=folds, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(parallel.scores_, serial.scores_, rtol=0, atol=1e-8)
    assert parallel.C_ == serial.C_


def test_the_elastic_net_path_and_the_regressor():
    X, y = load_diabetes(return_X_y=True)
    reg = MKLRegressorCV(kernels=kernel_grid(10, widths=(1.0, 5.0), degrees=(1,)), Cs=3, C2s=[0.0, 1.0],
                         cv=3).fit(X[:150], y[:150])
    assert reg.scores_.shape == (3, 3, 2) and reg.C2_ in (0.0, 1.0)
    best = np.unravel_index(np.argmax(reg.scores_.mean(axis=0)), (3, 2))
    assert (reg.C_, reg.C2_) == (reg.Cs_[best[0]], reg.C2s_[best[1]])
    assert reg.cv_results_["param_C2"].tolist() == [0.0] * 3 + [1.0] * 3
    assert reg.score(X[150:250], y[150:250]) > 0.2  # R^2, in the targets' units


def test_a_precomputed_stack_and_an_explicit_sequence_of_c(cancer):
    X, y = cancer
    Xs = (X - X.mean(0)) / X.std(0)
    specs = [spec.fitted(Xs) for spec in small_grid(6)]
    stack = np.moveaxis(KernelNormalizer().fit(specs, Xs).transform(compute_kernels(specs, Xs)), 0, 2)
    clf = MKLClassifierCV(kernels="precomputed", Cs=[0.01, 1.0, 0.1], cv=3).fit(stack, y)
    assert clf.Cs_.tolist() == [1.0, 0.1, 0.01] and clf.C_ in clf.Cs_
    assert clf.predict(stack[:10]).shape == (10,) and clf.score(stack, y) >= 0.85


def test_another_solver_solves_its_path_cold(cancer):
    """mirror-vskl (family l1_mkl_sq) takes no warm start: each C of its path is solved cold."""
    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kernelfuse.ConvergenceWarning)
        clf = MKLClassifierCV(kernels=small_grid(6), solver="mirror-vskl", Cs=[10.0, 100.0], cv=2).fit(X, y)
    assert clf.results_[0].solver == "mirror-vskl" and clf.C_ in (10.0, 100.0)


def test_settings_that_cannot_be_cross_validated_are_refused(cancer):
    X, y = cancer
    cases = [
        (dict(C=0.1), "chooses C among Cs: leave C at None"),
        (dict(Cs=0), "Cs must be a positive integer"),
        (dict(Cs=[0.1, -1.0]), "every value of Cs must be"),
        (dict(Cs=[]), "Cs is empty"),
        (dict(C2s=[0.1], C2=0.5), "chooses C2 among C2s"),
        (dict(solver="simplemkl"), "Cs=10 spaces values below l1_mkl's C_max"),
        (dict(solver="obscure"), "does not take"),
        (dict(refit="yes"), "refit must be True or False"),
    ]
    for params, message in cases:
        with pytest.raises(ValidationError, match=message):
            MKLClassifierCV(kernels=small_grid(6), **params).fit(X, y)


def test_without_refit_only_the_path_is_kept(cancer):
    X, y = cancer
    clf = MKLClassifierCV(kernels=small_grid(6), Cs=3, cv=2, refit=False).fit(X, y)
    assert clf.C_ in clf.Cs_ and not hasattr(clf, "results_")
    with pytest.raises(NotFittedError):
        clf.predict(X)


@parametrize_with_checks([MKLClassifierCV(Cs=2, cv=2), MKLRegressorCV(Cs=2, cv=2)],
                         expected_failed_checks=lambda estimator: WEIGHTS_ARE_NOT_REPEATS)
def test_scikit_learn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_default_folds_are_shuffled_and_seeded_by_random_state(cancer):
    """cv=None and cv=k give shuffled stratified folds seeded by random_state (0 where None), the
    same as the splitter given explicitly; on rows sorted by class the folds still validate on
    both classes in the training proportions."""
    X, y = cancer
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    specs = small_grid(6)
    default = MKLClassifierCV(kernels=specs, Cs=4, cv=3).fit(X, y)
    given = MKLClassifierCV(kernels=specs, Cs=4, cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(X, y)
    np.testing.assert_allclose(default.scores_, given.scores_, atol=1e-12)
    assert default.C_ == given.C_
    seeded = MKLClassifierCV(kernels=specs, Cs=4, cv=3, random_state=5)
    folds = list(seeded._splitter(y).split(X, y))
    expected = list(StratifiedKFold(3, shuffle=True, random_state=5).split(X, y))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, expected))
    for _, test in folds:  # each validation part holds both classes, not one sorted block
        assert abs(np.mean(y[test]) - np.mean(y)) < 0.05
    regressor = MKLRegressorCV(kernels=specs, Cs=3, cv=4, random_state=2)
    splits = list(regressor._splitter(X[:, 0]).split(X))
    assert sorted(np.concatenate([t for _, t in splits]).tolist()) == list(range(y.size))
    assert not all(np.array_equal(t, np.sort(t)) and t[-1] - t[0] == t.size - 1 for _, t in splits)
