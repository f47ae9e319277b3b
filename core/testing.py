"""Conformance checks for plugin parts, like scikit-learn's ``check_estimator``.

A plugin author calls these in their own tests; kernelfuse's built-in parts run them too
(``tests/project/test_conformance.py``).  Each check raises an ``AssertionError`` naming the
part and the property that failed, and returns the names of the properties it checked (a part
checks only the capabilities it has): :func:`check_loss` (sub-gradients, Fenchel-Young, the
conjugate's derivatives and prox, the cvxpy form), :func:`check_prox` (the Moreau identity,
non-expansiveness, optimality), :func:`check_regularizer` (Fenchel-Young, the dual norm, the cvxpy
form; for a :class:`~kernelfuse.parts.regularizer.SeparablePenalty` its radial prox, slope and
dual radius), :func:`check_mirror_map` (``grad_h*`` inverts ``grad_h``, the
divergence), :func:`check_solver` (within the certified interval of the exact ``cvxpy``
optimum on :func:`small_problem`, :func:`assert_within_certified`).  :func:`indefinite_kernel`
and :func:`near_singular_kernel` generate kernels for testing PSD checks.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from kernelfuse.parts.loss import Loss
from kernelfuse.parts.mirror_map import MirrorMap
from kernelfuse.parts.prox import ProxOperator
from kernelfuse.parts.regularizer import Regularizer, SeparablePenalty


def _label(part: object) -> str:
    if isinstance(part, str):
        return f"solver {part!r}"
    return f"{type(part).__name__} {getattr(part, 'name', '')!r}".strip()


def _require(condition: bool, part: object, message: str) -> None:
    if not condition:
        raise AssertionError(f"{_label(part)}: {message}")


def _has(part: object, method: str) -> bool:
    return callable(getattr(part, method, None))


def _loss_data(loss: Loss, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    if loss.target == "multiclass":
        return rng.integers(0, 4, size=n), rng.normal(scale=2.0, size=(n, 4))
    if loss.target == "real":
        return rng.normal(size=n), rng.normal(scale=2.0, size=n)
    return rng.choice([-1.0, 1.0], size=n), rng.normal(scale=2.0, size=n)


def check_loss(loss: Loss, *, seed: int = 0, n: int = 60) -> list[str]:
    """Check a :class:`~kernelfuse.parts.loss.Loss` and every capability it offers."""
    rng = np.random.default_rng(seed)
    y, f = _loss_data(loss, rng, n)
    checked = ["value"]
    values = np.asarray(loss.value(y, f), dtype=float)
    _require(values.shape == (n,), loss, f"value() must give one number per example, got {values.shape}")
    _require(bool(np.isfinite(values).all()), loss, "value() is not finite on finite inputs")
    _require(math.isclose(loss.total(y, f), float(values.sum()), rel_tol=1e-12, abs_tol=1e-12),
             loss, "total() differs from the sum of value()")
    if _has(loss, "derivative"):
        checked.append("derivative")
        g = np.asarray(loss.derivative(y, f), dtype=float)
        _require(g.shape == f.shape, loss, f"derivative() has shape {g.shape}, f has {f.shape}")
        for scale in (1e-3, 0.3, 3.0):  # sub-gradient inequality of a convex loss
            d = rng.normal(scale=scale, size=f.shape)
            gap = loss.total(y, f + d) - loss.total(y, f) - float(np.sum(g * d))
            _require(gap >= -1e-9 * max(1.0, abs(loss.total(y, f))), loss,
                     f"derivative() is not a sub-gradient: loss(f + d) < loss(f) + <g, d> by {-gap:.3g}")
        if f.ndim == 1:
            h = 1e-6
            left = (loss.value(y, f) - loss.value(y, f - h)) / h
            right = (loss.value(y, f + h) - loss.value(y, f)) / h
            smooth = np.abs(right - left) < 1e-4
            error = np.abs(g - 0.5 * (left + right))[smooth]
            _require(error.size == 0 or float(error.max()) < 1e-4, loss,
                     f"derivative() differs from central differences by {error.max():.3g} where smooth")
    if _has(loss, "conjugate") and f.ndim == 1:
        checked.append("conjugate")
        rho = rng.uniform(-1.5, 1.5, size=n)
        star = np.asarray(loss.conjugate(y, rho), dtype=float)
        young = loss.value(y, f) + star - rho * f
        _require(bool(np.all(young >= -1e-9)), loss,
                 f"Fenchel-Young fails: loss(f) + loss*(rho) < rho f by {-young.min():.3g}")
        if _has(loss, "derivative"):
            g = loss.derivative(y, f)
            equality = loss.value(y, f) + loss.conjugate(y, g) - g * f
            _require(float(np.max(np.abs(equality))) < 1e-8, loss,
                     "Fenchel-Young is not an equality at rho = derivative(f): the conjugate or "
                     f"the derivative is wrong (by {np.max(np.abs(equality)):.3g})")
        if _has(loss, "conjugate_derivative"):
            checked.append("conjugate_derivative")
            h = 1e-6
            with np.errstate(invalid="ignore"):  # inf - inf outside the conjugate's domain
                numeric = (loss.conjugate(y, rho + h) - loss.conjugate(y, rho - h)) / (2 * h)
            exact = np.asarray(loss.conjugate_derivative(y, rho), dtype=float)
            ok = np.isfinite(numeric) & np.isfinite(exact) & np.isfinite(star)
            error = np.abs(exact - numeric)[ok]
            _require(error.size == 0 or float(error.max()) < 1e-4 * max(1.0, float(np.abs(numeric[ok]).max())),
                     loss, "conjugate_derivative() differs from central differences")
        if _has(loss, "conjugate_prox"):
            checked.append("conjugate_prox")
            from scipy.optimize import minimize_scalar

            lower, upper = (loss.conjugate_domain(y) if _has(loss, "conjugate_domain")
                            else (np.full(n, -np.inf), np.full(n, np.inf)))
            for step in (0.1, 1.0, 4.0):
                v = rng.normal(scale=1.5, size=n)
                w = loss.conjugate_prox(y, v, step)
                for i in range(min(n, 15)):
                    def objective(t: float, i: int = i, v: np.ndarray = v, step: float = step) -> float:
                        return float(loss.conjugate(y[i:i + 1], np.array([t]))[0]) + (t - v[i]) ** 2 / (2 * step)
                    best = minimize_scalar(objective, bounds=(max(lower[i], -50.0), min(upper[i], 50.0)),
                                           method="bounded", options={"xatol": 1e-12})
                    _require(objective(w[i]) <= best.fun + 1e-8, loss,
                             f"conjugate_prox() is not the minimiser (example {i}, step {step})")
    if _has(loss, "cvxpy_sum"):
        checked.append("cvxpy_sum")
        import cvxpy as cp

        variable = cp.Variable(f.shape)
        expression, constraints = loss.cvxpy_sum(y, variable)
        problem = cp.Problem(cp.Minimize(expression), list(constraints) + [variable == f])
        problem.solve(solver="CLARABEL")
        _require(math.isclose(problem.value, loss.total(y, f), rel_tol=1e-6, abs_tol=1e-6), loss,
                 f"cvxpy_sum() gives {problem.value:.8g}, total() {loss.total(y, f):.8g}")
    return checked


def check_prox(prox: ProxOperator, *, shape: tuple[int, ...] = (6, 4), seed: int = 0,
               value: Callable[[np.ndarray], float] | None = None,
               conjugate: Callable[[np.ndarray], float] | None = None,
               steps: Iterable[float] = (0.2, 1.0, 3.0)) -> list[str]:
    """Check a :class:`~kernelfuse.parts.prox.ProxOperator` on random points of ``shape``.

    ``value`` (g) and ``conjugate`` (g*) default to the operator's own
    ``value`` / ``conjugate`` methods where it has them.
    """
    rng = np.random.default_rng(seed)
    value = value or (prox.value if _has(prox, "value") else None)  # type: ignore[attr-defined]
    conjugate = conjugate or (prox.conjugate if _has(prox, "conjugate") else None)  # type: ignore[attr-defined]
    checked = ["moreau", "non-expansive"]
    for step in steps:
        x, x2 = rng.normal(scale=2.0, size=shape), rng.normal(scale=2.0, size=shape)
        z = prox.prox(x, step)
        moreau = z + step * prox.prox_conjugate(x / step, 1.0 / step)
        _require(np.allclose(moreau, x, atol=1e-9), prox,
                 f"the Moreau identity fails at step {step} (by {np.abs(moreau - x).max():.3g})")
        spread = np.linalg.norm(z - prox.prox(x2, step))
        _require(spread <= np.linalg.norm(x - x2) * (1 + 1e-9), prox, f"not non-expansive at step {step}")
        if value is not None:
            def objective(u: np.ndarray, x: np.ndarray = x, step: float = step) -> float:
                return float(value(u)) + float(np.sum((u - x) ** 2)) / (2 * step)
            best = objective(z)
            for scale in (1e-4, 1e-2, 0.3):
                for _ in range(5):
                    other = objective(z + rng.normal(scale=scale, size=shape))
                    _require(best <= other + 1e-10 * max(1.0, abs(best)), prox,
                             f"prox() is not the minimiser at step {step}: a perturbation lowers "
                             f"g(z) + ||z - x||^2 / (2 step) by {best - other:.3g}")
            if conjugate is not None:
                w = (x - z) / step  # the optimality residual lies in the sub-differential of g at z
                gap = float(value(z)) + float(conjugate(w)) - float(np.sum(w * z))
                _require(abs(gap) < 1e-8 * max(1.0, abs(float(value(z)))), prox,
                         f"the residual (x - z) / step is not a sub-gradient at z (Fenchel-Young gap {gap:.3g})")
    if value is not None:
        checked.append("optimality")
        if conjugate is not None:
            checked.append("fenchel-young")
    return checked


def check_regularizer(regularizer: Regularizer, *, shape: tuple[int, ...] = (5,), seed: int = 0,
                      trials: int = 10, steps: Iterable[float] = (0.1, 1.0, 10.0)) -> list[str]:
    """Check a :class:`~kernelfuse.parts.regularizer.Regularizer` on random points ``x >= 0`` of
    ``shape`` (its layout: the kernel norms (M,) for the kernel families) and random ``u``.

    Always: Fenchel-Young ``Omega(x) + Omega*(u) >= <u, x>``, ``<u, x> <= ||x|| ||u||_*``, and the
    cvxpy ``expression`` minimised at a fixed ``x`` equal to ``Omega(x)``.  For a
    :class:`~kernelfuse.parts.regularizer.SeparablePenalty`: the radial prox solves
    ``z + step h'(z) = r`` (``z = 0`` where ``r <= step h'(0+)``) and its slope is its derivative,
    ``h'`` is the derivative of ``Omega``, Fenchel-Young holds with equality at ``u = h'(x)``, and
    ``Omega*`` is finite inside the dual radius.
    """
    rng = np.random.default_rng(seed)

    def point() -> np.ndarray:
        return np.abs(rng.normal(size=shape)) * math.exp(rng.uniform(-2.0, 2.0))

    for _ in range(trials):
        x, u = point(), rng.normal(size=shape) * math.exp(rng.uniform(-2.0, 2.0))
        inner, value = float(np.sum(u * x)), regularizer.value(x)
        scale = max(1.0, abs(value), abs(inner))
        _require(value + regularizer.conjugate(u) >= inner - 1e-9 * scale, regularizer,
                 "Fenchel-Young fails: Omega(x) + Omega*(u) < <u, x>")
        _require(inner <= regularizer.norm(x) * regularizer.dual_norm(u) + 1e-9 * scale, regularizer,
                 "<u, x> exceeds ||x|| ||u||_*: dual_norm is not the norm's dual")
    checked = ["fenchel-young", "dual-norm", "expression"]
    import cvxpy as cp

    x = point()
    variable = cp.Variable(shape)
    expression, constraints = regularizer.expression(variable)
    program = cp.Problem(cp.Minimize(expression), [*constraints, variable == x])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program.solve()
    _require(math.isclose(float(program.value), regularizer.value(x), rel_tol=1e-6, abs_tol=1e-8),
             regularizer, f"the cvxpy expression gives {program.value:.10g} at x, Omega(x) = "
             f"{regularizer.value(x):.10g}")
    if not (isinstance(regularizer, SeparablePenalty) and regularizer.separable):
        return checked
    x = np.abs(point())
    _require(math.isclose(float(np.sum(regularizer.kernel_values(x))), regularizer.value(x), rel_tol=1e-9,
                          abs_tol=1e-12), regularizer, "kernel_values does not sum to value")
    threshold = regularizer.threshold
    for step in steps:
        r = point()
        z, slope = regularizer.radial_prox(r, step)
        _require(bool(np.all((z >= 0) & (z <= r * (1 + 1e-12)))), regularizer, "the radial prox leaves [0, r]")
        positive = z > 0
        residual = z[positive] + step * regularizer.slope(z[positive]) - r[positive]
        _require(bool(np.all(np.abs(residual) <= 1e-9 * np.maximum(1.0, r[positive]))), regularizer,
                 f"the radial prox misses z + step h'(z) = r at step {step}")
        _require(bool(np.all(r[~positive] <= step * threshold * (1 + 1e-9))), regularizer,
                 f"the radial prox is 0 above the threshold step h'(0+) at step {step}")
        delta = 1e-6 * np.maximum(r, 1e-3)
        above, below = regularizer.radial_prox(r + delta, step)[0], regularizer.radial_prox(r - delta, step)[0]
        finite = (above - below) / (2 * delta)
        _require(bool(np.allclose(slope, finite, rtol=1e-4, atol=1e-6)), regularizer,
                 f"the radial prox's slope is not its derivative at step {step}")
        x = point()
        h = 1e-6 * np.maximum(x, 1e-3)
        derivative = np.array([(regularizer.value(x + h * e) - regularizer.value(x - h * e)) / (2 * h[m])
                               for m, e in enumerate(np.eye(x.size))])
        _require(bool(np.allclose(regularizer.slope(x), derivative, rtol=1e-5, atol=1e-8)), regularizer,
                 "slope is not the derivative of the penalty")
        s = regularizer.slope(x)
        gap = regularizer.value(x) + regularizer.conjugate(s) - float(np.sum(s * x))
        _require(abs(gap) <= 1e-8 * max(1.0, regularizer.value(x)), regularizer,
                 f"Fenchel-Young is not an equality at u = h'(x) (gap {gap:.3g})")
        inside = np.full(x.size, 0.5 * min(regularizer.dual_radius, 1.0 + float(s.max())))
        _require(math.isfinite(regularizer.conjugate(inside)), regularizer,
                 "Omega* is infinite inside the dual radius")
    return [*checked, "kernel-values", "radial-prox", "slope", "dual-radius"]


def check_mirror_map(mirror_map: MirrorMap, points: Iterable[np.ndarray], groups: np.ndarray) -> list[str]:
    """Check a :class:`~kernelfuse.parts.mirror_map.MirrorMap` at ``points`` of its set (with ``groups``)."""
    points = [np.asarray(p, dtype=float) for p in points]
    for x in points:
        back = mirror_map.grad_h_conjugate(mirror_map.grad_h(x), groups)
        _require(np.allclose(back, x, rtol=1e-9, atol=1e-12), mirror_map,
                 f"grad_h_conjugate(grad_h(x)) != x (by {np.abs(back - x).max():.3g})")
        _require(abs(mirror_map.divergence(x, x)) < 1e-12, mirror_map, "divergence(x, x) != 0")
    for x in points:
        for z in points:
            _require(mirror_map.divergence(x, z) >= -1e-12, mirror_map, "a Bregman divergence is negative")
    return ["inverse", "divergence"]


def small_problem(family: str, seed: int, n: int = 30, n_kernels: int = 4
                  ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """A small seeded problem of ``family``: ``(K, y, extra)``, the problems :func:`check_solver` uses.

    Gaussian kernels of ``n_kernels`` widths on ``n`` points in 3-d; labels
    +-1 from a noisy hyperplane (three noisy hyperplanes, as an (n, 3)
    matrix, for the multi-label families); ``extra`` holds ``groups`` for
    the families that use them.
    """
    from kernelfuse.problem.families import get_family

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-D / w) for w in np.geomspace(0.3, 6.0, n_kernels)])
    score = X @ rng.normal(size=3) + 0.5 * rng.normal(size=n)
    target = get_family(family).target
    extra: dict[str, Any] = {}
    if target == "multilabel":
        y = np.where(X @ rng.normal(size=(3, 3)) + 0.5 * rng.normal(size=(n, 3)) > 0, 1.0, -1.0)
    else:
        y = np.where(score > np.median(score), 1.0, -1.0)
    if get_family(family).uses_groups:
        extra["groups"] = np.arange(n_kernels) % 2
    return K, y, extra


def check_solver(solver: Any, family: str, *, seeds: Iterable[int] = (0, 1, 2), n: int = 30,
                 n_kernels: int = 4, rtol: float = 1e-4, **params: Any) -> list[float]:
    """Solve small seeded problems of ``family`` with ``solver`` (a name or a built solver) and
    compare with the exact ``cvxpy`` optimum; returns the relative differences."""
    import kernelfuse
    from kernelfuse.problem import objectives
    from kernelfuse.problem.instance import Problem

    family_params = {k: v for k, v in params.items() if k in _family_params(family)}
    differences = []
    for seed in seeds:
        K, y, extra = small_problem(family, seed, n, n_kernels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = kernelfuse.solve(K, y, solver=solver, family=family, **extra, **params)
            with contextlib.redirect_stdout(io.StringIO()):
                reference = kernelfuse.solve(K, y, solver="cvxpy", family=family, **extra, **family_params)
        problem = Problem.create(K, y, family, **extra, **family_params)
        again = objectives.evaluate(problem, result.coef, result.intercept, result.kernel_weights)
        _require(math.isclose(again, result.objective, rel_tol=1e-8, abs_tol=1e-10), solver,
                 f"the reported objective {result.objective:.10g} is not the one its model gives, {again:.10g}")
        differences.append(assert_within_certified(result, reference, rtol,
                                                   label=f"{_label(solver)}, seed {seed}, {family}"))
    return differences


def assert_within_certified(result: Any, reference: Any, rel_tol: float | None = None, *,
                            scale: float | None = None, label: str = "") -> float:
    """Check a solver's :class:`~kernelfuse.assembly.result.Result` against a certified interval
    ``[L, U]`` of the optimum; returns ``(P - U) / scale``.

    ``reference`` is a converged result of the ``cvxpy`` reference (its
    :attr:`~kernelfuse.assembly.result.Result.interval`) or an interval ``(L, U)``.
    With ``r`` the round-off of :func:`~kernelfuse.assembly.result.roundoff` at ``U``
    and ``scale = max(1, |U|)`` unless given, the objective ``P`` must satisfy

    * ``P >= L - r``: no model beats a certified lower bound;
    * ``P <= U + tol * scale``, ``tol`` = ``rel_tol``, by default the solver's
      own certified gap (then ``scale = max(1, |P|)``, the gap's units);

    and the solver's own lower bound, where finite, ``dual_objective <= U + r``.
    """
    from kernelfuse.assembly.result import roundoff

    where = f"{label}: " if label else ""
    if isinstance(reference, tuple):
        lower, upper = reference
    else:
        if reference.status != "converged":
            raise AssertionError(f"{where}the reference did not certify its interval: {reference.message}")
        lower, upper = reference.interval
    objective = float(result.objective)
    r = roundoff(upper, int(np.shape(result.coef)[-1]))
    if rel_tol is None:
        tol, unit = float(result.gap), max(1.0, abs(objective))
    else:
        tol, unit = rel_tol, max(1.0, abs(upper))
    unit = unit if scale is None else scale
    if not objective >= lower - r:
        raise AssertionError(f"{where}objective {objective:.12g} is below the certified lower bound "
                             f"{lower:.12g} of the optimum (by {lower - objective:.3g}, round-off {r:.3g})")
    if not objective <= upper + tol * unit:
        raise AssertionError(f"{where}objective {objective:.12g} is {(objective - upper) / unit:.3g} above "
                             f"the cvxpy optimum's certified interval [{lower:.12g}, {upper:.12g}] "
                             f"(tolerance {tol:.3g})")
    dual = float(result.dual_objective)
    if math.isfinite(dual) and not dual <= upper + r:
        raise AssertionError(f"{where}lower bound {dual:.12g} exceeds the certified upper bound "
                             f"{upper:.12g} of the optimum: an invalid certificate")
    return (objective - upper) / unit


def _family_params(family: str) -> set[str]:
    from kernelfuse.problem.families import get_family

    return {p.name for p in get_family(family).params} | {"loss"}


#: Kinds of :func:`indefinite_kernel`.
INDEFINITE_KINDS = ("one-negative", "one-negative-smooth", "low-rank-minus-one", "noisy", "sigmoid")
#: Kinds of :func:`near_singular_kernel`.
NEAR_SINGULAR_KINDS = ("wide-gaussian", "linear", "polynomial", "duplicated-points", "constant",
                       "within-tolerance")


def _gaussian(X: np.ndarray, width: float) -> np.ndarray:
    """``exp(-||x - z||^2 / (2 width^2 d))`` on the rows of X (d columns)."""
    sq = (X * X).sum(1)
    D = np.maximum(sq[:, None] + sq[None] - 2.0 * X @ X.T, 0.0)
    return np.exp(-D / (2.0 * width**2 * X.shape[1]))


def _with_eigenvalue(K: np.ndarray, index: int, value: float) -> np.ndarray:
    """``K`` (symmetric) with its ``index``-th smallest eigenvalue replaced by ``value``."""
    w, V = np.linalg.eigh(K)
    w[index] = value
    K = (V * w) @ V.T
    return (K + K.T) / 2


def indefinite_kernel(kind: str, n: int, size: float, rng: np.random.Generator) -> np.ndarray:
    """A symmetric (n, n) kernel with negative eigenvalues, for testing PSD checks.

    ``size`` is the negative part relative to the largest eigenvalue, on 10-d Gaussian
    points: ``one-negative`` a Gaussian kernel with one eigenvalue (of a random direction
    among its eigenvectors) set to ``-size lambda_max``; ``one-negative-smooth`` the same
    among its 10 leading directions; ``low-rank-minus-one`` ``F F' - size lambda_max(F F')
    g g'`` with F of random rank 2-40 and g a random unit vector; ``noisy`` a Gaussian
    kernel plus symmetric Gaussian noise of spectral norm about ``size lambda_max``;
    ``sigmoid`` ``tanh(a x'z / d + c)`` with random ``a`` in [0.5, 3], ``c`` in [-1, 1]
    (``size`` unused; indefinite for most draws, not all).
    """
    X = rng.normal(size=(n, 10))
    if kind == "sigmoid":
        return np.tanh(rng.uniform(0.5, 3.0) * (X @ X.T) / X.shape[1] + rng.uniform(-1.0, 1.0))
    if kind == "low-rank-minus-one":
        F = rng.normal(size=(n, int(rng.integers(2, 41))))
        A = F @ F.T
        g = rng.normal(size=n)
        g /= np.linalg.norm(g)
        return A - size * np.linalg.eigvalsh(A)[-1] * np.outer(g, g)
    A = _gaussian(X, rng.uniform(0.5, 2.0))
    top = np.linalg.eigvalsh(A)[-1]
    if kind == "one-negative":
        return _with_eigenvalue(A, int(rng.integers(n - 1)), -size * top)
    if kind == "one-negative-smooth":
        return _with_eigenvalue(A, n - 1 - int(rng.integers(1, 11)), -size * top)
    if kind == "noisy":
        G = rng.normal(size=(n, n))
        return A + (G + G.T) * (size * top / (2.0 * np.sqrt(2.0 * n)))
    raise ValueError(f"unknown kind {kind!r}; one of {', '.join(INDEFINITE_KINDS)}")


def near_singular_kernel(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """A PSD (n, n) kernel with many (numerically) zero eigenvalues, which a PSD check must
    accept: ``wide-gaussian`` (width 5-20 on 10-d points), ``linear`` (rank 10),
    ``polynomial`` (degree 2, rank 66), ``duplicated-points`` (a Gaussian kernel on points
    each given twice), ``constant`` (rank 1), ``within-tolerance`` (a Gaussian kernel with
    one eigenvalue set to ``-0.5e-8 lambda_max``, inside the exact check's tolerance).
    """
    X = rng.normal(size=(n, 10))
    if kind == "wide-gaussian":
        return _gaussian(X, rng.uniform(5.0, 20.0))
    if kind == "linear":
        return X @ X.T
    if kind == "polynomial":
        return (X @ X.T / X.shape[1] + 1.0) ** 2
    if kind == "duplicated-points":
        return _gaussian(np.repeat(X[: (n + 1) // 2], 2, axis=0)[:n], rng.uniform(0.5, 2.0))
    if kind == "constant":
        return np.ones((n, n))
    if kind == "within-tolerance":
        A = _gaussian(X, rng.uniform(0.5, 2.0))
        return _with_eigenvalue(A, 0, -0.5e-8 * np.linalg.eigvalsh(A)[-1])
    raise ValueError(f"unknown kind {kind!r}; one of {', '.join(NEAR_SINGULAR_KINDS)}")
