"""Plugin discovery through real entry points (fake installed distributions)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelfuse import UnknownNameError
from kernelfuse.parts.registry import PluginWarning, Registry, get_registry, load_registry

#: The plugin packages of contrib/ and what they register (`make test` installs them).
CONTRIB = {"kernelfuse-robust-losses": [("loss", "huber"), ("loss", "pinball")],
           "kernelfuse-alignment": [("recipe", "alignment")],
           "kernelfuse-lq-mkl": [("family", "lq_mkl")]}


def make_distribution(root: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """An installed distribution as importlib.metadata sees it: dist-info + modules."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[kernelfuse]\n{lines}")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


GOOD = """
    import numpy as np
    from kernelfuse.parts.hookspecs import hookimpl
    from kernelfuse.parts.loss import Loss

    class Huber(Loss):
        '''Huber loss for tests.'''
        name = "huber-test"
        target = "real"
        def value(self, y, f):
            r = np.abs(y - f)
            return np.where(r <= 1, 0.5 * r**2, r - 0.5)

    class FakeHinge(Huber):
        '''A second hinge, which must not replace the built-in one.'''

    @hookimpl
    def kernelfuse_register(registry):
        registry.add("loss", "huber-test", Huber)
        registry.add("loss", "hinge", FakeHinge)
"""


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    make_distribution(tmp_path, "goodplug", {"good": "goodplug_mod"}, {"goodplug_mod": GOOD})
    make_distribution(tmp_path, "brokenplug", {"broken": "brokenplug_mod"},
                      {"brokenplug_mod": "raise ImportError('missing dependency xyz')\n"})
    make_distribution(tmp_path, "typoplug", {"typo": "typoplug_mod"}, {"typoplug_mod": """
        from kernelfuse.parts.hookspecs import hookimpl
        @hookimpl
        def kernelfuse_regster(registry):
            registry.add("loss", "never", object)
    """})
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_builtins_register_through_their_entry_points():
    registry = load_registry()
    losses = {e.name: e for e in registry if e.kind == "loss"}
    builtin = {"hinge", "squared-hinge", "logistic", "squared", "eps-insensitive", "crammer-singer"}
    assert builtin <= set(losses)
    assert all(losses[name].provider == "kernelfuse" for name in builtin)
    assert "cvxpy" in registry.names("recipe")
    assert registry.get("recipe", "cvxpy").provider == "kernelfuse"


def test_third_party_plugins_broken_and_misspelt_ones(third_party):
    with pytest.warns(PluginWarning) as caught:
        registry = load_registry()
    messages = [str(w.message) for w in caught]
    # A third-party component is found and attributed to its distribution.
    huber = registry.get("loss", "huber-test")
    assert huber.provider == "goodplug"
    assert huber.description == "Huber loss for tests."
    assert registry.create("loss", "Huber_Test").value(1.0, 3.0) == pytest.approx(1.5)
    # The broken plugin is named with its distribution and error; the rest works.
    assert any("'broken'" in m and "brokenplug" in m and "missing dependency xyz" in m
               for m in messages)
    # A misspelt hook is reported, not silently ignored.
    assert any("kernelfuse_regster" in m and "typoplug" in m for m in messages)
    assert "never" not in registry.names("loss")
    # A duplicate name keeps the built-in and names both providers.
    assert registry.get("loss", "hinge").provider == "kernelfuse"
    assert any("'hinge'" in m and "goodplug" in m and "kernelfuse" in m for m in messages)


def test_uninstalled_plugin_is_not_seen():
    """Without the fake distribution on the path (the fixture is undone), no trace of it."""
    registry = load_registry()
    assert "huber-test" not in registry.names("loss")
    assert {e.provider for e in registry} <= {"kernelfuse"} | set(CONTRIB)  # contrib/, when installed


def test_unknown_names_list_close_matches():
    registry = get_registry()
    with pytest.raises(UnknownNameError) as info:
        registry.get("loss", "logistc")
    assert info.value.close_matches == ["logistic"]
    assert "did you mean 'logistic'" in str(info.value)
    with pytest.raises(UnknownNameError, match="component kind"):
        registry.get("losses", "hinge")


def test_the_former_kind_solver_is_recipe_with_a_deprecation_warning():
    registry = Registry()
    recipe = get_registry().get("recipe", "average").factory
    with pytest.warns(DeprecationWarning, match="'solver' is now called 'recipe'"):
        registry.add("solver", "my-average", recipe)
    assert registry.names("recipe") == ["my-average"]
    with pytest.warns(DeprecationWarning, match="'solver' is now called 'recipe'"):
        assert registry.get("solver", "my-average").kind == "recipe"


def test_names_are_canonical_and_unique():
    registry = Registry()

    class Thing:
        """A thing."""

    registry.add("sampler", "Uniform_Labels", Thing)
    assert registry.names("sampler") == ["uniform-labels"]
    assert registry.get("sampler", "uniform_labels").description == "A thing."
    with pytest.warns(PluginWarning, match="already registered"):
        registry.add("sampler", "uniform-labels", object)
    assert registry.get("sampler", "uniform-labels").factory is Thing



def test_contrib_packages_are_seen_only_when_installed():
    """The packages in contrib/ register through their own entry points: without them
    (here: their entry points left out, as if uninstalled) kernelfuse does not see them."""
    import importlib.metadata

    points = list(importlib.metadata.entry_points(group="kernelfuse"))
    installed = {ep.dist.name for ep in points if ep.dist is not None} & set(CONTRIB)
    if not installed:
        pytest.skip("no contrib package is installed here (`make test` installs them)")
    without = load_registry([ep for ep in points if ep.dist is None or ep.dist.name not in CONTRIB])
    full = load_registry(points)
    for dist in installed:
        for kind, name in CONTRIB[dist]:
            assert full.get(kind, name).provider == dist
            with pytest.raises(UnknownNameError):
                without.get(kind, name)


def test_iteration_listeners_see_every_history_row():
    """A plugin's kernelfuse_iteration hook receives each row the result's history keeps."""
    import types

    import numpy as np

    import kernelfuse
    from kernelfuse.parts.hookspecs import hookimpl

    seen = []
    listener = types.SimpleNamespace(
        kernelfuse_iteration=hookimpl(lambda solver, row: seen.append((solver, row))))
    registry = load_registry()
    registry.load_plugin(listener, provider="csv-logger")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    K = np.stack([np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / w) for w in (0.5, 2.0)])
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    calls = []
    result = kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=1.0,
                              registry=registry, callback=calls.append)
    assert [row for _, row in seen] == list(result.history) == calls
    assert {solver for solver, _ in seen} == {"mirror-vskl"} and len(seen) >= 2
    # The process-wide registry has no such listener: nothing more is recorded.
    kernelfuse.solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=1.0)
    assert len(seen) == len(result.history)
