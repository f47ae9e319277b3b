"""Oracles: inner problems at an outer point (kind ``oracle``)."""

from __future__ import annotations

from kernelfuse.hookspecs import hookimpl
from kernelfuse.plugins.oracles.vskl_bca import VSKLBlockCoordinateAscent


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    registry.add("oracle", VSKLBlockCoordinateAscent.name, VSKLBlockCoordinateAscent)
