"""SpicyMKL's inner oracle: Newton's method on the smoothed dual ``phi_gamma(rho)`` (eqs. 7-9, 12).

At a :class:`~kernelfuse.plugins.spicymkl.proximal_point.ProximalPoint` it solves the proximal
step of ``l1_mkl`` (OBJECTIVES.md family 1) through its dual ``min_rho phi(rho)``, whose gradient
is ``D'(rho) - f^+`` (``f^+`` the next model's decision values): Newton with the exact line
search of section 3.4 until the primal residual is below ``newton_tol``.  The kernel terms are in
:mod:`.active_kernels`, the loss's share in :mod:`.dual_loss_terms`, the Newton system's solve
(dense, or Woodbury from kernel factors) in :mod:`.newton_system`.  Newton runs on a working set
of kernels, checked at the end of each solve through the bounds of :mod:`.kernel_norm_bounds` so
that the step is exact (not in the paper).  The answer: the proximal point as the model, the
Moreau envelope's value and gradient, and the certified bound of :mod:`kernelfuse.problem.duality`.
``warm_start`` (a result of the same problem at another ``C`` or ``C2``) starts the centre at its
model and the dual at ``loss'(f)`` there (:meth:`SmoothedDualNewton.init`): a regularisation path
solved from ``C_max`` down (section 5.1's start, taken at the previous optimum).
Formulas and measurements: docs/methods/spicymkl.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from kernelfuse.assembly.requirements import check_requirements
from kernelfuse.assembly.result import Result
from kernelfuse.errors import IncompatiblePartsError, ValidationError
from kernelfuse.kernels import array_backend
from kernelfuse.kernels.products import kernel_times, kernels_times
from kernelfuse.parts.oracle import Oracle, OracleAnswer
from kernelfuse.parts.regularizer import SeparablePenalty
from kernelfuse.plugins.spicymkl.active_kernels import KernelTerms
from kernelfuse.plugins.spicymkl.dual_loss_terms import (
    SMOOTH_CONJUGATE,
    ConjugateTerm,
    SlackTerm,
    uses_slack,
)
from kernelfuse.plugins.spicymkl.kernel_norm_bounds import KernelNormBounds, kernel_times_and_frobenius
from kernelfuse.plugins.spicymkl.proximal_point import ProximalPoint
from kernelfuse.problem import objectives
from kernelfuse.problem.duality import feasible_dual_point, separable_dual_value
from kernelfuse.problem.families import Family
from kernelfuse.problem.instance import Problem
from kernelfuse.runtime.deadline import expired
from kernelfuse.validation import below_one, nonnegative, positive, positive_count


@attrs.define
class NewtonState:
    """Warm start and caches carried between queries."""

    problem: Problem
    #: The problem's penalty ``sum_m h(v_m)`` of the kernel norms (``l1_mkl``: ``h(v) = C v + (C2/2) v^2``).
    penalty: SeparablePenalty
    rho: np.ndarray
    #: ``K_m rho`` of the kernels read at ``rho``, bounds on ``||rho||_{K_m}`` for the others.
    bounds: KernelNormBounds
    K_one: np.ndarray | None
    centre: np.ndarray
    K_centre: np.ndarray
    #: Passes over the kernels :meth:`SmoothedDualNewton.init` made, counted in the first answer.
    start_passes: float = 1.0


def _warm_start(value: Any) -> Result | None:
    """``warm_start`` checked: None or a :class:`~kernelfuse.assembly.result.Result` (its fit to
    the problem is checked by :meth:`SmoothedDualNewton.init`)."""
    if value is not None and not isinstance(value, Result):
        raise ValidationError(f"warm_start must be a Result of kernelfuse.solve (a solve of the same "
                              f"problem at another C or C2) or None, got {type(value).__name__}")
    return value


@attrs.define
class SmoothedDualNewton(Oracle):
    """Newton on SpicyMKL's smoothed dual; answers with the proximal point of l1_mkl."""

    name: ClassVar[str] = "smoothed-dual-newton"
    families: ClassVar[frozenset[str]] = frozenset({"l1_mkl"})
    requires: ClassVar[dict[str, tuple[Any, ...]]] = {
        "loss": ("derivative", "conjugate", ("conjugate_prox", "conjugate_second_derivative")),
    }
    reads_kernel_factors: ClassVar[bool] = True
    #: Weighted problems (``sample_weight``): the loss, its conjugate and prox are the weighted
    #: data term's (:class:`~kernelfuse.parts.loss.WeightedLoss`), the certificate with them.
    weighted_families: ClassVar[frozenset[str]] = frozenset({"l1_mkl"})

    def solves(self, family: Family) -> bool:
        """``l1_mkl`` and any family of a penalty ``sum_m h(||f_m||)`` beside any loss (its dual
        ``loss_conjugate``; the regulariser a :class:`~kernelfuse.parts.regularizer.SeparablePenalty`):
        the method of Suzuki & Tomioka (2011) for any such ``h``."""
        return family.dual == "loss_conjugate"
    #: A stack on a device (CuPy, PyTorch) is read there: passes, Hessian and solve.
    reads_device_arrays: ClassVar[bool] = True
    #: Newton stops when the primal residual is below ``max(newton_tol, newton_rtol * initial)``.
    newton_tol: float = positive.field(1e-9)
    newton_rtol: float = below_one.field(1e-2)
    #: Kernels with ``r_m > screen * gamma * h'(0+)`` (``C`` for l1_mkl) when an inner solve starts, and those active
    #: at the centre, form its working set; a check at the end adds kernels that became active
    #: and Newton resumes, until none does (so the result is exact).  0: every kernel.
    screen: float = nonnegative.field(1.0)
    max_newton: int = positive_count.field(50)
    #: A check adds at most ``max(join_min, join_growth * |working set|)`` kernels (the largest
    #: soft-thresholded norms first), reading kernels until it has found that many; inf: every
    #: kernel that became active.  Doubling at most keeps the working sets near the active sets
    #: (measured: docs/methods/spicymkl.md).
    join_growth: float = positive.field(1.0)
    join_min: int = positive_count.field(16)
    #: Levenberg-Marquardt ridge ``ridge * min(1, residual)`` on the Newton system.
    ridge: float = nonnegative.field(1e-2)
    #: The Hessian re-reads ``K_m`` only when its weight ``s_m`` moved by more than this
    #: (relative); 0: the exact Hessian at every step.  See ``KernelTerms.hessian``.  From kernel
    #: factors the Hessian is always exact (no ``N x N`` sum is kept).
    #: Below 1: a kernel leaving the active set (``s_m = 0``) must always be re-read, which
    #: ``|0 - w| > hessian_tol * w`` guarantees only then.
    hessian_tol: float = below_one.field(0.5)
    #: A :class:`~kernelfuse.assembly.result.Result` of the same family, loss, kernels and
    #: targets at another ``C`` or ``C2`` (a regularisation path): the start (:meth:`init`).
    warm_start: Result | None = attrs.field(default=None, converter=_warm_start)

    def rescaled(self, scale: float) -> SmoothedDualNewton:
        """The oracle for the problem on ``K / scale`` (:mod:`kernelfuse.problem.scaling`): its
        warm start's coefficients in those units, ``coef' = scale coef`` (the model unchanged)."""
        if self.warm_start is None:
            return self
        return attrs.evolve(self, warm_start=attrs.evolve(self.warm_start, coef=self.warm_start.coef * scale))

    def init(self, problem: Problem) -> tuple[ProximalPoint, NewtonState]:
        """The start: the centre at zero and the dual at ``loss'(0)`` (section 5.1), or, with
        ``warm_start``, the centre at its model ``(alpha, b)`` and the dual at ``loss'(f)``,
        ``f = sum_m K_m alpha_m + b``, the slack centre (section 3.3) at ``f``.  An optimum at a
        nearby ``C`` is near this one: its active kernels form the first working set, and
        ``loss'(f)``, scaled by the first answer into ``||rho||_{K_m} <= C + C2 ||f_m||``
        (:func:`_within_ball`), starts Newton near the new dual optimum.  ``K_m rho``, ``K_m 1``
        and ``||K_m||_F`` take one pass, and the warm model's products a pass over its active
        kernels."""
        if not uses_slack(problem.loss):
            if problem.sample_weight is not None and not (problem.sample_weight > 0).all():
                raise ValidationError(
                    f"sample_weight: spicymkl with loss {problem.loss.name!r} (Newton on its smooth "
                    "conjugate) needs every weight > 0; drop the samples of weight 0 (the same optimum), "
                    "or use a loss with a conjugate prox (hinge, squared-hinge, eps-insensitive)")
            check_requirements({"loss": problem.loss}, {"loss": SMOOTH_CONJUGATE}, "spicymkl")
        M, N = problem.n_kernels, problem.n_samples
        penalty = problem.regularizer
        if not isinstance(penalty, SeparablePenalty) or not penalty.separable:
            raise IncompatiblePartsError(f"spicymkl needs a penalty sum_m h(||f_m||) of the kernel norms; "
                                         f"family {problem.family.name!r} has {type(penalty).__name__}")
        centre, intercept, K_centre, passes = np.zeros((M, N)), 0.0, np.zeros((M, N)), 1.0
        if self.warm_start is not None:
            centre, intercept = self._checked_start(problem)
            K_centre, fraction = objectives.sparse_kernel_products(problem.K, centre)
            passes += fraction
        f = objectives.decision_values(K_centre, intercept)
        rho = problem.loss.derivative(problem.y, f)
        columns = np.column_stack([rho, np.ones(N)])  # K_m rho, K_m 1 and ||K_m||_F in one pass
        both, frobenius = kernel_times_and_frobenius(problem.K, columns)
        K_one = both[:, :, 1].copy() if problem.family.has_intercept else None
        state = NewtonState(problem, penalty, rho, KernelNormBounds.at(both[:, :, 0], rho, frobenius), K_one,
                            centre, K_centre, passes)
        slack = f if uses_slack(problem.loss) else None
        return ProximalPoint(centre, intercept, slack), state

    def _checked_start(self, problem: Problem) -> tuple[np.ndarray, float]:
        """``warm_start``'s coefficients and intercept, once it is checked to be a model of
        ``problem``'s family and loss on its kernels and examples; a :class:`ValidationError`
        naming ``warm_start`` otherwise (a result without its loss, from a file written before
        results kept it, is taken as of the problem's)."""
        start = self.warm_start
        assert start is not None
        coef = np.asarray(start.coef, dtype=np.float64)
        mismatch = (
            f"family {start.family!r}, not {problem.family.name!r}" if start.family != problem.family.name
            else f"loss {start.loss!r}, not {problem.loss.name!r}"
            if start.loss is not None and start.loss != problem.loss.name
            else f"coefficients of shape {coef.shape}, not {problem.coef_shape} (M kernels x N examples)"
            if coef.shape != problem.coef_shape
            else "coefficients or intercept not finite"
            if not (np.isfinite(coef).all() and np.isfinite(start.intercept)) else "")
        if mismatch:
            raise ValidationError(f"warm_start must be a result of this problem (the same kernels, targets, "
                                  f"family and loss at another C or C2); it has {mismatch}")
        intercept = float(start.intercept) if problem.family.has_intercept else 0.0
        return coef, intercept

    def query(self, point: ProximalPoint, state: NewtonState) -> tuple[OracleAnswer, NewtonState]:
        problem = state.problem
        passes = 0.0
        if point.coef is state.centre:
            K_centre = state.K_centre
        else:
            K_centre, fraction = objectives.sparse_kernel_products(problem.K, point.coef)
            passes += fraction
        if point.gamma == 0.0:  # the starting model; init's passes (K rho and K 1) are counted here
            return self._answer(point, state, K_centre, point.coef, point.intercept, K_centre,
                                point.slack, state.rho, state.bounds, passes + state.start_passes, 0)
        loss_term: ConjugateTerm | SlackTerm = (
            ConjugateTerm(problem.loss, problem.y) if point.slack is None
            else SlackTerm(problem.loss, problem.y, point.slack, point.gamma)
        )
        gamma, a_K_a = point.gamma, np.einsum("mi,mi->m", point.coef, K_centre)
        rho, bounds = state.rho, state.bounds
        centred = np.any(point.coef != 0, axis=1)  # read at rho by the last solve: exact
        known = bounds.exact(rho)
        _, norms = self._radial(state.penalty, gamma, a_K_a, K_centre, rho,
                                np.where(known, bounds.squares, bounds.squared_interval(rho)[1]))
        working = (norms > self.screen * gamma * state.penalty.threshold) | centred
        checks = self._read(bounds, problem.K, rho, np.flatnonzero(working & ~known))
        newton_term = loss_term.like(problem.K) if array_backend.is_device_array(problem.K) else loss_term
        steps, tolerance = 0, None
        while True:
            kernels = np.flatnonzero(working)
            terms = KernelTerms(problem.K, kernels, K_centre[kernels], a_K_a[kernels], gamma,
                                state.penalty, rho, bounds.products[kernels], self.hessian_tol)
            solved, tolerance = self._newton(terms, newton_term, point, problem.family.has_intercept, tolerance)
            steps += solved
            rho, K_rho = terms.on_host()
            bounds.update(kernels, rho, K_rho)  # kept by the Newton steps, no read
            passes += terms.passes
            # The other kernels (no centre: r_m = gamma ||rho||_{K_m}) are read only where the
            # upper bound on their norm passes the threshold (the radial map is non-decreasing),
            # largest bound first, until `cap` of them are found to join.
            cap = int(min(working.size, max(self.join_min, self.join_growth * np.count_nonzero(working))))
            lower, upper = bounds.squared_interval(rho)
            could_join = np.flatnonzero(~working & (self._radial(state.penalty, gamma, a_K_a, K_centre, rho,
                                                                   upper)[0] > 0))
            estimate = lower[could_join] + upper[could_join]  # twice the first-order value
            could_join = could_join[np.argsort(-estimate, kind="stable")]
            found = 0
            for start in range(0, could_join.size, 2 * cap):
                chunk = could_join[start:start + 2 * cap]
                checks += self._read(bounds, problem.K, rho, chunk)
                found += int(np.count_nonzero(self._radial(state.penalty, gamma, a_K_a[chunk], K_centre[chunk],
                                                           rho, bounds.squares[chunk])[0] > 0))
                if found >= cap:
                    break
            known = bounds.exact(rho)
            shrunk, norms = self._radial(state.penalty, gamma, a_K_a, K_centre, rho,
                                         np.where(known, bounds.squares, upper))
            joining = (shrunk > 0) & ~working & known
            if not joining.any():  # rho is stationary for every kernel, not just the working set
                break
            candidates = np.flatnonzero(joining)
            if candidates.size > cap:
                candidates = candidates[np.argsort(-shrunk[candidates])[:cap]]
            working[candidates] = True
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(norms > 0, shrunk / norms, 0.0)
        coef = scale[:, None] * (point.coef - gamma * rho[None, :])
        intercept = point.intercept - point.gamma_b * float(rho.sum()) \
            if problem.family.has_intercept else 0.0
        # K_m alpha+_m = s_m (K_m alpha_m - gamma K_m rho), from the products at hand: no read (the
        # active kernels are in the working set, whose K_m rho the Newton steps kept).
        active = np.flatnonzero(scale > 0)
        K_coef = np.zeros_like(coef)
        K_coef[active] = scale[active, None] * (K_centre[active] - gamma * bounds.products[active])
        return self._answer(point, state, K_centre, coef, intercept, K_coef, loss_term.next_slack(rho),
                            rho, bounds, passes, steps, checks)

    @staticmethod
    def _read(bounds: KernelNormBounds, K: Any, rho: np.ndarray, kernels: np.ndarray) -> float:
        """Read ``K_m rho`` for the ``kernels`` (indices) into ``bounds``; the passes it cost."""
        if kernels.size:
            bounds.update(kernels, rho, kernels_times(K, rho, kernels))
        return kernels.size / K.shape[0]

    @staticmethod
    def _radial(penalty: SeparablePenalty, gamma: float, a_K_a: np.ndarray, K_centre: np.ndarray, rho: np.ndarray,
                rho_K_rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Shrunk norms and norms ``r_m = ||alpha_m - gamma rho||_{K_m}`` of every kernel, from
        ``rho'K_m rho`` (an upper bound gives upper bounds, where ``alpha_m = 0``)."""
        squares = a_K_a - 2 * gamma * (K_centre @ rho) + gamma * gamma * rho_K_rho
        norms = np.sqrt(np.maximum(squares, 0.0))
        return penalty.radial_prox(norms, gamma)[0], norms

    def _newton(self, terms: KernelTerms, loss_term: Any, point: ProximalPoint,
                has_intercept: bool, tolerance: float | None) -> tuple[int, float | None]:
        """Newton with the exact line search from ``terms.rho``: the steps taken, and the tolerance.

        The residual to reach is ``max(newton_tol, newton_rtol * r0)``, ``r0``
        the residual at the query's first Newton step (``tolerance`` None: this
        one).  A re-solve after kernels joined keeps it: relative to its own
        start, where a joining kernel at a large ``gamma`` can make the residual
        huge, the tolerance would be so loose that the proximal step is far
        from solved (a stalled solve: docs/methods/spicymkl.md).  On a device stack every
        array stays there; a step reads back one array (:meth:`KernelTerms.read`: the stopping
        test, the last step's length, the kernels' weights) and sends one (the lazy Hessian's
        re-read weights), and its line search, hundreds of small launches, is replayed as one
        graph where the library records one (:class:`~kernelfuse.kernels.array_backend.Replayed`)."""
        xp = terms.xp
        b_t, gamma_b = (point.intercept, point.gamma_b) if has_intercept else (0.0, 0.0)

        def intercept_terms(rho: Any) -> Any:  # rho (N,) or trial points (N, T)
            total = xp.sum(rho, axis=0)
            return -b_t * total + 0.5 * gamma_b * total * total

        def line(rho: Any, d: Any, r2: Any, b: Any, c: Any) -> LineSearch:
            """``phi`` and its slope along ``d`` from ``rho``; ``r2``, ``b``, ``c`` (k, 1) the
            coefficients of the norms along it (:meth:`KernelTerms.direction`)."""

            def norms_along(t: Any) -> Any:
                """``r_m(t) = sqrt(r_m^2 - t (2 b_m - t c_m))`` at the steps ``t`` (T,): (k, T), no
                pass (section 3.4)."""
                return xp.sqrt(array_backend.clip(r2 - t * (2 * b - t * c), 0.0))

            def along(t: Any) -> Any:  # phi(rho + t d) at each step t
                trial = rho[:, None] + d[:, None] * t
                return loss_term.value(trial) + terms.value(norms_along(t)) + intercept_terms(trial)

            def slope_along(t: Any) -> Any:
                """``d/dt phi(rho + t d)`` at each step t."""
                trial, norms = rho[:, None] + d[:, None] * t, norms_along(t)
                scale = terms.scale_of(norms, terms.penalty.radial_prox(norms, terms.gamma)[0])
                return (xp.sum(loss_term.gradient(trial) * d[:, None], axis=0)
                        - xp.sum(scale * (b - t * c), axis=0) / terms.gamma
                        + (gamma_b * xp.sum(trial, axis=0) - b_t) * xp.sum(d))

            return LineSearch(along, slope_along)

        search = None
        if terms.on_device:  # the line search of every step, one replayed graph where it can be
            schedule = BatchedSchedule.like(terms.rho, loss_term.bounded)
            host_parts = any(isinstance(part, array_backend.HostCalls) for part in (loss_term.loss, terms.penalty))
            search = array_backend.Replayed(
                lambda rho, d, r2, b, c, value, slope: _batched_step(line(rho, d, r2, b, c), schedule, value, slope),
                recordable=not host_parts)
        steps, value, length = 0, None, None  # value: phi at rho, once the line search has computed it
        while not expired():  # the deadline: the model so far stands
            rho = terms.rho
            grad = loss_term.gradient(rho) + terms.gradient() + (gamma_b * xp.sum(rho) - b_t)
            residual, moved = terms.read(xp.max(xp.abs(grad)), length)
            if moved is not None:
                if moved == 0.0:  # no decrease found along the last direction
                    break
                steps += 1
            if tolerance is None:
                tolerance = max(self.newton_tol, self.newton_rtol * residual)
            if residual <= tolerance or steps >= self.max_newton:
                break
            if value is None:
                value = loss_term.value(rho) + terms.value() + intercept_terms(rho)
            # One expression: no step's N x N matrix outlives its solve into the next step's.
            d = -terms.newton_system(loss_term.hessian(rho) + self.ridge * min(1.0, residual),
                                     gamma_b).solve(grad)
            slope = xp.sum(grad * d)
            descent = slope < 0.0  # else a singular or indefinite solve: the gradient instead
            d = xp.where(descent, d, -grad)
            slope = xp.where(descent, slope, -xp.sum(grad * grad))
            K_d, r2, b, c = terms.direction(d)
            along_d = (rho, d, r2[:, None], b[:, None], c[:, None])
            if search is None:
                length, value = step_length(line(*along_d), value, slope)
            else:
                length, value = search(*along_d, value, slope)
            terms.move(d, K_d, length)
        return steps, tolerance

    def _answer(self, point: ProximalPoint, state: NewtonState, K_centre: np.ndarray,
                coef: np.ndarray, intercept: float,
                K_coef: np.ndarray, slack: np.ndarray | None, rho: np.ndarray, bounds: KernelNormBounds,
                passes: float, steps: int, checks: float = 0.0) -> tuple[OracleAnswer, NewtonState]:
        """The answer at the proximal point; ``passes`` over the kernels read by the Newton steps and
        the model, ``checks`` by the checks of the kernels outside the working set (both counted in
        ``kernel_passes``, the checks and the certificate also in ``check_passes``)."""
        problem = state.problem
        f = objectives.decision_values(K_coef, intercept)
        squares = objectives.squared_norms(coef, K_coef)
        objective = objectives.evaluate_parts(problem, coef, f, squares)
        if point.gamma == 0.0:  # the centre itself: start the dual from loss'(f), scaled as below
            rho = problem.loss.derivative(problem.y, f)
            K_rho = bounds.products
            if not np.array_equal(rho, state.rho):
                K_rho = kernel_times(problem.K, rho)
                passes += 1.0
            rho, K_rho = _within_ball(rho, K_rho, state.penalty.slope(np.sqrt(squares)))
            bounds = KernelNormBounds.at(K_rho, rho, bounds.frobenius)
        lower, cost = self._lower_bound(state, rho, bounds)
        # Moreau envelope of P at the centre: its value and gradient (centre - proximal point) / gamma.
        value = objective
        if point.gamma > 0:
            moved = (np.einsum("mi,mi->m", point.coef, K_centre) + squares
                     - 2.0 * np.einsum("mi,mi->m", point.coef, K_coef))  # ||alpha^t_m - alpha_m||^2
            step_z = np.zeros(0) if slack is None else point.slack - slack
            value += (float(np.sum(np.maximum(moved, 0.0))) + float(step_z @ step_z)) / (2 * point.gamma)
            if point.gamma_b > 0:
                value += (point.intercept - intercept) ** 2 / (2 * point.gamma_b)
        gradient = point.envelope_gradient(coef, intercept, slack)
        return OracleAnswer(
            value=value, gradient=gradient, coef=coef, objective=objective, intercept=intercept,
            lower_bound=lower, counters={"kernel_passes": passes + checks + cost, "check_passes": checks + cost,
                                         "newton_steps": steps},
            active_kernels=int(np.count_nonzero(np.any(coef != 0, axis=1))),
        ), attrs.evolve(state, rho=rho, bounds=bounds, centre=coef, K_centre=K_coef)

    def _lower_bound(self, state: NewtonState, rho: np.ndarray,
                     bounds: KernelNormBounds) -> tuple[float, float]:
        """The dual value at ``rho`` made feasible, and its cost in passes.

        The feasibility scaling needs ``max_m ||point||_{K_m}``: the kernels
        read at ``rho`` give theirs exactly when the projection is a shift
        (``K_m 1`` is kept), and :meth:`KernelNormBounds.norms` reads only the
        other kernels that could hold the maximum; every other norm enters as
        an upper bound, which keeps the point feasible."""
        problem = state.problem
        feasible = feasible_dual_point(problem, rho)
        if feasible is None:
            return -np.inf, 0.0
        point, shift = feasible
        known = None
        if np.array_equal(point, rho - shift) and (shift == 0.0 or state.K_one is not None):
            kernels = np.flatnonzero(bounds.exact(rho))
            squares = bounds.squares[kernels]
            if shift != 0.0 and state.K_one is not None:  # not None where shift != 0 (above)
                K_one = state.K_one[kernels]
                squares = squares - 2 * shift * (K_one @ rho) + shift**2 * K_one.sum(axis=1)
            known = (kernels, squares)
        norms, read = bounds.norms(problem.K, point, known)
        return separable_dual_value(problem, point, norms), read


def _within_ball(rho: np.ndarray, K_rho: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rho`` (and ``K_m rho``) scaled into the set ``||rho||_{K_m} <= radii_m`` (section 5.1's
    scaling), ``radii_m = h'(||f_m||) = C + C2 ||f_m||`` at the starting model: the dual ball at
    the zero model; at a warm start, where an optimum at another ``C`` puts ``||rho||_{K_m}`` at
    its own ``h'(||f_m||)`` on its active kernels, the new ``C``'s values there.

    Newton's first solve then starts with no kernel above the threshold instead
    of every kernel (fewer passes: docs/methods/spicymkl.md, start).  A radius 0 (a penalty with
    ``h'(0+) = 0`` at a zero norm, which thresholds no kernel) sets no bound: the ball would be
    the point 0, where a loss conjugate such as the logistic one has no finite derivative."""
    norms = np.sqrt(np.maximum(K_rho @ rho, 0.0))
    with np.errstate(divide="ignore"):
        factor = float(np.min(np.where((norms > radii) & (radii > 0), radii / norms, 1.0), initial=1.0))
    if factor == 1.0:
        return rho, K_rho
    return rho * factor, K_rho * factor


#: On a device: the largest step ``2^-j``, ``j < HALVINGS``, inside a bounded conjugate's domain
#: is tried first; the exact step is then bracketed among the steps ``16^-j`` times it,
#: ``j < SCALES``, by ``ROUNDS`` rounds of ``GRID`` slopes each narrowing the bracket ``GRID``-fold,
#: and found by the secant on the last bracket (exact on a linear piece of the slope).
HALVINGS, SCALES = 41, 11
GRID, ROUNDS = 8, 4
#: Each round also tries the secant's root of the bracket and the points ``10^-k`` of the
#: bracket's width either side of it, ``k = 1..NEAR_DECADES``: where the slope is nearly linear
#: there, the bracket shrinks by up to ``10^NEAR_DECADES`` in one round.
NEAR_DECADES = 4


@attrs.frozen
class BatchedSchedule:
    """The steps a device's line search tries, made once on the device of a Newton loop
    (:func:`_batched_step`): ``tries`` the halvings ``2^-j`` (1 alone where ``phi`` is finite
    everywhere), ``scales`` the ``16^-j`` in increasing order, ``grid`` the fractions ``k / GRID``
    of a bracket, ``near`` the offsets ``0, +-10^-k`` around the secant's root."""

    xp: Any
    tries: Any
    scales: Any
    grid: Any
    near: Any

    @classmethod
    def like(cls, array: Any, bounded: bool) -> BatchedSchedule:
        """The schedule in ``array``'s namespace, on its device (made there: nothing sent);
        ``bounded``: whether ``phi`` may be infinite (a conjugate finite on a domain only)."""
        xp = array_backend.array_namespace(array)

        def count(start: int, stop: int) -> Any:
            return xp.astype(xp.arange(start, stop, device=array.device), xp.float64)

        decades = 10.0 ** -count(1, NEAR_DECADES + 1)
        return cls(xp, 2.0 ** -count(0, HALVINGS if bounded else 1), 16.0 ** -xp.flip(count(0, SCALES)),
                   count(1, GRID + 1) / GRID, xp.concat((-decades, xp.zeros_like(decades[:1]), decades)))


@attrs.frozen
class LineSearch:
    """``phi`` and its slope along a Newton direction, at arrays of steps ``t`` (T,)."""

    along: Any
    slope_along: Any


def step_length(line: LineSearch, value: float, slope: float) -> tuple[float, float]:
    """The Newton step ``t = 1`` (halved until ``phi`` is finite) if it passes Armijo's test,
    else the minimiser of the convex ``phi`` along the direction on ``[0, t]`` (every trial is
    free), and ``phi`` there; ``t = 0`` (and ``value``) when no decrease is found.
    Piecewise-quadratic duals (section 3.3) make full steps overshoot where the active
    pieces change; the exact step keeps Newton's progress there.  The minimiser is the root of
    the non-decreasing slope, found on the host by regula falsi (:func:`_sequential_step`); on a
    device by a fixed schedule that reads nothing back (:func:`_batched_step`).  Why two:
    docs/methods/spicymkl.md, the line search."""

    def along(t: float) -> float:
        return float(line.along(np.asarray([t]))[0])

    def slope_along(t: float) -> float:
        return float(line.slope_along(np.asarray([t]))[0])

    return _sequential_step(along, slope_along, float(value), float(slope))


def _sequential_step(along: Any, slope_along: Any, value: float, slope: float) -> tuple[float, float]:
    """:func:`step_length` one trial at a time: the root of the slope by regula falsi with the
    Illinois safeguard (a bracket end kept twice has its slope halved), to ``1e-3`` of the slope
    at 0: the slope is piecewise linear for the slack form's duals, where the secant is exact
    on a piece (fewer trials than bisection)."""
    high = 1.0
    at_high = along(high)
    while not np.isfinite(at_high):  # outside the conjugate's domain (eq. 7 form)
        high *= 0.5
        if high < 1e-12:
            return 0.0, value
        at_high = along(high)
    if at_high <= value + 1e-4 * high * slope:
        return high, at_high
    slope_high = slope_along(high)
    if slope_high <= 0.0:
        return high, at_high
    low, slope_low = 0.0, slope
    t, kept = high, 0
    for _ in range(50):
        t = high - slope_high * (high - low) / (slope_high - slope_low)
        if not low < t < high:  # rounding at a tiny bracket: its middle
            t = 0.5 * (low + high)
        derivative = slope_along(t)
        if abs(derivative) <= 1e-3 * abs(slope):
            break
        if derivative < 0:
            low, slope_low = t, derivative
            kept = kept + 1 if kept > 0 else 1  # high kept again
            if kept >= 2:
                slope_high *= 0.5
        else:
            high, slope_high = t, derivative
            kept = kept - 1 if kept < 0 else -1  # low kept again
            if kept <= -2:
                slope_low *= 0.5
    at_t = along(t)
    return (t, at_t) if at_t < value else (0.0, value)


def _batched_step(line: LineSearch, schedule: BatchedSchedule, value: Any, slope: Any) -> tuple[Any, Any]:
    """:func:`step_length`'s step on a device, every stage one evaluation at many steps at once: the
    first finite ``2^-j`` and Armijo's test there, the root's bracket among the steps
    ``16^-j t``, :data:`ROUNDS` rounds of :data:`GRID` slopes and of points near the secant's
    root, the secant on the last bracket; the choices by ``where``, nothing read back."""
    xp, tries = schedule.xp, schedule.tries
    zero = xp.zeros_like(slope)
    values = line.along(tries)
    first = xp.reshape(xp.argmax(xp.astype(xp.isfinite(values), xp.float64)), (1,))
    top, at_top = xp.take(tries, first)[0], xp.take(values, first)[0]
    armijo = at_top <= value + 1e-4 * top * slope
    scales = top * schedule.scales  # increasing, up to top
    slopes = line.slope_along(scales)
    slope_top = slopes[-1]
    low, slope_low, high, slope_high = _narrowed(xp, scales, slopes, zero, slope, top, slope_top)
    grid, near = schedule.grid, schedule.near
    for _ in range(ROUNDS):
        width = high - low
        near_root = _secant(xp, low, slope_low, high, slope_high) + width * near
        trials = xp.concat((low + width * grid, xp.minimum(xp.maximum(near_root, low), high)))
        low, slope_low, high, slope_high = _narrowed(xp, trials, line.slope_along(trials), low, slope_low,
                                                     high, slope_high)
    t = _secant(xp, low, slope_low, high, slope_high)
    at_t = line.along(xp.reshape(t, (1,)))[0]
    end = armijo | (slope_top <= 0.0)  # the end itself: Armijo's step, or the minimiser there
    t, at_t = xp.where(end, top, t), xp.where(end, at_top, at_t)
    better = at_t < value
    return xp.where(better, t, zero), xp.where(better, at_t, value)


def _secant(xp: Any, low: Any, slope_low: Any, high: Any, slope_high: Any) -> Any:
    """The root of the line through the slopes at the bracket's ends (its middle where that
    falls outside: equal slopes, or rounding)."""
    rise = slope_high - slope_low
    secant = high - slope_high * (high - low) / xp.where(rise > 0, rise, 1.0)
    return xp.where((rise > 0) & (secant > low) & (secant < high), secant, 0.5 * (low + high))


def _narrowed(xp: Any, trials: Any, slopes: Any, low: Any, slope_low: Any, high: Any,
              slope_high: Any) -> tuple[Any, Any, Any, Any]:
    """The bracket ``[low, high]`` of the slope's root (slope negative at ``low``, not at
    ``high``) narrowed by the slopes at ``trials`` inside it: the last trial of a negative slope
    and the first of a non-negative one (the slope is non-decreasing), and the slopes there;
    where rounding breaks the order, the bracket closes at ``low``."""
    negative = slopes < 0.0
    low, high = xp.max(xp.where(negative, trials, low)), xp.min(xp.where(negative, high, trials))
    return (low, xp.max(xp.where(negative, slopes, slope_low)),
            xp.maximum(high, low), xp.min(xp.where(negative, slope_high, slopes)))
