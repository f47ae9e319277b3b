"""Recipes: a solver assembled by name from registered parts.

A :class:`Recipe` names a solver class (the assembler: the iteration logic
that calls its parts) and, for each role it fills, a registered component.
``Recipe.build`` creates each part from the registry, passes them to the
assembler with the solver parameters, and checks every requirement the
assembler declares (skglm's capability check: a loss without the conjugate
an optimiser needs fails here, with every missing method named at once).
Every built-in solver name is such a recipe, registered under kind
``recipe``; :mod:`kernelfuse.assembly.composition` writes one from ``{role: name}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kernelfuse.assembly.requirements import check_requirements
from kernelfuse.assembly.solver import Solver, solver_parameters
from kernelfuse.errors import IncompatiblePartsError, UnknownNameError
from kernelfuse.parts.registry import Registry, resolve_registry


def _depth(role: str) -> int:
    return role.count(".")


#: Assembler parameters a recipe sets itself, never a caller: its name and declared families.
SET_BY_RECIPE = frozenset({"name", "recipe_families"})


@attrs.frozen
class Recipe:
    """A named composition: ``assembler(**parts, **params)`` with parts from the registry.

    ``parts`` maps a role to ``(kind, registered name)``.  A dotted role
    is a part of a part: ``"oracle.svm_solver"`` is passed to the oracle's
    factory as ``svm_solver``.  At build time:

    * a parameter named like a role's last component (``svm_solver="libsvm"``)
      picks another registered component of that kind for the role;
    * any other parameter goes to whoever takes it: the assembler, or the one
      part whose factory has a parameter of that name (a name two parts take
      must be given as ``"role.name"``).

    Roles the recipe leaves out take the assembler's ``default_parts`` (an
    ``OuterLoop``'s stopping rule ``stop``: ``gap``).
    """

    name: str
    assembler: Callable[..., Solver]
    parts: Mapping[str, tuple[str, str]] = attrs.field(factory=dict)
    description: str = ""
    #: The families it solves; empty: its assembler's, where the assembler declares them (a solver
    #: class), else its oracle's (an ``OuterLoop``; :attr:`BoundRecipe.families`).
    families: frozenset[str] = attrs.field(
        default=attrs.Factory(lambda self: _declared(self.assembler), takes_self=True)
    )
    #: Parameter values this recipe uses unless the caller gives others
    #: (e.g. a penalty schedule, or BLAS threads measured best for it).
    defaults: Mapping[str, Any] = attrs.field(factory=dict)

    def all_parts(self) -> dict[str, tuple[str, str]]:
        """``parts`` over the assembler's ``default_parts`` (the stopping rule of an ``OuterLoop``)."""
        return {**getattr(self.assembler, "default_parts", {}), **self.parts}

    def bind(self, registry: Registry | None = None) -> BoundRecipe:
        """The recipe with its parts' factories looked up in ``registry`` (None: the installed
        plugins), once."""
        registry = resolve_registry(registry)
        parts = self.all_parts()
        return BoundRecipe(self, registry, parts,
                           {role: registry.get(kind, name).factory for role, (kind, name) in parts.items()})

    def parameters(self, registry: Registry | None = None) -> set[str]:
        """Every parameter name :meth:`build` accepts."""
        return self.bind(registry).parameters()

    def build(self, registry: Registry | None = None, **params: Any) -> Solver:
        """Create the parts, assemble the solver, check its requirements."""
        return self.bind(registry).build(**params)

    def __call__(self, **params: Any) -> Solver:
        return self.build(**params)


@attrs.frozen
class BoundRecipe:
    """A :class:`Recipe` whose parts' factories were looked up in one registry: what a solve
    routes its parameters with and builds from, without looking anything up again."""

    recipe: Recipe
    registry: Registry
    parts: dict[str, tuple[str, str]]
    factories: dict[str, Callable[..., Any]]

    @property
    def families(self) -> frozenset[str]:
        """The recipe's families, or where it declares none its oracle part's."""
        return self.recipe.families or frozenset(getattr(self.factories.get("oracle"), "families", ()))

    def _own(self) -> set[str]:
        return solver_parameters(self.recipe.assembler) - set(self.parts) - SET_BY_RECIPE

    def _leaf_roles(self) -> dict[str, str]:
        return {role.rsplit(".", 1)[-1]: role for role in self.parts}

    def _part_parameters(self) -> dict[str, set[str]]:
        """Parameters each part's factory takes, besides its own sub-parts."""
        return {role: solver_parameters(factory) - _children(role, self.parts)
                for role, factory in self.factories.items()}

    def parameters(self) -> set[str]:
        """Every parameter name :meth:`build` accepts."""
        accepted = self._own() | set(self._leaf_roles())
        for role, names in self._part_parameters().items():
            accepted |= names | {f"{role}.{n}" for n in names}
        return accepted

    def build(self, **params: Any) -> Solver:
        """Create the parts, assemble the solver, check its requirements.

        A parameter named like a role's last component with a string value picks another
        registered component for the role (looked up here); the others are routed once."""
        params = {**self.recipe.defaults, **params}
        parts, factories = dict(self.parts), dict(self.factories)
        leaves = self._leaf_roles()
        for key in [k for k in params if k in leaves and isinstance(params[k], str)]:
            role = leaves[key]
            kind = parts[role][0]
            factories[role] = self.registry.get(kind, params[key]).factory  # unknown: close matches
            parts[role] = (kind, params.pop(key))
        bound = attrs.evolve(self, parts=parts, factories=factories)
        who = self.recipe.name
        own = self._own()
        per_part = bound._part_parameters()
        routed: dict[str, dict[str, Any]] = {role: {} for role in parts}
        solver_params: dict[str, Any] = {}
        for key, value in params.items():
            role, _, leaf = key.rpartition(".")
            if role:
                if role not in per_part or leaf not in per_part[role]:
                    raise UnknownNameError(f"parameter of solver {who}", key, bound.parameters())
                routed[role][leaf] = value
                continue
            takers = [r for r, names in per_part.items() if key in names]
            if key in own:
                solver_params[key] = value
            elif len(takers) == 1:
                routed[takers[0]][key] = value
            elif takers:
                raise UnknownNameError(
                    f"parameter of solver {who} (ambiguous: taken by "
                    f"{', '.join(takers)}; write it as role.{key})", key,
                    {f"{r}.{key}" for r in takers},
                )
            else:
                raise UnknownNameError(f"parameter of solver {who}", key, bound.parameters())
        built: dict[str, Any] = {}
        for role in sorted(parts, key=_depth, reverse=True):
            children = {leaf: built.pop(f"{role}.{leaf}") for leaf in _children(role, parts)}
            missing = _required(factories[role]) - set(children) - set(routed[role])
            if missing:
                raise IncompatiblePartsError(
                    f"solver {who!r} cannot run: its {role} {parts[role][1]!r} needs "
                    + ", ".join(f"a {m} part (name it as role '{role}.{m}')" for m in sorted(missing)))
            built[role] = factories[role](**children, **routed[role])
        takes = solver_parameters(self.recipe.assembler)
        if "name" in takes:
            solver_params["name"] = who
        if "recipe_families" in takes and self.recipe.families:
            solver_params["recipe_families"] = self.recipe.families
        solver = self.recipe.assembler(**built, **solver_params)
        check_requirements(
            solver.parts(),
            {role: needs for role, needs in solver.requires.items() if role != "loss"},
            who,
        )
        return solver


def _declared(assembler: Callable[..., Solver]) -> frozenset[str]:
    """The families a solver class declares; none where they come from its parts (a property)."""
    families: object = getattr(assembler, "families", frozenset())
    return families if isinstance(families, frozenset) else frozenset()


def _children(role: str, parts: Mapping[str, object]) -> set[str]:
    """The last components of ``role``'s direct sub-roles (``oracle`` -> ``{"svm_solver"}``)."""
    return {r.rsplit(".", 1)[-1] for r in parts if r.startswith(role + ".") and _depth(r) == _depth(role) + 1}


def _required(factory: Callable[..., Any]) -> set[str]:
    """The parameters of an attrs part without a default: the parts a recipe must name for it."""
    if not attrs.has(factory):  # type: ignore[arg-type]
        return set()
    return {f.alias or f.name for f in attrs.fields(factory)
            if f.init and f.default is attrs.NOTHING}


#: Names that moved: ``name -> module``, deprecated aliases here.
_MOVED = {"part_with": "kernelfuse.assembly.requirements", "compose": "kernelfuse.assembly.composition",
          "ROLE_KINDS": "kernelfuse.assembly.composition"}


def __getattr__(name: str) -> object:
    """Deprecated aliases of :data:`_MOVED`."""
    if name in _MOVED:
        import importlib
        import warnings

        warnings.warn(f"kernelfuse.assembly.recipe.{name} moved to {_MOVED[name]}.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
