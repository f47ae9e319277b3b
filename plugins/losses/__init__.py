"""Losses of OBJECTIVES.md, one module each, registered under kind ``loss``."""

from __future__ import annotations

from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.plugins.losses.crammer_singer import CrammerSinger
from kernelfuse.plugins.losses.epsilon_insensitive import EpsilonInsensitive
from kernelfuse.plugins.losses.hinge import Hinge
from kernelfuse.plugins.losses.logistic import Logistic
from kernelfuse.plugins.losses.squared import Squared
from kernelfuse.plugins.losses.squared_hinge import SquaredHinge

LOSSES = (Hinge, SquaredHinge, Logistic, Squared, EpsilonInsensitive, CrammerSinger)


@hookimpl
def kernelfuse_register(registry):  # type: ignore[no-untyped-def]
    for loss in LOSSES:
        registry.add("loss", loss.name, loss)
