"""The kernelfuse plugin hooks: the one module a plugin author reads.

A plugin is a module (or object) in the ``kernelfuse`` entry-point group of its distribution
(``[project.entry-points.kernelfuse]``, ``my-plugin = "my_package.plugin"``) that implements
hooks below, marked with :data:`hookimpl`: ``kernelfuse_register(registry)`` adds components.
Hooks are always called with keyword arguments, so an implementation may take any subset of a
hook's arguments, in any order, but none with a default (pluggy never fills those).  A function
named ``kernelfuse_...`` that matches no hook is reported when the plugin loads.  kernelfuse's
own plugins register through exactly this path (docs/writing-a-plugin.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from kernelfuse.assembly.result import Iteration
    from kernelfuse.parts.registry import Registry

PROJECT = "kernelfuse"

hookspec = pluggy.HookspecMarker(PROJECT)
#: Mark a plugin function as the implementation of a kernelfuse hook.
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def kernelfuse_register(registry: Registry) -> None:
    """Add this plugin's components to ``registry``.

    Call ``registry.add(kind, name, factory, description=...)`` once per
    component.  ``kind`` is one of :data:`kernelfuse.parts.registry.KINDS`
    (``loss``, ``prox``, ``mirror_map``, ``oracle``, ``optimizer``,
    ``svm_solver``, ``sampler``, ``stopping``, ``kernel``, ``recipe``, ``family``,
    ``distributed``); ``factory`` is a
    class or callable building the component from keyword parameters; the
    description defaults to the first line of the factory's docstring.  An empty name is
    an error and a look-alike of a registered one (``spicy_mkl`` beside ``spicymkl``) is
    refused; if the hook raises, none of its registrations are kept.
    """


@hookspec
def kernelfuse_iteration(solver: str, family: str, row: Iteration) -> None:
    """Called after every outer iteration of every solver run through :func:`kernelfuse.solve`.

    ``row`` is the history row just recorded (:class:`kernelfuse.assembly.result.Iteration`):
    iteration number, objective, certified lower bound and gap, time, and
    ``counters`` (``active_kernels``, ``svm_calls``, ``kernel_passes``, the
    optimiser's ``step`` where it has one, and a solver's own readings, e.g.
    ML-MKL-SA's ``saddle_gap_estimate`` and ``step_kernels`` / ``step_labels``).  The
    result's history and the CLI's progress lines are built on the same
    rows.  A listener must not modify the row; what it returns is ignored.  A listener
    that raises does not end the solve: it is reported once, in a
    :class:`~kernelfuse.parts.registry.PluginWarning` naming its distribution, and not called
    again in that solve.
    """
