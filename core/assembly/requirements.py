"""What a solver asks of its parts: methods by role, checked all at once (skglm's capability check).

A solver declares :data:`Requirements` (``requires``); :func:`check_requirements` names every
unmet one in one :class:`~kernelfuse.errors.IncompatiblePartsError` when a recipe builds the
solver and when it meets the problem's loss; :func:`part_with` checks a part-valued field as
its owner is created.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelfuse.errors import IncompatiblePartsError

#: ``role -> methods``: each entry a method name, or a tuple meaning any one of them.
Requirements = Mapping[str, tuple[str | tuple[str, ...], ...]]


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
                problems.append(f"{role} {label!r} lacks {' or '.join(m + '()' for m in options)}")
    if problems:
        raise IncompatiblePartsError(f"solver {who!r} cannot run: " + "; ".join(problems))


def part_with(*methods: str) -> Callable[[Any, Any, Any], None]:
    """An attrs validator for a part-valued field: the part has every method named.

    Checked when the part's owner is created, so a composition that gives a
    part of the wrong sort (a mirror map where a proximal operator is
    called) fails as the solver is built, naming the role and what is missing.
    """
    def check(instance: Any, attribute: Any, value: Any) -> None:
        missing = [m for m in methods if not callable(getattr(value, m, None))]
        if missing:
            owner = getattr(instance, "name", type(instance).__name__)
            part = getattr(value, "name", type(value).__name__)
            raise IncompatiblePartsError(
                f"{owner}: its {attribute.name} {part!r} lacks "
                + ", ".join(f"{m}()" for m in missing))
    return check
