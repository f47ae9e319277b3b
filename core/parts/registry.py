"""The component registry, filled by plugins through pluggy entry points.

:func:`load_registry` finds the entry points of the group ``kernelfuse`` (sorted, kernelfuse's
own first, so the order never depends on the environment), imports each on its own (a failure or
a misspelt hook is a warning naming the entry point and its distribution) and calls each
plugin's ``kernelfuse_register`` on its own, so every component records its provider; a hook's
registrations are all-or-nothing.  A name taken in its kind, or a look-alike of one
(:func:`lookalike_key`), is reported and the first kept.  An iteration listener that raises is
reported once per solve and not called again in it (:meth:`Registry.iteration_listeners`).
The steps: docs/architecture.md, plugin loading.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import pluggy

from kernelfuse.errors import UnknownNameError, ValidationError
from kernelfuse.kernels import functions
from kernelfuse.parts import hookspecs

#: The kinds of component a plugin can register.
KINDS = (
    "loss",
    "prox",
    "mirror_map",
    "oracle",
    "optimizer",
    "svm_solver",
    "sampler",
    "stopping",
    "kernel",
    "recipe",
    "family",
    "distributed",
)
#: Former kind names, still accepted (with a ``DeprecationWarning``): old -> current.  ``solver``
#: named the kind that holds :class:`~kernelfuse.Recipe` objects, beside the ``Solver`` class and
#: the ``svm_solver`` kind.
KIND_ALIASES = {"solver": "recipe"}


def current_kind(kind: str) -> str:
    """``kind``, or the current name of a former one (warning that it is deprecated)."""
    current = KIND_ALIASES.get(kind)
    if current is None:
        return kind
    warnings.warn(f"component kind {kind!r} is now called {current!r}; {kind!r} will be removed",
                  DeprecationWarning, stacklevel=3)
    return current

ENTRY_POINT_GROUP = hookspecs.PROJECT
BUILTIN_DISTRIBUTION = "kernelfuse"


class PluginWarning(UserWarning):
    """A plugin could not be loaded or registered; the rest keeps working."""


def canonical_name(name: str) -> str:
    """Component names compare case-insensitively, ``_`` and ``-`` alike."""
    return name.strip().lower().replace("_", "-")


def lookalike_key(name: str) -> str:
    """What two names must not share to be told apart: the name lower-cased, without
    ``-``, ``_`` and spaces (``spicy_mkl`` and ``SpicyMKL`` both give ``spicymkl``)."""
    return "".join(c for c in name.lower() if c not in "-_ ")


def describe(factory: Callable[..., Any]) -> str:
    """The factory's own ``description`` string, else the first line of its docstring."""
    own = getattr(factory, "description", None)
    if isinstance(own, str) and own:
        return own.strip().splitlines()[0]
    doc = inspect.getdoc(factory) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


@attrs.frozen
class Entry:
    """One registered component."""

    kind: str
    name: str
    # A class or function, or for kind recipe a Recipe (with its build, parameters, families).
    factory: Any
    description: str
    provider: str  # the distribution that registered it


class Registry:
    """Named component factories, by kind."""

    def __deepcopy__(self, memo: dict[int, object]) -> Registry:
        """Itself: an estimator's copy (scikit-learn's ``clone``) looks names up where the
        original does."""
        return self

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self._provider = "(direct)"
        self._plugins: pluggy.PluginManager | None = None
        #: The distribution of each plugin loaded, by its name in ``_plugins``.
        self._distributions: dict[str, str] = {}

    def load_plugin(self, plugin: object, provider: str = "(direct)") -> None:
        """Load a plugin object as an installed entry point is loaded: its
        ``kernelfuse_register`` hook runs and its other hooks (``kernelfuse_iteration``)
        listen from now on.  For trying a plugin before packaging it.  A failing
        ``kernelfuse_register`` raises and leaves nothing of the plugin behind."""
        if self._plugins is None:
            self._plugins = pluggy.PluginManager(hookspecs.PROJECT)
            self._plugins.add_hookspecs(hookspecs)
        self.register_plugin(plugin, provider)
        self._distributions[self._plugins.register(plugin) or ""] = provider

    def iteration_listeners(self, solver: str, family: str) -> Callable[[object], None]:
        """A function passing each history row of one solve to every loaded plugin's
        ``kernelfuse_iteration`` hook.  A listener that raises is reported once, in a
        :class:`PluginWarning` naming its distribution and the error, and is not called
        again in this solve."""
        dropped: set[str] = set()

        def notify(row: object) -> None:
            if self._plugins is None:
                return
            arguments = {"solver": solver, "family": family, "row": row}
            for listener in reversed(self._plugins.hook.kernelfuse_iteration.get_hookimpls()):
                if listener.plugin_name in dropped:
                    continue
                try:
                    listener.function(**{name: arguments[name] for name in listener.argnames})
                except Exception as exc:  # a broken listener must not end the solve
                    dropped.add(listener.plugin_name)
                    where = self._distributions.get(listener.plugin_name, listener.plugin_name)
                    warnings.warn(
                        f"the kernelfuse_iteration listener of plugin distribution {where} raised "
                        f"{type(exc).__name__}: {exc}; it is not called again in this solve "
                        f"(solver {solver!r})", PluginWarning, stacklevel=2)
        return notify

    def add(
        self,
        kind: str,
        name: str,
        factory: Callable[..., Any],
        *,
        description: str | None = None,
    ) -> None:
        """Register ``factory`` as component ``name`` of ``kind``."""
        kind = current_kind(kind)
        if kind not in self._entries:
            raise UnknownNameError("component kind", kind, KINDS)
        key = _key(kind, name)
        if not lookalike_key(key):
            raise ValidationError(f"a {kind} name needs a letter or digit, got {name!r} "
                                  f"(from {self._provider})")
        previous = self._entries[kind].get(key) or next(
            (e for e in self._entries[kind].values() if lookalike_key(e.name) == lookalike_key(key)),
            None)
        if previous is not None:
            why = ("the name is already registered" if previous.name == key else
                   f"it looks like {previous.name!r} (names are compared without case, '-', '_' "
                   "and spaces), registered")
            warnings.warn(
                f"{kind} {name!r} from {self._provider} ignored: {why} by {previous.provider}",
                PluginWarning,
                stacklevel=2,
            )
            return
        self._entries[kind][key] = Entry(
            kind, key, factory,
            describe(factory) if description is None else description,
            self._provider,
        )

    def get(self, kind: str, name: str) -> Entry:
        """The entry ``name`` of ``kind``; an error lists close matches."""
        kind = current_kind(kind)
        if kind not in self._entries:
            raise UnknownNameError("component kind", kind, KINDS)
        try:
            return self._entries[kind][_key(kind, name)]
        except KeyError:
            what = "solver" if kind == "recipe" else kind.replace("_", " ")  # as the user picks one
            raise UnknownNameError(what, name, self._entries[kind]) from None

    def create(self, kind: str, name: str, **params: Any) -> Any:
        """Build component ``name`` of ``kind`` with ``params``."""
        return self.get(kind, name).factory(**params)

    def names(self, kind: str) -> list[str]:
        """Registered names of ``kind``, sorted."""
        kind = current_kind(kind)
        if kind not in self._entries:
            raise UnknownNameError("component kind", kind, KINDS)
        return sorted(self._entries[kind])

    def __iter__(self) -> Iterator[Entry]:
        for kind in KINDS:
            yield from (self._entries[kind][n] for n in sorted(self._entries[kind]))

    def register_plugin(self, plugin: object, provider: str) -> None:
        """Run ``plugin``'s ``kernelfuse_register`` hook, recording ``provider``."""
        hook = getattr(plugin, "kernelfuse_register", None)
        if hook is None:
            return
        self._provider = provider
        before = {kind: dict(entries) for kind, entries in self._entries.items()}
        try:
            hook(registry=self)
        except BaseException:
            self._entries = before  # all or nothing: none of its registrations stay
            raise
        finally:
            self._provider = "(direct)"


def _key(kind: str, name: object) -> str:
    """The canonical name a component is stored under; a name must be text."""
    if not isinstance(name, str):
        raise ValidationError(f"a {kind} name must be a string, got {name!r}")
    return canonical_name(name)


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)

    def order(ep: importlib.metadata.EntryPoint) -> tuple[bool, str, str]:
        dist = ep.dist.name if ep.dist is not None else ""
        return (dist != BUILTIN_DISTRIBUTION, dist, ep.name)

    return sorted(found, key=order)


def _misspelt_hooks(manager: pluggy.PluginManager, plugin: object) -> list[str]:
    """Hook implementations of ``plugin`` that match no hookspec."""
    callers = manager.get_hookcallers(plugin) or []
    return [caller.name for caller in callers if caller.spec is None]


def load_registry(entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> Registry:
    """A new registry filled from the ``kernelfuse`` entry points."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    registry = Registry()
    for ep in _entry_points() if entry_points is None else entry_points:
        dist = ep.dist.name if ep.dist is not None else "(unknown distribution)"
        label = f"kernelfuse plugin {ep.name!r} (entry point {ep.value!r} of distribution {dist})"
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken plugin must not stop the others
            warnings.warn(f"{label} failed to import: {type(exc).__name__}: {exc}",
                          PluginWarning, stacklevel=2)
            continue
        try:
            registry._distributions[manager.register(plugin, name=f"{dist}:{ep.name}") or ""] = dist
        except Exception as exc:
            warnings.warn(f"{label} is not a valid plugin: {exc}", PluginWarning, stacklevel=2)
            continue
        misspelt = _misspelt_hooks(manager, plugin)
        if misspelt:
            manager.unregister(plugin)
            warnings.warn(
                f"{label} implements unknown hook(s) {', '.join(misspelt)}; known hooks: "
                f"{', '.join(sorted(manager.hook.__dict__))}. The plugin was not loaded.",
                PluginWarning, stacklevel=2,
            )
            continue
        try:
            registry.register_plugin(plugin, provider=dist)
        except Exception as exc:
            manager.unregister(plugin)
            warnings.warn(f"{label} failed while registering: {type(exc).__name__}: {exc}; none "
                          "of its components were kept and the plugin was not loaded",
                          PluginWarning, stacklevel=2)
    registry._plugins = manager
    return registry


_REGISTRY: Registry | None = None


def get_registry(*, reload: bool = False) -> Registry:
    """The process-wide registry, loaded from entry points on first use."""
    global _REGISTRY
    if _REGISTRY is None or reload:
        _REGISTRY = load_registry()
    return _REGISTRY


def resolve_registry(registry: Registry | None) -> Registry:
    """``registry``, or where None the process-wide one (:func:`get_registry`): where every
    function taking a ``registry=`` looks names up.  Anything else is a :class:`ValidationError`."""
    if registry is None:
        return get_registry()
    if not isinstance(registry, Registry):
        raise ValidationError(f"registry must be a kernelfuse Registry or None, got {registry!r:.80}")
    return registry


def kernel_factory(name: str) -> Callable[..., Any]:
    """The factory of the kernel ``name`` in the process-wide registry: what a
    :class:`~kernelfuse.kernels.functions.KernelSpec` of a kernel name is built with."""
    return get_registry().get("kernel", name).factory


functions.install_kernel_factory(kernel_factory)
