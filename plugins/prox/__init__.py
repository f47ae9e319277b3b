"""Proximal operators shared by several methods (kind ``prox``): block soft-thresholding."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.prox.block_soft_threshold import BlockSoftThreshold


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("prox", BlockSoftThreshold.name, BlockSoftThreshold)
