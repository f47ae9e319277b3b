"""``kernelfuse.solve``: one call from kernel stack and targets to a result."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelfuse.assembly.recipe import SET_BY_RECIPE, BoundRecipe, Recipe
from kernelfuse.assembly.result import Iteration, Result
from kernelfuse.assembly.solver import Solver, solver_parameters
from kernelfuse.errors import UnknownNameError, ValidationError
from kernelfuse.parts.loss import Loss
from kernelfuse.parts.registry import Registry, resolve_registry
from kernelfuse.problem.families import get_family
from kernelfuse.problem.instance import Problem
from kernelfuse.validation import check_psd_value


def solve(
    K: Any,
    y: Any,
    solver: str | Mapping[str, str] | Solver = "cvxpy",
    family: str | None = None,
    *,
    loss: str | Loss | None = None,
    groups: Any = None,
    callback: Callable[[Iteration], object] | None = None,
    check_psd: str | bool = "auto",
    registry: Registry | None = None,
    sample_weight: Any = None,
    **params: Any,
) -> Result:
    """Solve an MKL problem of ``family`` with ``solver``.

    ``solver`` is a registered name, a ``{role: part name}`` mapping composed
    by :func:`kernelfuse.assembly.composition.compose`, or a built :class:`Solver`.

    ``K`` is the kernel stack (M, N, N); ``y`` the targets (N,), or (N, L)
    for the multi-label families; ``groups`` (M,) the group of each kernel
    where the family uses groups.  ``params`` mixes, by name, the family
    parameters of OBJECTIVES.md (``C``, ``C2``, ``lam``, ``p``, ``q``,
    ``r``), the loss's (``eps``) and the solver's (``tol``, ``max_iter``,
    ``seed``, ...); a name none of them takes is an error listing the
    accepted ones.  ``family`` may be left out when the solver solves one
    family only.  ``loss`` is a registered name or a :class:`Loss` object.  ``callback`` receives
    each :class:`Iteration` as recorded.  ``registry``: where every name (solver, parts, loss)
    is looked up; None: the installed plugins (:func:`~kernelfuse.parts.registry.get_registry`).

    ``check_psd`` (families that need PSD kernels; ``mikl`` takes any): ``"auto"`` a
    certificate costing about one read of the stack (symmetry by random probes, a
    Cholesky factorisation of a sampled principal submatrix, the exact check for a kernel
    it flags); True the exact check (every kernel's eigenvalues, ``O(M N^3)``); False no
    PSD check, for kernels known to be PSD (docs/reliability.md, "Input checks and their
    cost").

    ``sample_weight`` (N,): a weight ``w_i >= 0`` per sample (not all zero), making the family's
    data term ``sum_i w_i loss(y_i, f_i)`` (so ``l1_mkl``: ``P = sum_i w_i loss_i + C sum_m ||f_m||``);
    integer weights give the optimum of the problem with each row repeated ``w_i`` times.  Solvers
    that do not take weights for the family refuse them, naming those that do (``cvxpy``, and
    ``spicymkl`` for ``l1_mkl``).

    ```python
    import numpy as np, kernelfuse
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2)); y = np.sign(X[:, 0] + 0.1)
    K = np.stack([np.outer(X[:, j], X[:, j]) for j in range(2)])
    result = kernelfuse.solve(K, y, solver="cvxpy", family="l1_mkl_sq", C=1.0)
    assert result.gap < 1e-6
    ```
    """
    check_psd = check_psd_value(check_psd)
    registry = resolve_registry(registry)
    if callback is not None and not callable(callback):
        raise ValidationError(f"callback must be callable or None, got {callback!r}")
    bound: BoundRecipe | None = None  # a recipe's parts looked up once, its parameters routed once
    given: Solver | None = None
    if isinstance(solver, Solver):  # already built: its own settings (tol, max_iter, ...) may change
        given = solver
        families, name = solver.families, solver.name
        solver_keys = solver_parameters(type(solver)) - set(solver.parts()) - SET_BY_RECIPE
    elif isinstance(solver, str):
        recipe = registry.get("recipe", solver).factory
        if not isinstance(recipe, Recipe):
            raise ValidationError(f"solver {solver!r} is not registered as a Recipe")
        bound = recipe.bind(registry)
    elif isinstance(solver, Mapping):  # {role: registered name}: composed here
        from kernelfuse.assembly.composition import compose

        bound = compose(solver, registry=registry).bind(registry)
    else:
        raise ValidationError(
            "solver must be a registered name, a {role: part name} mapping or a Solver object, "
            f"got {type(solver).__name__}")
    if bound is not None:
        families, solver_keys = bound.families, bound.parameters()
        name = solver if isinstance(solver, str) else bound.recipe.name
    if family is None:
        if len(families) != 1:
            raise ValidationError(
                f"solver {name!r} solves several families "
                f"({', '.join(sorted(families))}): pass family=..."
            )
        (family,) = families
    fam = get_family(family, registry)

    loss_name = loss.name if isinstance(loss, Loss) else loss
    loss_factory = (
        registry.get("loss", loss).factory if isinstance(loss, str) else None
    )
    loss_keys = solver_parameters(loss_factory) if loss_factory is not None else set()
    family_keys = {p.name for p in fam.params}
    family_params, loss_params, solver_params = {}, {}, {}
    for key, value in params.items():
        if key in family_keys:
            family_params[key] = value
        elif key in loss_keys:
            loss_params[key] = value
        elif key in solver_keys:
            solver_params[key] = value
        else:
            raise UnknownNameError(
                f"parameter (family {fam.name}, solver {name}"
                + (f", loss {loss_name}" if loss_name else "") + ")",
                key, family_keys | loss_keys | solver_keys,
            )
    if loss_factory is not None:  # the factory looked up above: built here, not looked up again
        loss, loss_params = loss_factory(**loss_params), {}
    problem = Problem.create(
        K, y, fam, loss=loss, loss_params=loss_params, groups=groups,
        check_psd=check_psd, registry=registry, sample_weight=sample_weight, **family_params,
    )
    if given is not None:
        import attrs

        # misc: Solver is an ABC, not an attrs class; the solvers deriving from it are
        built = attrs.evolve(given, **solver_params) if solver_params else given  # type: ignore[misc]
    else:
        assert bound is not None
        built = bound.build(**solver_params)

    listeners = registry.iteration_listeners(built.name, fam.name)

    def notify(row: Iteration) -> None:  # plugin listeners, then the caller's callback
        listeners(row)
        if callback is not None:
            callback(row)

    return built.solve(problem, callback=notify, registry=registry)
