"""Recipes: a solver assembled by name from registered parts.

A :class:`Recipe` names a solver class (the assembler: the iteration logic
that calls its parts) and, for each role it fills, a registered component.
``Recipe.build`` creates each part from the registry, passes them to the
assembler with the solver parameters, and checks every requirement the
assembler declares (skglm's capability check: a loss without the conjugate
an optimiser needs fails here, with every missing method named at once).
Every built-in solver name is such a recipe, registered under kind
``solver``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kernelfuse.errors import IncompatiblePartsError, UnknownNameError
from kernelfuse.solver import Requirements, Solver, solver_parameters


def check_requirements(parts: Mapping[str, object], requires: Requirements, who: str) -> None:
    """Raise one :class:`IncompatiblePartsError` naming every unmet requirement.

    ``requires`` maps a role to the methods its part must have; a tuple
    inside means any one of those methods suffices.
    """
    problems = []
    for role, methods in requires.items():
        part = parts.get(role)
        if part is None:
            problems.append(f"no {role} was given")
            continue
        label = getattr(part, "name", type(part).__name__)
        for method in methods:
            options = (method,) if isinstance(method, str) else method
            if not any(callable(getattr(part, m, None)) for m in options):
                problems.append(f"{role} {label!r} lacks {' or '.join(options)}()")
    if problems:
        raise IncompatiblePartsError(f"solver {who!r} cannot run: " + "; ".join(problems))


@attrs.frozen
class Recipe:
    """A named composition: ``assembler(**parts, **params)`` with parts from the registry."""

    name: str
    assembler: type[Solver]
    parts: Mapping[str, tuple[str, str]] = attrs.field(factory=dict)  # role -> (kind, name)
    description: str = ""

    @property
    def families(self) -> frozenset[str]:
        return self.assembler.families

    def parameters(self) -> set[str]:
        """Solver parameters this recipe accepts (besides its parts)."""
        return solver_parameters(self.assembler) - set(self.parts)

    def build(self, registry: Any = None, **params: Any) -> Solver:
        """Create the parts, assemble the solver, check its requirements."""
        if registry is None:
            from kernelfuse.registry import get_registry

            registry = get_registry()
        accepted = self.parameters()
        for key in params:
            if key not in accepted:
                raise UnknownNameError(f"parameter of solver {self.name}", key, accepted)
        parts = {role: registry.create(kind, name) for role, (kind, name) in self.parts.items()}
        solver = self.assembler(**parts, **params)
        check_requirements(
            solver.parts(),
            {role: needs for role, needs in solver.requires.items() if role != "loss"},
            self.name,
        )
        return solver

    def __call__(self, **params: Any) -> Solver:
        return self.build(**params)
