"""Cross-validated estimators: ``C`` chosen on a warm-started, certified regularisation path.

:class:`MKLClassifierCV` and :class:`MKLRegressorCV` are :class:`~kernelfuse.frontends.estimators.MKLClassifier`
and :class:`~kernelfuse.frontends.estimators.MKLRegressor` whose ``C`` (and, given ``C2s``, ``C2``)
is chosen by cross-validation, in the manner of scikit-learn's ``LogisticRegressionCV`` and
``LassoCV``.  The family is ``l1_mkl`` (OBJECTIVES.md family 1),

    P_C(f) = sum_i loss(y_i, f_i) + C sum_m ||f_m|| (+ C2 / 2 sum_m ||f_m||^2),

whose zero model (every ``f_m = 0``, the best intercept ``b0``) is optimal exactly for
``C >= C_max = max_m ||loss'(y, b0)||_{K_m}`` (:func:`~kernelfuse.problem.duality.l1_mkl_c_max`:
SpicyMKL's dual ball, section 5.1; the group lasso's ``lambda_max``, Friedman, Hastie and
Tibshirani 2010, section 2.5).  ``Cs`` values are log-spaced from ``C_max`` down to
``1e-3 C_max`` and solved in that order, each solve warm-started at the previous optimum
(SpicyMKL's ``warm_start``: glmnet's pathwise strategy, ibid. section 2.5), so a path costs a
few cold fits.  Every solve keeps its certificate: a point's ``converged`` status means a
certified relative gap at most ``tol`` at that point's ``C``.  Per fold the estimator's own
machinery (standardisation, kernel grid, normalisation, storage) builds the fold's kernels
once, from its training rows only, and the validation kernels once; the refit is one solve at
the chosen point on the kernels of all rows.  Parameters, attributes and cost:
docs/estimators.md, "Choosing C by cross-validation".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from numbers import Integral
from typing import Any, ClassVar

import attrs
import numpy as np
from sklearn.base import is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold, StratifiedKFold, check_cv
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from kernelfuse.assembly.result import Result
from kernelfuse.errors import ValidationError
from kernelfuse.frontends.docstrings import inherits_parameter_docs
from kernelfuse.frontends.estimators import MKLClassifier, MKLEstimator, MKLRegressor, with_parameters
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.kernels.rows import SpecKernelRows
from kernelfuse.parts.registry import Registry
from kernelfuse.problem.families import get_family
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.parallel import map_jobs
from kernelfuse.validation import nonnegative, positive, positive_count

#: The parameters the CV estimators add to their base's.
CV_PARAMS = ("Cs", "C2s", "cv", "scoring", "refit")
#: ``Cs`` as a number of values: log-spaced over ``[C_MAX_FRACTION C_max, C_max]``.
C_MAX_FRACTION = 1e-3

Kernels = np.ndarray | SpecKernelRows | FactorKernels


@attrs.frozen
class PathPoint:
    """One point of a regularisation path: the family parameters it sets (``C``, and ``C2``
    where the path runs over several)."""

    C: float
    C2: float | None = None

    def params(self) -> dict[str, float]:
        return {"C": self.C} if self.C2 is None else {"C": self.C, "C2": self.C2}


@attrs.frozen
class PointSolve:
    """What a solve of the path sets: its point, and the same problem's result at the point
    before (``warm_start``; None: a cold start)."""

    point: PathPoint
    start: Result | None = None


@attrs.frozen(eq=False)
class FoldPath:
    """One fold's path: per point (in the order solved), its validation score, its problems'
    results (one per one-vs-rest class) and the fold's wall time (kernels, path and scores)."""

    scores: list[float]
    results: list[list[Result]]
    seconds: float


class _AtPoint:
    """An estimator whose solves take their family parameters, and their warm start, from
    ``_solving`` (a :class:`PointSolve`), over the estimator's own parameters."""

    _solving: PointSolve

    def _in_solved_units(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**super()._in_solved_units(params), **self._solving.point.params()}  # type: ignore[misc]

    def _run_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = super()._run_settings()  # type: ignore[misc]
        if self._solving.start is not None:
            settings["warm_start"] = self._solving.start
        return settings

    def _loss_params(self) -> dict[str, float]:
        """The loss's parameters (``eps``) in the units of the problem solved."""
        return {} if self.eps is None else super()._in_solved_units({"eps": self.eps})  # type: ignore[attr-defined,misc]

    def _warm_starts(self) -> bool:
        """Whether the solver takes ``warm_start`` (spicymkl); a path of another solver, or of
        a built :class:`~kernelfuse.assembly.solver.Solver`, is solved cold."""
        solver = self.solver  # type: ignore[attr-defined]
        if not isinstance(solver, str):
            return False
        registry = self._registry()  # type: ignore[attr-defined]
        return "warm_start" in registry.get("recipe", solver).factory.parameters(registry)


class _PathFit(_AtPoint):
    """A fold's model: ``fit`` solves the path ``path`` (each ``C2``'s points from the largest
    ``C`` down) in place of one problem per target, each solve warm-started at the same
    target's solve of the point before it, into ``path_results_`` (per point, one result per
    problem), and is the model of the last point; :meth:`at` makes it that of another, and
    :meth:`hold_out` computes the validation kernels that its scores then read."""

    path: Sequence[PathPoint]
    path_results_: list[list[Result]]
    _solved: Result
    _held_out: tuple[Any, np.ndarray]

    def _solve_each(self, K: Kernels, targets: Sequence[np.ndarray]) -> None:
        warm = self._warm_starts()
        self.path_results_ = []
        previous: Sequence[Result | None] = []
        for k, point in enumerate(self.path):
            if k == 0 or point.C2 != self.path[k - 1].C2:  # a path (a C2's) starts cold at its top
                previous = [None] * len(targets)
            solved = []
            for target, start in zip(targets, previous):
                self._solving = PointSolve(point, start if warm else None)
                super()._solve_each(K, [target])  # type: ignore[misc]
                solved.append(self._solved)
            self.path_results_.append(solved)
            previous = solved
        self.at(self.path_results_[-1])  # fitted: the model of the path's last point

    def _adopt_results(self, results: Sequence[Result]) -> None:
        (self._solved,) = results

    def at(self, results: Sequence[Result]) -> None:
        """The fitted model of one point of the path (its results, one per problem)."""
        super()._adopt_results(results)  # type: ignore[misc]

    def hold_out(self, X: Any) -> None:
        """Compute the kernels between the validation rows ``X`` and the training rows once:
        the scores of every point read them."""
        self._held_out = (X, self._test_kernels(self._test_input(X)))  # type: ignore[attr-defined]

    def _scores(self, X: Any) -> np.ndarray:
        held_out, K = self._held_out
        if X is not held_out:
            return super()._scores(X)  # type: ignore[misc]
        return np.column_stack([r.decision_function(K) for r in self.results_])  # type: ignore[attr-defined]


class _ClassifierPath(_PathFit, MKLClassifier):
    """:class:`MKLClassifier` solving a path (:class:`_PathFit`)."""


class _RegressorPath(_PathFit, MKLRegressor):
    """:class:`MKLRegressor` solving a path (:class:`_PathFit`)."""


#: A fold's model: the classifier or the regressor solving a path.
FoldModel = _ClassifierPath | _RegressorPath


def _rows(model: MKLEstimator, X: np.ndarray, rows: np.ndarray, train: np.ndarray) -> np.ndarray:
    """The rows ``rows`` of ``X``: features, or a precomputed stack's ``(rows, train)`` block."""
    return X[np.ix_(rows, train)] if model._precomputed() else X[rows]


def _fold_path(model: FoldModel, X: np.ndarray, y: np.ndarray, weights: np.ndarray | None, train: np.ndarray,
               test: np.ndarray, scoring: Any = None) -> FoldPath:
    """One fold (a job of :func:`~kernelfuse.runtime.parallel.map_jobs`): the path fitted on the
    training rows (with their sample weights), each point scored on the validation rows, unweighted."""
    start = time.perf_counter()
    model.fit(_rows(model, X, train, train), y[train], sample_weight=None if weights is None else weights[train])
    held_out = _rows(model, X, test, train)
    model.hold_out(held_out)
    scorer = check_scoring(model, scoring=scoring)
    scores = []
    for results in model.path_results_:
        model.at(results)
        if scoring is None and is_classifier(model):  # the estimator's score, without its checks
            scores.append(float(np.mean(model.predict(held_out) == y[test])))
        else:
            scores.append(float(scorer(model, held_out, y[test])))
    return FoldPath(scores, model.path_results_, time.perf_counter() - start)


def _checked_values(name: str, values: Any, domain: Any) -> list[float]:
    """A non-empty sequence of numbers, each checked by ``domain``, as floats."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValidationError(f"{name} must be a sequence of numbers, got {values!r}")
    checked = [domain.check(f"every value of {name}", value) for value in values]
    if not checked:
        raise ValidationError(f"{name} is empty: give at least one value")
    return checked


class _CrossValidated(_AtPoint):
    """The cross-validation of :class:`MKLClassifierCV` and :class:`MKLRegressorCV`: ``fit``
    builds the kernels of all rows (the base's fit), takes the path's top from them, runs the
    folds' paths, then solves the chosen point on all rows (``refit``).

    Parameters
    ----------
    Cs : int (default 10): that many values log-spaced from ``C_max`` (``l1_mkl`` only: the
        smallest C whose model is all zero, on all rows) down to ``1e-3 C_max``; or a sequence of
        C (any family taking C), solved from the largest down
    C2s : None (no elastic-net path: ``C2`` as the estimator sets it), or a sequence of the
        elastic net's ``C2 >= 0`` (``P + C2 / 2 sum_m ||f_m||^2``, OBJECTIVES.md units): a path
        over ``Cs`` for each, the pair chosen jointly
    cv : None (5 folds), an int (that many folds, stratified for a classifier), each shuffled
        with the seed ``random_state`` (0 where None), or a scikit-learn splitter or an iterable
        of (train, test) index arrays, used as given
    scoring : None (the estimator's ``score``: accuracy, or R^2), or a scikit-learn scorer name or
        callable; the validation rows are scored unweighted (``sample_weight`` and
        ``class_weight`` weigh the training loss of each fold, sliced to its rows; "balanced" is
        computed on each fold's rows)
    refit : True: the chosen point solved on all rows, the estimator then predicts; False:
        ``C_`` and the scores only
    n_jobs : folds at once, through :func:`kernelfuse.runtime.parallel.map_jobs` (joblib); the
        refit's one-vs-rest problems too

    Attributes
    ----------
    C_ : the chosen ``C``
    C2_ : the chosen ``C2`` (with ``C2s``)
    Cs_ : the path's values of ``C``, largest first
    C2s_ : the path's values of ``C2`` (with ``C2s``)
    scores_ : (n_folds, n_Cs), or (n_folds, n_Cs, n_C2s): each point's validation score
    path_gaps_ : the largest certified relative gap among a fold's problems at each point
    path_statuses_ : ``converged``, else the first other status, per fold and point
    path_n_iter_ : outer iterations, summed over the problems, per fold and point
    fold_times_ : seconds per fold
    cv_results_ : scikit-learn's layout of the scores (``mean_test_score``, ``rank_test_score``, ...)
    """

    #: The estimator cross-validated, and the fold models' class: it, solving a path.
    base_class: ClassVar[type[MKLEstimator]]
    fold_class: ClassVar[type[FoldModel]]
    Cs: Any  # an int or a sequence (an array too), told apart in _path_Cs
    _cv_rows: tuple[np.ndarray, np.ndarray, np.ndarray | None]

    def __init__(
        self,
        kernels: str | Sequence[KernelSpec] = "grid",
        views: Any = None,
        solver: Any = "spicymkl",
        family: str | None = None,
        C: float | None = None,
        C2: float | None = None,
        lam: float | None = None,
        p: float | None = None,
        q: float | None = None,
        r: float | None = None,
        eps: float | None = None,
        loss: str | None = None,
        groups: Sequence[int] | None = None,
        normalization: str = "unit-trace",
        standardize: bool | str = "auto",
        tol: float | None = 1e-3,
        max_iter: int | None = None,
        time_limit: float | None = None,
        memory_budget: int | None = None,
        storage: str = "auto",
        storage_dir: str | None = None,
        kernel_dtype: str = "float64",
        random_state: int | None = None,
        solver_params: dict[str, Any] | None = None,
        check_psd: str | bool = "auto",
        verbose: bool = False,
        n_jobs: int | None = None,
        Cs: int | Sequence[float] = 10,
        C2s: Sequence[float] | None = None,
        cv: Any = None,
        scoring: Any = None,
        refit: bool = True,
        registry: Registry | None = None,
    ) -> None:
        super().__init__(  # type: ignore[call-arg]  # the estimator base it is mixed into
            kernels=kernels, views=views, solver=solver, family=family, C=C, C2=C2, lam=lam, p=p, q=q, r=r,
            eps=eps, loss=loss, groups=groups, normalization=normalization, standardize=standardize, tol=tol,
            max_iter=max_iter, time_limit=time_limit, memory_budget=memory_budget, storage=storage,
            storage_dir=storage_dir, kernel_dtype=kernel_dtype, random_state=random_state,
            solver_params=solver_params, check_psd=check_psd, verbose=verbose, n_jobs=n_jobs, registry=registry)
        self.Cs = Cs
        self.C2s = C2s
        self.cv = cv
        self.scoring = scoring
        self.refit = refit

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        try:
            return super().fit(X, y, sample_weight)  # type: ignore[misc]
        finally:
            for name in ("_cv_rows", "_solving"):
                self.__dict__.pop(name, None)

    def _validated(self, X: Any, y: Any, sample_weight: Any = None) -> tuple[np.ndarray, np.ndarray]:
        X, y = super()._validated(X, y, sample_weight)  # type: ignore[misc]
        self._check_path_settings()
        self._cv_rows = (X, y, self._fit_weight)  # type: ignore[attr-defined]  # the sample weights, sliced per fold
        return X, y

    def _check_path_settings(self) -> None:
        """``Cs``, ``C2s``, ``refit`` and the parameters they replace, checked before any kernel
        is computed."""
        name = type(self).__name__
        family = get_family(self.family_name())  # type: ignore[attr-defined]
        if "C" not in {p.name for p in family.params}:
            raise ValidationError(f"{name} chooses C, which family {family.name!r} does not take: "
                                  f"cross-validate its parameters with GridSearchCV")
        if self.C is not None:  # type: ignore[attr-defined]
            raise ValidationError(f"{name} chooses C among Cs: leave C at None (C={self.C!r} is for the "  # type: ignore[attr-defined]
                                  f"estimator without CV)")
        if isinstance(self.Cs, Integral) and not isinstance(self.Cs, bool):
            positive_count.check("Cs", self.Cs)
            if family.c_max is None:
                raise ValidationError(f"Cs={self.Cs} spaces values below l1_mkl's C_max; family "
                                      f"{family.name!r} needs an explicit sequence of C")
        else:
            _checked_values("Cs", self.Cs, positive)
        if self.C2s is not None:
            _checked_values("C2s", self.C2s, nonnegative)
            if "C2" not in {p.name for p in family.params}:
                raise ValidationError(f"C2s is the elastic net's C2, which family {family.name!r} "
                                      f"does not take")
            if self.C2 is not None:  # type: ignore[attr-defined]
                raise ValidationError(f"{name} chooses C2 among C2s: leave C2 at None")
        if not isinstance(self.refit, (bool, np.bool_)):
            raise ValidationError(f"refit must be True or False, got {self.refit!r}")

    def _solve_each(self, K: Kernels, targets: Sequence[np.ndarray]) -> None:
        X, y, weights = self._cv_rows
        Cs = self._path_Cs(K, targets)
        C2s = [None] if self.C2s is None else [float(c) for c in self.C2s]
        path = [PathPoint(C, C2) for C2 in C2s for C in Cs]
        folds = list(self._splitter(y).split(X, y))
        params = {name: value for name, value in self.get_params(deep=False).items()  # type: ignore[attr-defined]
                  if name not in CV_PARAMS}
        models = [self.fold_class(**{**params, "n_jobs": 1}) for _ in folds]
        for model in models:
            model.path = path
        outcomes = map_jobs(_fold_path, [(model, X, y, weights, train, test)
                                         for model, (train, test) in zip(models, folds)],
                            self.n_jobs, {"scoring": self.scoring})  # type: ignore[attr-defined]
        shape = (len(folds), len(Cs)) if self.C2s is None else (len(folds), len(C2s), len(Cs))

        def by_point(values: list[list[Any]], dtype: Any) -> np.ndarray:
            array = np.array(values, dtype=dtype).reshape(shape)
            return array if self.C2s is None else np.moveaxis(array, 1, 2)  # (fold, C, C2)

        self.Cs_ = np.array(Cs)
        self.scores_ = by_point([o.scores for o in outcomes], float)
        self.path_gaps_ = by_point([[max(r.gap for r in point) for point in o.results] for o in outcomes], float)
        self.path_statuses_ = by_point([[_status(point) for point in o.results] for o in outcomes], object)
        self.path_n_iter_ = by_point([[sum(r.n_iter for r in point) for point in o.results] for o in outcomes], int)
        self.fold_times_ = np.array([o.seconds for o in outcomes])
        mean = self.scores_.mean(axis=0)
        best = np.unravel_index(int(np.argmax(mean)), mean.shape)
        self.C_ = float(Cs[best[0]])
        if self.C2s is not None:
            self.C2s_ = np.array(C2s, dtype=float)
            self.C2_ = float(self.C2s_[best[1]])
        self.cv_results_ = self._cv_results()
        if self.refit:
            self._solving = PointSolve(self._chosen())
            super()._solve_each(K, targets)  # type: ignore[misc]

    def _splitter(self, y: np.ndarray) -> Any:
        """The folds: ``cv`` as scikit-learn reads it, except that None (5) and a number of folds
        give shuffled folds, seeded by ``random_state`` (0 where None): rows in data files are
        often sorted (by class, by time), and unshuffled folds then validate on a shifted part."""
        if self.cv is not None and not isinstance(self.cv, Integral):
            return check_cv(self.cv, y, classifier=is_classifier(self))
        seed = 0 if self.random_state is None else self.random_state  # type: ignore[attr-defined]
        n_splits = 5 if self.cv is None else int(self.cv)
        if is_classifier(self) and type_of_target(y) in ("binary", "multiclass"):
            return StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        return KFold(n_splits, shuffle=True, random_state=seed)

    def _path_Cs(self, K: Kernels, targets: Sequence[np.ndarray]) -> list[float]:
        """``Cs`` from the largest down: given, or log-spaced from ``C_max`` (of ``l1_mkl`` on the
        kernels of all rows, the largest over the problems) to ``C_MAX_FRACTION C_max``."""
        if not isinstance(self.Cs, Integral):
            return sorted((float(c) for c in self.Cs), reverse=True)
        loss = self.loss if self.loss is not None else self.default_loss  # type: ignore[attr-defined]
        family = get_family(self.family_name())  # type: ignore[attr-defined]
        assert family.c_max is not None, "Cs as a count is refused for a family without C_max"
        problem = Problem.create(K, targets[0], family, loss=loss, loss_params=self._loss_params(),
                                 check_psd=False, registry=self._registry(),  # type: ignore[attr-defined]
                                 sample_weight=self._fit_weight)  # type: ignore[attr-defined]
        c_max = max(family.c_max(attrs.evolve(problem, y=np.asarray(target, dtype=np.float64)))
                    for target in targets)
        return list(c_max * np.logspace(0.0, np.log10(C_MAX_FRACTION), int(self.Cs)))

    def _cv_results(self) -> dict[str, np.ndarray]:
        """scikit-learn's ``cv_results_`` layout: one entry per point (``C`` varying fastest)."""
        scores = self.scores_ if self.C2s is None else np.moveaxis(self.scores_, 2, 1)  # (fold, C2, C)
        scores = scores.reshape(scores.shape[0], -1)
        mean = scores.mean(axis=0)
        results: dict[str, np.ndarray] = {"param_C": np.tile(self.Cs_, scores.shape[1] // self.Cs_.size)}
        if self.C2s is not None:
            results["param_C2"] = np.repeat(self.C2s_, self.Cs_.size)
        results.update({f"split{k}_test_score": row for k, row in enumerate(scores)})
        results["mean_test_score"] = mean
        results["std_test_score"] = scores.std(axis=0)
        results["rank_test_score"] = 1 + np.argsort(np.argsort(-mean, kind="stable"), kind="stable")
        return results

    def __sklearn_is_fitted__(self) -> bool:
        """Fitted once refitted (``refit=False`` keeps the path's scores, no model)."""
        return hasattr(self, "results_")

    def save(self, path: Any) -> None:
        """Write the refitted model as the estimator it is, ``base_class`` at the chosen ``C_``
        (and ``C2_``): :func:`~kernelfuse.frontends.persistence.load_model` reads it back as an
        :class:`MKLClassifier` (:class:`MKLRegressor`) that predicts as this one."""
        from kernelfuse.frontends.persistence import save_model

        check_is_fitted(self)
        params = {name: value for name, value in self.get_params(deep=False).items()  # type: ignore[attr-defined]
                  if name not in CV_PARAMS}
        model = self.base_class(**{**params, **self._chosen().params()})
        model.__dict__.update({name: value for name, value in vars(self).items() if name.endswith("_")})
        save_model(model, path)

    def _chosen(self) -> PathPoint:
        """The point chosen: ``C_``, and ``C2_`` with ``C2s``."""
        return PathPoint(self.C_, None if self.C2s is None else self.C2_)


def _status(results: Sequence[Result]) -> str:
    """The status of a point of a fold: ``converged`` where every problem's solve converged,
    else the first other status among them."""
    return next((r.status for r in results if r.status != "converged"), "converged")


@inherits_parameter_docs
@with_parameters(class_weight=None)
class MKLClassifierCV(_CrossValidated, MKLClassifier):
    """:class:`~kernelfuse.frontends.estimators.MKLClassifier` with ``C`` (and ``C2``) chosen by
    cross-validation on a warm-started, certified path (module docstring).  Every
    :class:`~kernelfuse.frontends.estimators.MKLClassifier` parameter, ``C`` left at None (``C2``
    too with ``C2s``).  One C for every one-vs-rest class, chosen on the multiclass score; ties go
    to the larger C (the sparser model).
    """

    base_class = MKLClassifier
    fold_class = _ClassifierPath


@inherits_parameter_docs
class MKLRegressorCV(_CrossValidated, MKLRegressor):
    """:class:`~kernelfuse.frontends.estimators.MKLRegressor` with ``C`` (and ``C2``) chosen by
    cross-validation on a warm-started, certified path (folds not stratified; ``scoring`` None:
    R^2).  The path's C are in the units of the problem solved (the standardised targets), as the
    regressor's ``C``.
    """

    base_class = MKLRegressor
    fold_class = _RegressorPath
