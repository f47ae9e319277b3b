"""``Solver``: turns a :class:`~kernelfuse.problem.instance.Problem` into a :class:`~kernelfuse.assembly.result.Result`.

A solver declares the families it minimises and what it needs of its parts
(``requires``, checked by :func:`kernelfuse.assembly.requirements.check_requirements`
before any work).  Subclasses implement :meth:`Solver.run`; the base class
checks the problem, times the run and builds the result, so that the
reported objective always comes from :func:`kernelfuse.problem.objectives.evaluate`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse import errors
from kernelfuse.assembly.requirements import Requirements, check_requirements
from kernelfuse.assembly.result import FINISHED_STATUSES, History, Iteration, Result, relative_gap, roundoff
from kernelfuse.errors import IncompatiblePartsError, SolverError
from kernelfuse.kernels.array_backend import is_device_array
from kernelfuse.kernels.factors import FactorKernels
from kernelfuse.kernels.rows import KernelRows
from kernelfuse.parts.registry import Registry, resolve_registry
from kernelfuse.problem import objectives
from kernelfuse.problem.families import Family
from kernelfuse.problem.instance import Problem
from kernelfuse.problem.scaling import far_off_C, unit_scale
from kernelfuse.runtime.memory import out_of_memory
from kernelfuse.runtime.parallel import blas_threads

logger = logging.getLogger(__name__)

#: The exceptions of a failed computation (numpy, scipy, Python arithmetic).
NUMERICAL_ERRORS = (np.linalg.LinAlgError, FloatingPointError, ZeroDivisionError, OverflowError)



@attrs.frozen
class Model:
    """What :meth:`Solver.run` returns: the model and how the run ended (``status``, one of
    :data:`~kernelfuse.assembly.result.STATUSES`).  A method that does not optimise the family
    objective ends ``completed``; :meth:`Solver.solve` reports it ``converged`` where the
    certified gap of its model is at most the solver's ``tol``."""

    coef: np.ndarray
    intercept: float = 0.0
    kernel_weights: np.ndarray | None = None
    dual_objective: float = math.nan
    n_iter: int = 0
    status: str = "converged"
    message: str = ""


class Solver(ABC):
    """A solver for one or more families of OBJECTIVES.md."""

    #: Registered name of the recipe that builds it.
    name: ClassVar[str]
    #: Families it minimises.
    families: ClassVar[frozenset[str]]
    #: What it needs of its parts, by role; role ``loss`` is the problem's loss.
    requires: ClassVar[Requirements] = {}
    #: Parts a recipe of this solver gets unless it names others: role -> (kind, registered name).
    default_parts: ClassVar[Mapping[str, tuple[str, str]]] = {}
    #: BLAS threads while running (None: leave the process setting alone).
    #: Solvers making many small dense solves run faster on one thread: a
    #: two-thread OpenBLAS call on a small operand stalls for milliseconds.
    blas_threads: int | None = None
    #: Whether it works from :class:`~kernelfuse.kernels.rows.KernelRows` (one example's rows at a time).
    reads_kernel_rows: ClassVar[bool] = False
    #: Whether it works from :class:`~kernelfuse.kernels.factors.FactorKernels` (``K_m = Phi_m Phi_m'``);
    #: solvers that read rows read them from factors too.
    reads_kernel_factors: ClassVar[bool] = False
    #: Whether it works from a stack of another array library (CuPy, PyTorch: on a GPU) without
    #: copying kernels to the host (:mod:`kernelfuse.kernels.array_backend`).
    reads_device_arrays: ClassVar[bool] = False
    #: The families whose weighted problem (a :class:`Problem` with ``sample_weight``: the data
    #: term ``sum_i w_i loss(y_i, f_i)``) it minimises, with a certificate valid for it; a
    #: weighted problem of any other family is refused (:meth:`check_problem`).
    weighted_families: ClassVar[frozenset[str]] = frozenset()

    def parts(self) -> dict[str, object]:
        """Its parts by role (the problem's loss is added at solve time)."""
        return {}

    def solves(self, family: Family) -> bool:
        """Whether it minimises ``family``: by name, one of :attr:`families`.  A solver that reads
        only a family's structure (its forms of objective and dual) accepts the families of that
        structure a plugin registers (kind ``family``)."""
        return family.name in self.families

    def check_problem(self, problem: Problem, *, registry: Registry | None = None) -> None:
        """Raise :class:`IncompatiblePartsError` unless this solver can solve ``problem``
        (``registry``: as :meth:`solve`'s)."""
        if not self.solves(problem.family):
            raise IncompatiblePartsError(
                f"solver {self.name!r} does not solve family {problem.family.name!r}; "
                f"it solves {', '.join(sorted(self.families))}"
            )
        if isinstance(problem.K, FactorKernels) and not (self.reads_kernel_factors or self.reads_kernel_rows):
            raise IncompatiblePartsError(
                f"solver {self.name!r} needs the kernel stack in memory, not kernel factors; "
                "compute the stack (kernelfuse.kernels.functions.compute_kernels), or use a solver that reads "
                "factors (obscure, pegasos-mkl, spicymkl)"
            )
        if isinstance(problem.K, KernelRows) and not self.reads_kernel_rows \
                and not isinstance(problem.K, FactorKernels):
            raise IncompatiblePartsError(
                f"solver {self.name!r} needs the kernel stack in memory, not kernel rows on demand; "
                "compute the stack (kernelfuse.kernels.functions.compute_kernels), or use a solver that reads "
                "rows (obscure, pegasos-mkl)"
            )
        if not self.reads_device_arrays and is_device_array(problem.K):
            raise IncompatiblePartsError(
                f"solver {self.name!r} reads the kernel stack as a NumPy array; a stack of "
                f"{type(problem.K).__module__.split('.')[0]} is read on its device by spicymkl only: "
                "use solver='spicymkl', or pass a NumPy stack")
        if problem.sample_weight is not None:
            check_weighted(self, problem.family.name, registry=registry)
        check_requirements({**self.parts(), "loss": problem.loss}, self.requires, self.name)

    def certified_tol(self) -> float:
        """The relative gap its ``converged`` promises (OBJECTIVES.md units): its ``tol``."""
        return float(getattr(self, "tol", 0.0))

    def _checked_status(self, gap: float, objective: float, n_samples: int, message: str) -> tuple[str, str]:
        """``converged`` stays so only where the gap of the returned model, scored in the problem's
        units, is at most :meth:`certified_tol` (up to :func:`roundoff`): a run certifies on its own
        accounting, in its own units (a rescaled copy), which rounding can part from the score (a
        hinge residual of 1e-16 weighs 1e4 at C = 1e20), and ``max(1, |P|)`` is not scale invariant."""
        bound = self.certified_tol() + roundoff(objective, n_samples) / max(1.0, abs(objective))
        if gap <= bound * (1.0 + 1e-6):
            return "converged", message
        found = (f"gap in the problem's units is {gap:.3g}, above tol={self.certified_tol():g}"
                 if math.isfinite(gap) else "score has no lower bound (no certified gap)")
        return "stalled", (f"the run certified its gap on its own accounting, but the returned "
                           f"model's {found}" + (f"; {message}" if message else ""))

    def rescaled(self, scale: float) -> Solver:
        """This solver for the problem on ``K / scale`` (:mod:`kernelfuse.problem.scaling`): a
        model of the problem it holds (a warm start) in those units, ``coef' = scale coef``;
        itself where it holds none."""
        return self

    @abstractmethod
    def run(self, problem: Problem, history: History) -> Model:
        """Minimise the family objective; record iterations in ``history``."""

    def solve(
        self, problem: Problem, callback: Callable[[Iteration], object] | None = None,
        *, registry: Registry | None = None,
    ) -> Result:
        """Check, run, and report the objective evaluated at the returned model.

        Kernels and real targets far from unit scale are handed to :meth:`run` rescaled to it
        (:mod:`kernelfuse.problem.scaling`), the model mapped back.  A computation
        failing inside :meth:`run` (a singular system, a
        floating-point error) becomes a :class:`SolverError` naming the
        solver, and so does running out of memory (naming the allocation,
        :func:`kernelfuse.runtime.memory.out_of_memory`); a model whose objective is
        not finite is returned with status ``diverged``.  A ``converged`` run whose model, scored
        in the problem's units, has a gap above :meth:`certified_tol` is ``stalled``.  A
        ``completed`` run (a two-stage or fixed-weight method) whose certified gap, in the
        problem's units, is at most the solver's ``tol`` is ``converged``: its weights are then an
        optimum of the family, up to ``tol``.
        Any status but ``converged`` and ``completed`` warns (:class:`ConvergenceWarning`).
        ``registry``: where a refusal of sample weights finds the solvers that take them
        (None: the installed plugins).
        """
        self.check_problem(problem, registry=registry)
        logger.info("solver %r on %s: N = %d, M = %d: started", self.name, problem.family.name,
                    problem.n_samples, problem.n_kernels)
        try:
            units = unit_scale(problem)  # a copy of the stack where it rescales
            inner = problem if units is None else units.problem
            far_off = far_off_C(problem, inner)
            if far_off is not None:
                warnings.warn(far_off, stacklevel=2)
            # a warm start's coef in the solve's units (its intercept stays in the caller's: a start)
            solver = self if units is None else self.rescaled(units.scale / units.target_scale)
            history = History(callback, 1.0 if units is None else units.objective_factor)
            if self.blas_threads is None:
                model = solver.run(inner, history)
            else:
                with blas_threads(self.blas_threads):
                    model = solver.run(inner, history)
        except NUMERICAL_ERRORS as exc:
            raise SolverError(
                f"solver {self.name!r} failed numerically with no model to return: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        except MemoryError as exc:
            raise out_of_memory(exc, f"solver {self.name!r}") from exc
        elapsed = history.elapsed()
        if units is not None:  # back to the problem's units
            model = attrs.evolve(model, coef=np.asarray(model.coef) * (units.target_scale / units.scale),
                                 intercept=units.target_scale * model.intercept,
                                 dual_objective=units.objective_factor * model.dual_objective)
        with np.errstate(all="ignore"):  # a diverged model overflows: reported below, not twice
            objective, weights, shares = objectives.score(problem, model.coef, model.intercept, model.kernel_weights)
        status, message = model.status, model.message
        gap = relative_gap(objective, float(model.dual_objective))
        if status == "converged":
            status, message = self._checked_status(gap, objective, problem.n_samples, message)
        if status == "completed" and gap <= self.certified_tol():
            status = "converged"
        if not (math.isfinite(objective) and np.isfinite(model.coef).all()):
            status, message = "diverged", (
                f"the objective at the returned model is {objective} "
                f"(the run ended with {model.status!r}{': ' + model.message if model.message else ''})"
            )
        if status == "completed":  # fixed weights, then one SVM: the gap measures, it does not stop
            logger.info("solver %r: completed (fixed kernel weights), %.2fs: objective %.10g; "
                        "gap %.3g to the family's optimum, for information", self.name, elapsed, objective, gap)
        else:
            logger.info("solver %r: %s after %d iterations, %.2fs: objective %.10g, gap %.3g",
                        self.name, status, int(model.n_iter), elapsed, objective, gap)
        if status not in (*FINISHED_STATUSES, "interrupted"):  # the caller asked for an interrupt
            warnings.warn(
                f"solver {self.name!r} stopped with status {status!r}"
                + (f": {message}" if message else ""),
                errors.ConvergenceWarning, stacklevel=2,
            )
        return Result(
            coef=np.asarray(model.coef, dtype=float),
            intercept=float(model.intercept),
            kernel_weights=weights,
            objective=objective,
            dual_objective=float(model.dual_objective),
            gap=gap,
            n_iter=int(model.n_iter),
            time=elapsed,
            status=status,
            solver=self.name,
            family=problem.family.name,
            history=tuple(history.rows),
            message=message,
            norm_shares=shares,
            loss=problem.loss.name,
        )


def check_weighted(solver: Solver, family: str, given: str = "sample_weight", *,
                   registry: Registry | None = None) -> None:
    """A :class:`~kernelfuse.errors.ValidationError` naming ``given`` (the parameter that made the
    problem weighted), the solver and the solvers of ``registry`` that take weights (None: the
    installed plugins), unless ``solver`` declares ``family`` in its ``weighted_families``."""
    if family in solver.weighted_families:
        return
    takers = weighted_solvers(family, resolve_registry(registry))
    raise errors.ValidationError(
        f"{given}: solver {solver.name!r} does not take sample weights for family {family!r}; "
        + (f"the solvers that do: {', '.join(takers)}" if takers
           else "no registered solver takes them for this family")
        + f" (or leave {given}=None)")


def weighted_solvers(family: str, registry: Registry) -> list[str]:
    """The solvers of ``registry`` whose ``weighted_families`` (their built solver's) hold ``family``."""
    takers = []
    for name in registry.names("recipe"):
        with contextlib.suppress(errors.KernelfuseError):  # a recipe that needs parameters to build
            if family in registry.get("recipe", name).factory.build(registry).weighted_families:
                takers.append(name)
    return takers


def solver_parameters(factory: Callable[..., Any]) -> set[str]:
    """The keyword parameters a solver (or loss) factory accepts."""
    if attrs.has(factory):  # type: ignore[arg-type]
        return {f.alias or f.name for f in attrs.fields(factory) if f.init}
    import inspect

    return {
        name for name, p in inspect.signature(factory).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }
