"""What a solver returns: the model, its certified quality, and its history."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any

import attrs
import numpy as np

from kernelfuse.errors import ValidationError

#: Why a solver stopped:
#:
#: * ``converged``: the certified relative gap of the returned model is at
#:   most its tolerance (whatever its stopping rule);
#: * ``completed``: a method that does not optimise the family objective (a two-stage or
#:   fixed-weight method: the average kernel, kernel weights by their own criterion, then one
#:   SVM) ran all of its own steps; ``gap`` measures the distance of its model from the
#:   family's optimum, as information (at most ``tol``, the run is ``converged``);
#: * ``max_iter``, ``time_limit``: the limit the caller set ended the run;
#: * ``interrupted``: the caller interrupted the run (``KeyboardInterrupt``: Ctrl-C,
#:   SIGINT) during an iteration; the best model so far is returned;
#: * ``stalled``: its optimiser found no further decrease, or a change-based
#:   stopping rule held, before the certified gap reached the tolerance (the
#:   inner solver's accuracy limits the solve);
#: * ``diverged``: the objective at the model it returned is not finite;
#: * ``numerical_failure``: a computation failed or gave a non-finite value
#:   (a singular system, an overflow); the best model before it is returned.
#:
#: Every status but those of :data:`FINISHED_STATUSES` comes with a
#: :class:`~kernelfuse.errors.ConvergenceWarning` naming it.
STATUSES = ("converged", "completed", "max_iter", "time_limit", "interrupted", "stalled", "diverged",
            "numerical_failure")
#: The statuses of a run that did all its method sets out to do: no warning.
FINISHED_STATUSES = ("converged", "completed")
#: The statuses of a run that ended short of its tolerance for a reason other
#: than a limit the caller set (the CLI then exits with status 1).
FAILED_STATUSES = ("stalled", "diverged", "numerical_failure")

#: Keys of a saved result (the CLI's RESULT.npz), besides the history.
RESULT_KEYS = ("coef", "intercept", "kernel_weights", "objective", "dual_objective",
               "gap", "n_iter", "time", "status", "solver", "family")


def relative_gap(objective: float, lower: float) -> float:
    """``(objective - lower) / max(1, |objective|)`` (OBJECTIVES.md); nan without a bound."""
    if math.isnan(lower):
        return math.nan
    return (objective - lower) / max(1.0, abs(objective))


def roundoff(objective: float, n_samples: int) -> float:
    """How far rounding may move an objective or a lower bound: ``4 N eps max(1, |P|)`` (each is
    a sum over the N examples of terms of the objective's order)."""
    return 4.0 * n_samples * float(np.finfo(float).eps) * max(1.0, abs(objective))


@attrs.frozen
class Iteration:
    """One row of a solver's history.

    ``counters`` holds the solver's cumulative work counters at that point
    (e.g. ``svm_calls``, ``kernel_passes``, ``bca_iterations``) and readings
    of the model (``active_kernels``).  ``point``: the outer optimiser's
    estimate at that iteration where the solver records it (for the
    multi-label solvers the kernel weights ``p`` then the label weights);
    kept in memory only, not saved.
    """

    iteration: int
    objective: float
    dual_objective: float
    gap: float
    time: float
    counters: Mapping[str, float] = attrs.field(factory=dict)
    point: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)


class History:
    """Per-iteration records, passed to an optional callback as they come."""

    def __init__(self, callback: Callable[[Iteration], object] | None = None,
                 objective_factor: float = 1.0) -> None:
        """``objective_factor`` multiplies every recorded objective and lower bound: a
        solver working in other units (:mod:`kernelfuse.problem.scaling`) records in its
        own, the history holds the problem's."""
        self._start = time.perf_counter()
        self._callback = callback
        self._factor = objective_factor
        self.rows: list[Iteration] = []

    @property
    def objective_factor(self) -> float:
        """What turns an objective of the solve into one of the problem (1 but in other units)."""
        return self._factor

    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    def record(self, objective: float, dual_objective: float = math.nan,
               point: np.ndarray | None = None, **counters: float) -> Iteration:
        objective, dual_objective = self._factor * objective, self._factor * dual_objective
        row = Iteration(len(self.rows) + 1, float(objective), float(dual_objective),
                        relative_gap(objective, dual_objective), self.elapsed(), dict(counters),
                        point=point)
        self.rows.append(row)
        if self._callback is not None:
            self._callback(row)
        return row


_SCALAR_FIELDS = ("iteration", "objective", "dual_objective", "gap", "time")


@attrs.frozen(eq=False, repr=False)
class Result:
    """A fitted model and how it was obtained (OBJECTIVES.md, "What a solver reports").

    ``objective`` is the family objective evaluated at ``coef``,
    ``intercept`` and ``kernel_weights`` by :func:`kernelfuse.problem.objectives.evaluate`;
    ``dual_objective`` a certified lower bound (nan where the method has
    none); ``gap = (objective - dual_objective) / max(1, |objective|)``.
    ``kernel_weights`` are the combination weights ``d`` (``f = sum_m d_m K_m alpha``: the
    model's own where it has them, else
    :func:`~kernelfuse.problem.objectives.combination_weights`) and ``norm_shares`` each
    kernel's ``||f_m|| / sum_k ||f_k||``; both None for ``mikl``, and ``norm_shares`` None
    in a file written before it was reported (docs/architecture.md).  ``loss``: the registered
    name of the problem's loss (None in a file written before it was kept), which a warm start
    (``warm_start`` of spicymkl) checks against its problem's.
    """

    coef: np.ndarray
    intercept: float
    kernel_weights: np.ndarray | None
    objective: float
    dual_objective: float
    gap: float
    n_iter: int
    time: float
    status: str = attrs.field(validator=attrs.validators.in_(STATUSES))
    solver: str
    family: str
    history: tuple[Iteration, ...] = ()
    message: str = ""
    norm_shares: np.ndarray | None = None
    loss: str | None = None

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    def __repr__(self) -> str:
        """One line: solver, family, status, objective, gap, iterations, time and the arrays'
        shapes (not their entries: ``result.coef`` and the rest hold those)."""
        weights = "None" if self.kernel_weights is None else (
            f"{self.kernel_weights.shape}, {int(np.count_nonzero(self.kernel_weights))} nonzero")
        message = f", message={self.message!r}" if self.message else ""
        return (f"Result(solver={self.solver!r}, family={self.family!r}, status={self.status!r}, "
                f"objective={self.objective:.10g}, dual_objective={self.dual_objective:.10g}, "
                f"gap={self.gap:.3g}, n_iter={self.n_iter}, time={self.time:.3g}s, "
                f"coef={np.shape(self.coef)}, intercept={self.intercept:.6g}, kernel_weights={weights}, "
                f"history={len(self.history)} rows{message})")

    @property
    def interval(self) -> tuple[float, float]:
        """``(lower, upper)``: the optimum lies in it, up to :func:`roundoff`, where
        ``dual_objective`` is a certified bound; a lower bound above the objective by
        round-off gives ``[objective, dual_objective]``; ``-inf`` without a bound."""
        lower = -math.inf if math.isnan(self.dual_objective) else self.dual_objective
        return min(lower, self.objective), max(lower, self.objective)

    @property
    def counters(self) -> Mapping[str, float]:
        """The solver's work counters at the end (empty without history)."""
        return self.history[-1].counters if self.history else {}

    def decision_function(self, K_test: object) -> np.ndarray:
        """``f(x) = sum_m K_m(x, x_train) @ coef[m] + intercept`` on new points.

        ``K_test`` has shape (M, n_test, N_train): the kernels between the new
        points and the training points, normalised as the training kernels
        were; entry ``[m, i, j]`` plays the role of ``K[m][j, i]`` of the
        training stack (OBJECTIVES.md: ``f = sum_m K[m].T @ coef[m]``), which
        matters only for the non-symmetric kernels of ``mikl``.  Returns (n_test,), or
        (n_test, n_outputs) for multiclass and
        multi-label models (then the largest column is the predicted class).
        """
        K = np.asarray(K_test, dtype=float)
        coef = self.coef
        if K.ndim != 3 or K.shape[0] != coef.shape[0] or K.shape[2] != coef.shape[-1]:
            raise ValidationError(
                f"K_test must have shape (M={coef.shape[0]}, n_test, N={coef.shape[-1]}), "
                f"got {K.shape}"
            )
        if coef.ndim == 2:
            return np.einsum("mij,mj->i", K, coef) + self.intercept
        return np.einsum("mij,mcj->ic", K, coef) + self.intercept

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The result as named arrays (what :meth:`save` writes)."""
        arrays: dict[str, Any] = {
            "coef": self.coef,
            "intercept": self.intercept,
            "objective": self.objective,
            "dual_objective": self.dual_objective,
            "gap": self.gap,
            "n_iter": self.n_iter,
            "time": self.time,
            "status": self.status,
            "solver": self.solver,
            "family": self.family,
            "message": self.message,
        }
        if self.loss is not None:
            arrays["loss"] = self.loss
        for name in ("kernel_weights", "norm_shares"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        for name in _SCALAR_FIELDS:
            arrays[f"history_{name}"] = np.array(
                [getattr(row, name) for row in self.history], dtype=float
            )
        for name in sorted({key for row in self.history for key in row.counters}):
            arrays[f"counter_{name}"] = np.array(
                [row.counters.get(name, math.nan) for row in self.history], dtype=float
            )
        return {key: np.asarray(value) for key, value in arrays.items()}

    def save(self, path: str | PathLike[str]) -> None:
        """Write the result as an ``.npz`` file (no pickled objects, with a digest:
        :mod:`kernelfuse.runtime.npz_file`) at exactly ``path``, atomically: a failed write leaves
        the file there before intact (:func:`kernelfuse.runtime.files.atomic_write`)."""
        from kernelfuse.runtime.npz_file import write_npz

        write_npz(path, self.to_arrays())

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Result:
        """Read a result written by :meth:`save`; a changed or truncated file is refused."""
        from kernelfuse.runtime.npz_file import read_npz

        return cls.from_arrays(read_npz(path, "result", verify=True), source=str(path))

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], source: str = "arrays") -> Result:
        """The result :meth:`to_arrays` described."""
        missing = [k for k in RESULT_KEYS if k not in arrays and k != "kernel_weights"]
        if missing:
            raise ValidationError(f"{source} is not a kernelfuse result: missing {missing}")
        status = str(arrays["status"])
        if status not in STATUSES:
            raise ValidationError(f"{source}: status {status!r} is not one of {', '.join(STATUSES)}")
        counter_names = [k[len("counter_"):] for k in arrays if k.startswith("counter_")]
        columns = [arrays[f"history_{name}"] for name in _SCALAR_FIELDS]
        rows = tuple(
            Iteration(int(values[0]), float(values[1]), float(values[2]), float(values[3]), float(values[4]), counters={
                name: float(arrays[f"counter_{name}"][i]) for name in counter_names
                if not math.isnan(arrays[f"counter_{name}"][i])
            })
            for i, values in enumerate(zip(*columns))
        )
        return cls(
            coef=arrays["coef"], intercept=float(arrays["intercept"]),
            kernel_weights=arrays.get("kernel_weights"),
            objective=float(arrays["objective"]), dual_objective=float(arrays["dual_objective"]),
            gap=float(arrays["gap"]), n_iter=int(arrays["n_iter"]), time=float(arrays["time"]),
            status=status, solver=str(arrays["solver"]),
            family=str(arrays["family"]), history=rows, message=str(arrays.get("message", "")),
            norm_shares=arrays.get("norm_shares"),
            loss=str(arrays["loss"]) if "loss" in arrays else None,
        )
