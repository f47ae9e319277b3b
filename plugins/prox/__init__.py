"""Proximal operators and mirror maps (kind ``prox``)."""

from __future__ import annotations

from kernelfuse.hookspecs import hookimpl
from kernelfuse.plugins.prox.block_soft_threshold import BlockSoftThreshold
from kernelfuse.plugins.prox.entropic_simplex import EntropicSimplices


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for part in (EntropicSimplices, BlockSoftThreshold):
        registry.add("prox", part.name, part)
