"""A :class:`~kernelfuse.assembly.recipe.Recipe` composed from ``{role: registered name}``:
a TOML ``[solver]`` table, or ``solver={...}`` given to :func:`kernelfuse.solve`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelfuse.assembly.outer_loop import OuterLoop
from kernelfuse.assembly.recipe import Recipe
from kernelfuse.assembly.solver import Solver
from kernelfuse.errors import IncompatiblePartsError, UnknownNameError
from kernelfuse.parts.registry import Registry, resolve_registry

#: The kind of part each role takes, by the role's last component; a value
#: written ``"kind:name"`` names the kind itself (for roles not listed).
ROLE_KINDS = {
    "optimizer": "optimizer", "inner": "optimizer", "oracle": "oracle", "label_svms": "oracle",
    "mirror_map": "mirror_map", "prox": "prox", "svm_solver": "svm_solver", "sampler": "sampler",
    "stop": "stopping",
}


#: The assemblers a composed recipe may name.
ASSEMBLERS: dict[str, Callable[..., Solver]] = {"outer-loop": OuterLoop}


def compose(parts: Mapping[str, str], *, assembler: str = "outer-loop", name: str = "composed",
            defaults: Mapping[str, Any] | None = None, registry: Registry | None = None) -> Recipe:
    """A :class:`Recipe` from ``{role: registered name}`` (a TOML ``[solver]`` table).

    ``{"optimizer": "mirror-descent", "optimizer.mirror_map": "entropic",
    "oracle": "vskl-bca", "oracle.svm_solver": "active-set"}`` is
    ``mirror-vskl``.  Each name is looked up in the kind its role takes
    (:data:`ROLE_KINDS`, or ``"kind:name"``); an unknown role, kind or name
    is an error naming it, with close matches.  Names are looked up in ``registry`` (None: the
    installed plugins).
    """
    registry = resolve_registry(registry)
    assemblers = ASSEMBLERS
    if assembler not in assemblers:
        raise UnknownNameError("assembler", assembler, assemblers)
    resolved: dict[str, tuple[str, str]] = {}
    for role, value in parts.items():
        kind, _, part = str(value).rpartition(":")
        if not kind:
            leaf = role.rsplit(".", 1)[-1]
            if leaf not in ROLE_KINDS:
                raise UnknownNameError("role (write its part as 'kind:name')", leaf, ROLE_KINDS)
            kind = ROLE_KINDS[leaf]
        registry.get(kind, part)  # an unknown name fails here, with close matches
        resolved[role] = (kind, part)
    for role in resolved:
        parent = role.rpartition(".")[0]
        if parent and parent not in resolved:
            raise UnknownNameError(f"role {role!r}: its parent role", parent, resolved)
    families = _composed_families(resolved, registry)
    return Recipe(name, assemblers[assembler], parts=resolved, defaults=dict(defaults or {}),
                  description=f"composed: {', '.join(f'{r}={n}' for r, (_, n) in resolved.items())}",
                  families=families)


def _composed_families(parts: Mapping[str, tuple[str, str]], registry: Registry) -> frozenset[str]:
    kind, part = parts.get("oracle", ("", ""))
    if not part:
        raise IncompatiblePartsError("a composed outer loop needs an 'oracle' part")
    return frozenset(getattr(registry.get(kind, part).factory, "families", frozenset()))
