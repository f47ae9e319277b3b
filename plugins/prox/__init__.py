"""Proximal operators and mirror maps (kind ``prox``)."""

from __future__ import annotations

from kernelfuse.hookspecs import hookimpl
from kernelfuse.plugins.prox.block_soft_threshold import BlockSoftThreshold
from kernelfuse.plugins.prox.entropic_simplex import EntropicSimplices
from kernelfuse.plugins.prox.local_quadratic import LocalQuadraticSimplices


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for part in (EntropicSimplices, LocalQuadraticSimplices, BlockSoftThreshold):
        registry.add("prox", part.name, part)
