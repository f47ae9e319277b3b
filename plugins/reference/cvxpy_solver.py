"""The exact reference solver: every family of OBJECTIVES.md as one cone program (cvxpy, Clarabel).

PSD kernels enter through factors ``K_m = L_m L_m'`` (so ``||f_m|| = ||u_m||``, a second-order
cone), each family's regulariser writes its own cvxpy expression of the norm epigraphs, and the
losses their ``cvxpy_sum``; ``mikl`` optimises ``coef`` itself and ``mlmkl_*`` add the weights ``d``.
The multipliers of ``z = f`` are the dual point of the family's certified lower bound
(:mod:`kernelfuse.plugins.reference.certificate`), valid whatever Clarabel's accuracy.
The formulations in full: docs/reliability.md, "The exact reference".
"""

from __future__ import annotations

import math
import multiprocessing
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.result import History, relative_gap, roundoff
from kernelfuse.assembly.solver import Model, Requirements, Solver
from kernelfuse.errors import SolverError
from kernelfuse.plugins.reference.certificate import lower_bound
from kernelfuse.problem import objectives
from kernelfuse.problem.families import FAMILIES, Family
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import flag, positive, positive_count, seconds

#: (gap, feasibility) tolerances of the successive Clarabel attempts, in units of ``tol``.
TOLERANCE_LADDER: tuple[tuple[float, float], ...] = (
    (1, 1), (1e-2, 1e-2), (1, 10), (10, 100), (100, 100),
)

#: cvxpy statuses with a usable solution.
_OPTIMAL = "optimal"
_INACCURATE = "optimal_inaccurate"


# --------------------------------------------------------------------------- factors


@attrs.frozen(eq=False)
class Factor:
    """``K_m = L L'`` on its numerical range; ``back`` maps ``u`` to ``c`` (``c = back @ u``)."""

    L: np.ndarray  # (N, r)
    back: np.ndarray  # (N, r): V diag(lam^-1/2)

    @property
    def rank(self) -> int:
        return int(self.L.shape[1])


def factor_kernel(K: np.ndarray, rank_tol: float) -> Factor:
    """Eigen-factor a symmetric PSD kernel, dropping eigenvalues below ``rank_tol * max``."""
    lam, V = np.linalg.eigh(0.5 * (K + K.T))
    top = float(lam[-1]) if lam.size else 0.0
    keep = lam > rank_tol * top if top > 0 else np.zeros(lam.shape, dtype=bool)
    lam, V = lam[keep], V[:, keep]
    root = np.sqrt(lam)
    return Factor(L=V * root, back=V / root)


class Expansions:
    """One cvxpy variable ``u_m`` per kernel (with rank > 0), and what follows from them.

    ``n_out`` None: ``u_m`` of shape ``(r_m,)`` and ``f`` of shape ``(N,)``;
    else ``(r_m, n_out)`` and ``(N, n_out)``.
    """

    def __init__(self, factors: Sequence[Factor], n_samples: int, n_out: int | None) -> None:
        import cvxpy as cp

        self.factors = list(factors)
        self.n_samples = n_samples
        self.n_out = n_out
        self.u = [
            None if fac.rank == 0
            else cp.Variable((fac.rank,) if n_out is None else (fac.rank, n_out))
            for fac in self.factors
        ]

    @property
    def active(self) -> list[int]:
        return [m for m, u in enumerate(self.u) if u is not None]

    def decision(self) -> Any:
        """``f = sum_m L_m u_m`` (no intercept)."""
        import cvxpy as cp

        terms = [self.factors[m].L @ self.u[m] for m in self.active]
        if not terms:
            shape = (self.n_samples,) if self.n_out is None else (self.n_samples, self.n_out)
            return cp.Constant(np.zeros(shape))
        return terms[0] if len(terms) == 1 else cp.sum(terms)

    def norm_epigraph(self) -> tuple[Any, list[Any]]:
        """``t`` of shape (M,) with ``t_m >= ||u_m||`` (Frobenius); 0 for empty kernels."""
        import cvxpy as cp

        t = cp.Variable(len(self.u), nonneg=True)
        constraints = []
        for m, u in enumerate(self.u):
            constraints.append(t[m] == 0 if u is None else cp.SOC(t[m], cp.vec(u, order="F")))
        return t, constraints

    def coef(self, zero: np.ndarray | None = None) -> np.ndarray:
        """``c_m = back_m u_m``: (M, N) or (M, n_out, N); kernels flagged in ``zero`` get 0."""
        shape = (self.n_samples,) if self.n_out is None else (self.n_out, self.n_samples)
        coef = np.zeros((len(self.u), *shape))
        for m in self.active:
            if zero is not None and zero[m]:
                continue
            c = self.factors[m].back @ np.asarray(self.u[m].value, dtype=float)  # type: ignore[union-attr]
            coef[m] = c if self.n_out is None else c.T
        return coef


# --------------------------------------------------------------------------- formulations


@attrs.frozen(eq=False)
class Formulation:
    """A family as a cone program: objective, constraints, and the model from the solution."""

    objective: Any
    constraints: list[Any]
    #: Returns ``(coef, intercept, kernel_weights)`` once the program is solved.
    recover: Callable[[], tuple[np.ndarray, float, np.ndarray | None]]
    #: Given the factor the program's objective was divided by, returns the dual point ``u`` of
    #: :func:`kernelfuse.plugins.reference.certificate.lower_bound` (the multipliers of ``z = f``
    #: in the loss's units).
    dual_point: Callable[[float], np.ndarray]


def decision_variable(decision: Any) -> tuple[Any, Any]:
    """``z`` with the constraint ``z == decision``: the loss reads ``z``, and the constraint's
    multiplier is ``-dloss(z)`` (times the loss's weight in the objective), the dual point."""
    import cvxpy as cp

    z = cp.Variable(decision.shape)
    return z, z == decision


def multiplier(constraint: Any, weight: float = 1.0) -> Callable[[float], np.ndarray]:
    """``-scale * dual / weight`` of ``z == decision`` once solved: ``dloss(z)`` in the loss's
    units, for an objective divided by ``scale`` in which the loss has the factor ``weight``."""
    return lambda scale: -scale * np.asarray(constraint.dual_value, dtype=float) / weight


def _factors(problem: Problem, rank_tol: float) -> list[Factor]:
    return [factor_kernel(np.asarray(K, dtype=np.float64), rank_tol) for K in problem.K]


def _norm_regularised(problem: Problem, rank_tol: float) -> Formulation:
    """``l1_mkl``, ``l1_mkl_sq``, ``vskl``, ``pnorm_mkl``: min ``w sum_i loss(y_i, sum_m L_m u_m (+ b))
    + Omega(t)`` with ``t_m >= ||u_m||_F`` (SOC; ``u_m`` of shape (r_m, n_classes) for
    Crammer-Singer), ``w`` the family's loss weight and ``Omega(t)`` its regulariser's cvxpy
    expression (nondecreasing in ``t >= 0``, so ``t_m = ||u_m||`` at the optimum)."""
    import cvxpy as cp

    exp = Expansions(
        _factors(problem, rank_tol), problem.n_samples,
        None if len(problem.coef_shape) == 2 else problem.n_outputs,
    )
    t, cons = exp.norm_epigraph()
    reg, reg_cons = problem.regularizer.expression(t)
    b = cp.Variable() if problem.family.has_intercept else None
    z, link = decision_variable(exp.decision() if b is None else exp.decision() + b)
    loss, loss_cons = problem.loss.cvxpy_sum(problem.y, z)
    weight = problem.family.loss_weight(problem.params, problem.n_samples)
    return Formulation(
        reg + weight * loss, [*cons, *reg_cons, *loss_cons, link],
        lambda: (exp.coef(), 0.0 if b is None else float(b.value), None),  # type: ignore[arg-type]  # solved: b.value set
        multiplier(link, weight),
    )


def _coef_regularised(problem: Problem, rank_tol: float) -> Formulation:
    """``mikl``: min ``w sum_i sqhinge(y_i, f_i) + (lam/q) ||alpha||_{pq;r}^q`` over ``alpha = coef.T``
    directly (kernels may be indefinite and non-symmetric, so no factor),
    ``f = sum_t K[t]' coef[t]``, the penalty the regulariser's cvxpy expression."""
    import cvxpy as cp

    coef = cp.Variable((problem.n_kernels, problem.n_samples))
    f = cp.sum([np.asarray(problem.K[m], dtype=np.float64).T @ coef[m] for m in range(problem.n_kernels)])
    penalty, cons = problem.regularizer.expression(coef.T)
    z, link = decision_variable(f)
    loss, loss_cons = problem.loss.cvxpy_sum(problem.y, z)
    weight = problem.family.loss_weight(problem.params, problem.n_samples)
    return Formulation(
        weight * loss + penalty, [*cons, *loss_cons, link],
        lambda: (np.asarray(coef.value, dtype=float), 0.0, None), multiplier(link, weight),
    )


def _mlmkl(problem: Problem, rank_tol: float) -> Formulation:
    """``mlmkl_sum`` / ``mlmkl_max``: the jointly convex primal in ``(d, u)``:
    ``P_k = 0.5 sum_m s_mk + C sum_i hinge(Y_ik, sum_m (L_m u_m)_ik)`` with
    ``s_mk >= ||u_mk||^2 / d_m`` as the SOC ``||(2 u_mk, s_mk - d_m)|| <= s_mk + d_m``,
    ``d >= 0``, ``sum(d) = 1``; minimise ``sum_k P_k`` (sum) or ``z >= P_k`` (max).
    ``min_f P_k(d, f) = SVM_k(d)`` by SVM duality, so this is ``min_d sum_k SVM_k(d)``
    (``max_k``).  Returned ``d`` is the solver's, clipped at 0 and renormalised;
    a kernel whose weight clips to 0 gets ``coef = 0``."""
    import cvxpy as cp

    n_labels = problem.n_outputs
    exp = Expansions(_factors(problem, rank_tol), problem.n_samples, n_labels)
    d = cp.Variable(problem.n_kernels, nonneg=True)
    s = cp.Variable((problem.n_kernels, n_labels), nonneg=True)
    cons: list[Any] = [cp.sum(d) == 1]
    for m, u in enumerate(exp.u):
        if u is None:
            cons.append(s[m] == 0)
            continue
        rows = cp.vstack([2 * u, cp.reshape(s[m] - d[m], (1, n_labels), order="C")])
        cons.append(cp.SOC(s[m] + d[m], rows, axis=0))
    C = problem.params["C"]
    z, link = decision_variable(exp.decision())
    terms = []
    for k in range(n_labels):
        hinge, hinge_cons = problem.loss.cvxpy_sum(problem.y[:, k], z[:, k])
        terms.append(0.5 * cp.sum(s[:, k]) + C * hinge)
        cons += hinge_cons
    cons.append(link)
    if problem.family.label_aggregate == "sum":
        objective, dual_point = cp.sum(cp.hstack(terms)), multiplier(link, C)
    else:  # the worst label through its epigraph, whose multipliers are the label weights
        objective = cp.Variable()
        epigraph = objective >= cp.hstack(terms)
        cons.append(epigraph)

        def dual_point(scale: float) -> np.ndarray:
            """Each label's multipliers over its weight; 0 (a feasible point) for labels of
            weight 0, which the bound's own label weights then leave out."""
            gamma = np.asarray(epigraph.dual_value, dtype=float)
            weighted = -np.asarray(link.dual_value, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                u = weighted / (C * gamma)
            return np.where(np.isfinite(u) & (gamma > 0), u, 0.0)

    def recover() -> tuple[np.ndarray, float, np.ndarray]:
        weights = np.maximum(np.asarray(d.value, dtype=float), 0.0)
        weights /= weights.sum()
        return exp.coef(zero=weights == 0.0), 0.0, weights

    return Formulation(objective, cons, recover, dual_point)


#: The cone program of each form of objective (a family is formulated by the form it holds).
_FORMULATIONS: dict[Callable[..., float], Callable[[Problem, float], Formulation]] = {
    objectives.norm_penalised: _norm_regularised,
    objectives.coef_penalised: _coef_regularised,
    objectives.mlmkl_sum: _mlmkl,
    objectives.mlmkl_max: _mlmkl,
}


def formulate(problem: Problem, rank_tol: float = 1e-11) -> Formulation:
    """The cone program of ``problem``'s family (cvxpy objects, not yet solved)."""
    return _FORMULATIONS[problem.family.objective](problem, rank_tol)


# --------------------------------------------------------------------------- solver


def objective_scale(problem: Problem) -> float:
    """``max(1, P(0))``: the family objective at the zero model (uniform weights).

    The cone program's objective is divided by it, so that Clarabel works on
    numbers of order one whatever C and N are: at C = 1000 with unit-trace
    kernels the unscaled objective is about 1e4-1e5 and Clarabel ended in
    NumericalError on problems the scaled program solves.
    """
    d = np.full(problem.n_kernels, 1.0 / problem.n_kernels)
    zero = objectives.evaluate(problem, np.zeros(problem.coef_shape), 0.0,
                               d if problem.family.target == "multilabel" else None)
    return max(1.0, abs(zero))



@attrs.frozen(eq=False)
class ReferenceSolution:
    """One solve: the model, its objective recomputed by core, cvxpy's value, the certified gap."""

    model: Model
    #: :func:`kernelfuse.problem.objectives.evaluate` at the model.
    objective: float
    #: cvxpy's optimal value of the cone program (the solver's own number).
    cvxpy_value: float
    #: ``(objective - model.dual_objective) / max(1, |objective|)``, the certified interval's.
    gap: float
    #: Seconds inside Clarabel, summed over the attempts (the rest is cvxpy's compilation).
    conic_seconds: float = 0.0


@attrs.frozen(eq=False)
class _Progress:
    """The tolerance ladder's state: the best solution so far, every attempt's line, and whether
    the time limit ended it."""

    best: ReferenceSolution | None = None
    attempts: tuple[str, ...] = ()
    out_of_time: bool = False


def zero_solution(problem: Problem) -> ReferenceSolution:
    """The zero model (uniform kernel weights for the multilabel families), without a lower
    bound: what the time limit leaves when it ends the run before any attempt's model."""
    weights = (np.full(problem.n_kernels, 1.0 / problem.n_kernels)
               if problem.family.target == "multilabel" else None)
    coef = np.zeros(problem.coef_shape)
    objective = objectives.evaluate(problem, coef, 0.0, weights)
    model = Model(coef=coef, kernel_weights=weights, dual_objective=-math.inf, status="time_limit")
    return ReferenceSolution(model=model, objective=objective, cvxpy_value=math.nan, gap=math.inf)


def can_fork() -> bool:
    """Whether this process can fork a child: not on Windows, not inside a daemonic
    process (a ``multiprocessing.Pool`` worker may not have children)."""
    return ("fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon)


def _in_child(attempts: Callable[[], Iterator[_Progress]], elapsed: Callable[[], float],
              deadline: float) -> _Progress:
    """Run ``attempts()`` in a forked child process and return the last state it reported
    before it ended or ``elapsed()`` reached ``deadline`` (then the child is killed, and the
    state says ``out_of_time``).  An exception in the child is raised here."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def report() -> None:
        try:
            for state in attempts():
                sender.send(state)
            sender.send(None)
        except BaseException as exc:  # noqa: BLE001  (the parent raises it)
            try:
                sender.send(exc)
            except (pickle.PicklingError, TypeError, AttributeError):  # it does not pickle: its text
                sender.send(SolverError(f"the cvxpy reference failed: {exc!r}"))

    child = context.Process(target=report, name="kernelfuse-cvxpy", daemon=True)
    progress = _Progress()
    try:
        child.start()
        sender.close()
        while True:
            wait = deadline - elapsed()
            if wait <= 0 or not receiver.poll(wait):
                return attrs.evolve(progress, out_of_time=True)
            try:
                message = receiver.recv()
            except EOFError:
                child.join(1.0)
                raise SolverError(
                    f"the cvxpy reference's process ended (exit code {child.exitcode}) "
                    "before its answer (out of memory?)") from None
            if message is None:
                return progress
            if isinstance(message, BaseException):
                raise message
            progress = message
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()


@attrs.define
class CvxpyReference(Solver):
    """Exact reference: each family as a cone program solved by cvxpy + Clarabel (small problems).

    Formulations, in OBJECTIVES.md units (``K_m = L_m L_m'``, ``u_m = L_m' c_m``,
    ``t_m >= ||u_m||`` second-order cones; see the module docstring):

    * ``l1_mkl``: ``sum_i loss_i + C sum_m t_m (+ C2/2 sum_m ||u_m||^2)``, any loss
      with ``cvxpy_sum`` (hinge, squared hinge, logistic via exponential cones,
      squared, epsilon-insensitive), intercept free.
    * ``l1_mkl_sq``: ``0.5 w^2 + C sum_i hinge_i``, ``w >= sum_m t_m``.
    * ``vskl``: ``0.5 w^2 + C sum_i hinge_i``, ``w >= ||(sum_{k in j} t_k)_j||_{2q}``
      (SOC for q = 1, max for q = inf, exact power cones otherwise).
    * ``pnorm_mkl``: ``lam/2 w^2 + (1/N) sum_i loss_i``, ``w >= ||t||_p`` (exact power
      cones), ``t_m >= ||U_m||_F`` with one column per class for Crammer-Singer.
    * ``mikl``: over ``coef`` itself (indefinite, non-symmetric kernels):
      ``sum_i sqhinge_i + lam/q sum_g h_g^q``, ``h_g >= ||alpha_g||_p``.
    * ``mlmkl_sum`` / ``mlmkl_max``: jointly over ``d`` in the simplex and ``u``,
      ``P_k = 0.5 sum_m ||u_mk||^2 / d_m + C sum_i hinge_ik`` (rotated SOCs),
      summed or maximised over labels.

    Clarabel runs with gap and feasibility tolerances ``tol``, at most
    ``max_iter`` iterations and, over all attempts, the time left of ``time_limit`` seconds
    (an attempt cut short by it ends the ladder: the best interval so far is returned with
    status ``time_limit``).  With a finite ``time_limit`` the whole call (formulation and
    cvxpy's compilation included) runs in a forked process, killed 5% of the limit
    (``max(0.1 time_limit, 1 s)``) past the limit: the best interval it reported by then is
    returned, or the zero model (status ``time_limit``, no lower bound) if it had none.  Each
    attempt gives an upper bound, the
    objective at its model (exact, :func:`kernelfuse.problem.objectives.evaluate`), and a lower bound,
    the family's dual value at its multipliers
    (:func:`~kernelfuse.plugins.reference.certificate.lower_bound`); the run keeps the best
    model and the largest lower bound.  While the interval's relative gap
    ``(objective - dual_objective) / max(1, |objective|)`` exceeds ``1000 * tol`` the
    canonicalised program is re-solved with the tolerances of :data:`TOLERANCE_LADDER`
    (multiples of ``tol``: tighter first, then looser, since power cones and some
    degenerate programs stall near a feasibility of 1e-9 on a poor last iterate).  The first
    certified interval is returned with status ``converged`` and stated in the message; a
    lower bound above the objective by :func:`~kernelfuse.assembly.result.roundoff` at most is the interval
    ``[objective, dual_objective]`` (a negative gap, stated), beyond it an invalid
    certificate (``numerical_failure``, at once).  If no attempt certifies, the best
    interval is returned with status ``numerical_failure`` and a message listing every
    attempt; if no attempt produced a model (infeasible, iteration limit, numerical error) and
    the time limit did not end them, :class:`~kernelfuse.errors.SolverError` is raised.  ``n_iter`` counts Clarabel's
    interior-point iterations; the history has one row.
    """

    tol: float = positive.field(1e-9)
    max_iter: int = positive_count.field(500)
    verbose: bool = flag.field(False)
    rank_tol: float = positive.field(1e-11)
    time_limit: float = seconds.field(math.inf)

    name: ClassVar[str] = "cvxpy"
    families: ClassVar[frozenset[str]] = frozenset(
        name for name, family in FAMILIES.items() if family.objective in _FORMULATIONS)
    requires: ClassVar[Requirements] = {"loss": ("cvxpy_sum",)}
    #: With ``sample_weight`` the loss is ``sum_i w_i loss_i`` (a weighted ``cvxpy_sum``); the
    #: certificates of these families read the weighted loss's conjugate domain (``l1_mkl``: its
    #: conjugate; ``l1_mkl_sq``, ``vskl``: the SVM box ``0 <= alpha_i <= C w_i``).  ``pnorm_mkl``'s
    #: and the multi-label families' bounds assume a box of 1 (or ``C``), ``mikl``'s scaling is
    #: the unweighted one: refused there.
    weighted_families: ClassVar[frozenset[str]] = frozenset({"l1_mkl", "l1_mkl_sq", "vskl"})

    def solves(self, family: Family) -> bool:
        """Every family whose form of objective it writes as a cone program: those of OBJECTIVES.md
        and those a plugin registers in these forms (the penalty from the regulariser's
        ``expression``, the certificate from the family's form of dual)."""
        return family.objective in _FORMULATIONS

    def certified_tol(self) -> float:
        """Its ``converged`` certifies the interval at ``1000 * tol`` (Clarabel's ``tol`` is on
        the canonicalised cone program, not the family's objective)."""
        return 1e3 * self.tol

    def clarabel_options(self, gap_tol: float, feas_tol: float,
                         time_limit: float = math.inf) -> dict[str, Any]:
        """Clarabel settings for one attempt (reduced tolerances ``100 *`` these)."""
        return {
            "max_iter": int(self.max_iter), "time_limit": time_limit,
            "tol_gap_abs": gap_tol, "tol_gap_rel": gap_tol, "tol_feas": feas_tol,
            "tol_ktratio": min(1e-6, 100.0 * gap_tol),
            "reduced_tol_gap_abs": 100.0 * gap_tol, "reduced_tol_gap_rel": 100.0 * gap_tol,
            "reduced_tol_feas": 100.0 * feas_tol,
            "reduced_tol_ktratio": min(1e-4, 1e4 * gap_tol),
            # Let cvxpy unpack the iterate of "InsufficientProgress": certified below.
            "accept_unknown": True,
        }

    def run(self, problem: Problem, history: History) -> Model:
        solution = self.solve_program(problem, history.elapsed)
        history.record(solution.objective, solution.model.dual_objective,
                       conic_seconds=solution.conic_seconds)
        return solution.model

    def solve_program(self, problem: Problem,
                      elapsed: Callable[[], float] | None = None) -> ReferenceSolution:
        """Formulate, solve (climbing :data:`TOLERANCE_LADDER`), recover and certify.

        Every attempt gives an upper bound (the objective at its model) and a
        lower bound (:func:`~kernelfuse.plugins.reference.certificate.lower_bound`
        at its multipliers); the interval is the best of each over the attempts,
        and the ladder stops once it is :func:`certified`.  ``elapsed`` is the
        run's clock (seconds since it began) that ``time_limit`` applies to; by
        default the clock starts here.  With a finite ``time_limit`` (and
        :func:`can_fork`), the whole of it runs in a child process (:func:`_in_child`), so
        that the formulation and cvxpy's compilation, which Clarabel's clock does not
        cover, are stopped at the limit too.
        """
        start = time.perf_counter()  # the first call of a process imports cvxpy (0.3 s): on the clock
        import cvxpy  # noqa: F401  (here, not in each child)

        clock = elapsed or (lambda: time.perf_counter() - start)
        if math.isfinite(self.time_limit) and can_fork():
            grace = 0.05 * self.time_limit  # an attempt ending at the limit still reports; within 10%
            progress = _in_child(lambda: self._attempts(problem, clock), clock,
                                 self.time_limit + grace)
        else:
            progress = _Progress()
            for progress in self._attempts(problem, clock):  # noqa: B007 (the last state is the result)
                pass
        return self._finish(problem, progress)

    def _attempts(self, problem: Problem, elapsed: Callable[[], float]) -> Iterator[_Progress]:
        """The ladder's state after each Clarabel attempt (the best interval so far)."""
        import warnings

        import cvxpy as cp

        form = formulate(problem, self.rank_tol)
        scale = objective_scale(problem)
        program = cp.Problem(cp.Minimize(form.objective / scale), form.constraints)
        data, chain, inverse = program.get_problem_data(
            cp.CLARABEL, solver_opts=self.clarabel_options(self.tol, self.tol)
        )
        best: ReferenceSolution | None = None
        lower = -math.inf
        attempts: list[str] = []
        n_iter, seconds, out_of_time = 0, 0.0, False
        for gap_factor, feas_factor in TOLERANCE_LADDER:
            remaining = self.time_limit - elapsed()
            if out_of_time or remaining <= 0:  # the last attempt ended on the limit, or no time left
                yield _Progress(best, tuple(attempts), True)
                return
            gap_tol, feas_tol = gap_factor * self.tol, feas_factor * self.tol
            options = self.clarabel_options(gap_tol, feas_tol, remaining)
            try:
                raw = chain.solver.solve_via_data(data, False, self.verbose, options)
            except MemoryError:  # not a failed attempt: Solver.solve names it
                raise
            except Exception as exc:  # Clarabel raises on internal numerical failures
                attempts.append(f"Clarabel raised {exc!r} (tol {gap_tol:g}/{feas_tol:g})")
                yield _Progress(best, tuple(attempts))
                continue
            n_iter += int(raw.iterations)
            seconds += float(raw.solve_time)
            out_of_time = str(raw.status) == "MaxTime"
            label = (f"Clarabel {raw.status} after {raw.iterations} iterations "
                     f"(gap tol {gap_tol:g}, feasibility tol {feas_tol:g})")
            try:
                with warnings.catch_warnings():  # "may be inaccurate": certified below
                    warnings.simplefilter("ignore", UserWarning)
                    program.unpack_results(raw, chain, inverse)
            except cp.error.SolverError:
                attempts.append(label + ": no solution")
                yield _Progress(best, tuple(attempts), out_of_time)
                continue
            if program.status not in (_OPTIMAL, _INACCURATE) or program.value is None:
                attempts.append(label + f": cvxpy status {program.status}")
                yield _Progress(best, tuple(attempts), out_of_time)
                continue
            coef, intercept, weights = form.recover()
            objective = objectives.evaluate(problem, coef, intercept, weights)
            lower = max(lower, lower_bound(problem, form.dual_point(scale)))
            if best is None or objective < best.objective:
                best = ReferenceSolution(
                    model=Model(coef=coef, intercept=intercept, kernel_weights=weights),
                    objective=objective, cvxpy_value=float(program.value) * scale, gap=math.nan,
                )
            best = self._certify(problem, best, lower, n_iter, seconds)
            attempts.append(f"{label}: {best.model.message}")
            yield _Progress(best, tuple(attempts), out_of_time)
            if best.model.status == "converged" or "invalid" in best.model.message:
                return

    def _finish(self, problem: Problem, progress: _Progress) -> ReferenceSolution:
        """The ladder's result: the certified interval (``converged``), else the best interval
        with the status that ended the ladder; without any model, the zero model at the time
        limit, else :class:`~kernelfuse.errors.SolverError`."""
        best, attempts = progress.best, list(progress.attempts)
        if best is None and progress.out_of_time:
            best = zero_solution(problem)
        if best is None:
            raise SolverError(
                f"cvxpy/Clarabel did not solve family {problem.family.name}: "
                + " | ".join(attempts)
                + (" (raise max_iter)" if any("MaxIterations" in a for a in attempts) else "")
            )
        if best.model.status == "converged":
            return best
        if progress.out_of_time:
            message = f"the time limit of {self.time_limit:g} s ended the attempts" + (
                "; returning the best interval." if progress.best is not None
                else " before any model; returning the zero model.")
        else:
            message = "no attempt certified; returning the best interval."
        message = " ".join([message, " | ".join(attempts)]).strip()
        status = "time_limit" if progress.out_of_time else "numerical_failure"
        return attrs.evolve(best, model=attrs.evolve(best.model, message=message, status=status))

    def _certify(self, problem: Problem, best: ReferenceSolution, lower: float, n_iter: int,
                 seconds: float) -> ReferenceSolution:
        """``best`` with the lower bound ``lower``: ``converged`` when :func:`certified`
        at ``1000 * tol`` (the message then states the interval, and any round-off)."""
        verdict, message = certified(best.objective, lower, self.certified_tol(), problem.n_samples)
        model = attrs.evolve(best.model, dual_objective=lower, n_iter=n_iter, message=message,
                             status="converged" if verdict else "numerical_failure")
        return attrs.evolve(best, model=model, gap=relative_gap(best.objective, lower),
                            conic_seconds=seconds)


def certified(upper: float, lower: float, tol: float, n_samples: int) -> tuple[bool, str]:
    """Whether ``[lower, upper]`` certifies the optimum to the relative gap ``tol``, and why.

    ``lower > upper`` within :func:`~kernelfuse.assembly.result.roundoff` is the interval ``[upper, lower]``
    (the message states by how much); beyond it the lower bound is invalid.
    """
    scale = max(1.0, abs(upper))
    gap = (upper - lower) / scale
    slack = roundoff(upper, n_samples) / scale
    interval = f"certified interval [{min(lower, upper):.12g}, {max(lower, upper):.12g}]"
    if not math.isfinite(gap):
        return False, f"no finite lower bound (upper bound {upper:.12g})"
    if gap < -slack:
        return False, (f"invalid certificate: the lower bound {lower:.12g} exceeds the objective "
                       f"{upper:.12g} by {-gap:.3g} (relative), more than round-off ({slack:.3g})")
    if gap > tol:
        return False, f"{interval}: relative gap {gap:.3g} exceeds {tol:.3g}"
    if gap < 0:
        return True, f"{interval} (lower bound above the objective by round-off, {-gap:.3g})"
    return True, f"{interval}, relative gap {gap:.3g}"
