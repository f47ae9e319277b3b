"""Outer optimisers (kind ``optimizer``)."""

from __future__ import annotations

from kernelfuse.hookspecs import hookimpl
from kernelfuse.plugins.optimizers.mirror_descent import MirrorDescent
from kernelfuse.plugins.optimizers.reduced_gradient import ReducedGradient


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for optimizer in (MirrorDescent, ReducedGradient):
        registry.add("optimizer", optimizer.name, optimizer)
