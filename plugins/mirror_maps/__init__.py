"""Mirror maps shared by several methods (kind ``mirror_map``): the entropic map on a product of simplices."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.mirror_maps.entropic_simplex import EntropicSimplices


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("mirror_map", EntropicSimplices.name, EntropicSimplices)
