"""Stopping rules of the outer loop (kind ``stopping``): ``gap``, ``objective-change``, ``estimate-change``."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.stopping.rules import CertifiedGap, EstimateChange, ObjectiveChange


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for rule in (CertifiedGap, ObjectiveChange, EstimateChange):
        registry.add("stopping", rule.name, rule)
