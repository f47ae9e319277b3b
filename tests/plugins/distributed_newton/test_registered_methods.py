"""The distributed methods are registered parts: DistributedNewton picks the one that solves a
family from the registry, a plugin's as the built-in ones (no cluster needed)."""

from __future__ import annotations

from typing import ClassVar

import attrs
import pytest

import kernelfuse.plugins.distributed_newton as built_in
from kernelfuse.distributed.newton import DistributedNewton
from kernelfuse.errors import ValidationError
from kernelfuse.parts.hookspecs import hookimpl
from kernelfuse.parts.registry import Registry, get_registry
from kernelfuse.plugins.distributed_newton.proximal_newton import ProximalNewton
from kernelfuse.plugins.distributed_newton.smoothed_hinge_newton import SmoothedHingeNewton
from kernelfuse.problem.families import get_family


def test_each_family_gets_its_registered_method():
    registry = get_registry()
    assert {"proximal-newton", "smoothed-hinge-newton"} <= set(registry.names("distributed"))
    assert DistributedNewton.method(get_family("l1_mkl"), registry) is ProximalNewton
    assert DistributedNewton.method(get_family("pnorm_mkl"), registry) is SmoothedHingeNewton
    with pytest.raises(ValidationError, match="family mikl: no distributed method solves it; the registered "
                                              "ones: proximal-newton"):
        DistributedNewton.method(get_family("mikl"), registry)


@attrs.define(eq=False)
class _PluginNewton(ProximalNewton):
    """A third party's method for l1_mkl (here the built-in one under another name)."""

    name: ClassVar[str] = "a-plugin-newton"


class _Plugin:
    @hookimpl
    def kernelfuse_register(self, registry):
        registry.add("distributed", _PluginNewton.name, _PluginNewton)


def test_a_plugins_method_is_found_as_the_built_in_ones():
    registry = Registry()
    with pytest.raises(ValidationError, match="no distributed method is registered"):
        DistributedNewton.method(get_family("l1_mkl"), registry)
    registry.load_plugin(built_in, "kernelfuse")
    registry.load_plugin(_Plugin(), "a-plugin")
    assert DistributedNewton.method(get_family("l1_mkl"), registry) is _PluginNewton  # first by name
    assert DistributedNewton.method(get_family("pnorm_mkl"), registry) is SmoothedHingeNewton
