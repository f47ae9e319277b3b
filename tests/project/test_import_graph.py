"""The layer rules of docs/architecture.md, checked on every import of core/, plugins/ and contrib/.

Every ``.py`` file is parsed with ``ast``; module-level and function-level imports count
alike, only those under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPO

BASE = {"kernelfuse.errors", "kernelfuse.validation", "kernelfuse.runtime.bandwidth"}
# Each core layer and the layers it may import (itself included).
LAYERS = {
    "runtime": {"base", "runtime"},
    "numerics": {"base", "runtime", "numerics"},
    "kernels": {"base", "runtime", "numerics", "kernels"},
    "parts": {"base", "runtime", "numerics", "kernels", "parts"},
    "problem": {"base", "runtime", "numerics", "kernels", "parts", "problem"},
    "assembly": {"base", "runtime", "numerics", "kernels", "parts", "problem", "assembly"},
    "distributed": {"base", "runtime", "numerics", "kernels", "parts", "problem", "assembly", "distributed"},
}
CONTRIB_PUBLIC = {"kernelfuse", "kernelfuse.testing"}


def module_name(path: Path) -> str:
    """The import name of a file of core/ or plugins/."""
    for root, prefix in (("core", ("kernelfuse",)), ("plugins", ("kernelfuse", "plugins"))):
        if path.is_relative_to(REPO / root):
            parts = path.relative_to(REPO / root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join(prefix + parts)
    raise ValueError(path)


def source_files(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in REPO.glob(pattern) if "build" not in p.parts)


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.AST, package: str) -> Iterator[tuple[int, str]]:
    """(line, module) of every import that runs; ``from a import b`` names ``a.b`` when it is a module."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking(child):
                stack.append(ast.Module(body=child.orelse, type_ignores=[]))  # its else branch runs
                continue
            if isinstance(child, ast.Import):
                yield from ((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                named = {f"{base}.{alias.name}" for alias in child.names}
                yield from sorted({(child.lineno, m if is_module(m) else base) for m in named})
            stack.append(child)


def file_of(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "kernelfuse":
        return None
    root, rest = (REPO / "plugins", parts[2:]) if parts[1:2] == ["plugins"] else (REPO / "core", parts[1:])
    return root.joinpath(*rest)


def is_module(name: str) -> bool:
    path = file_of(name)
    return path is not None and (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file())


def layer(name: str) -> str:
    """The layer of a core module: 'base', a LAYERS key, or 'top' (anything else in core)."""
    if name in BASE:
        return "base"
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "top"


def package_of(path: Path, name: str) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def kernelfuse_imports(path: Path, name: str) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for line, target in imports(tree, package_of(path, name)):
        if target == "kernelfuse" or target.startswith("kernelfuse."):
            yield line, target


def violations_of_core(path: Path) -> list[str]:
    name = module_name(path)
    own = layer(name)
    found = []
    for line, target in kernelfuse_imports(path, name):
        where = f"{path.relative_to(REPO)}:{line} imports {target}"
        if target == "kernelfuse.plugins" or target.startswith("kernelfuse.plugins."):
            found.append(f"{where} (core never imports the plugins)")
        elif own == "base":
            if layer(target) != "base":
                found.append(f"{where} (a base module imports only base modules: {sorted(BASE)})")
        elif own != "top" and layer(target) not in LAYERS[own]:
            found.append(f"{where} (layer {own} imports only {sorted(LAYERS[own])})")
    return found


def violations_of_plugin(path: Path) -> list[str]:
    name = module_name(path)
    folder = ".".join(name.split(".")[:3])
    found = []
    for line, target in kernelfuse_imports(path, name):
        if target.startswith("kernelfuse.plugins") and not (target == folder or target.startswith(folder + ".")):
            found.append(f"{path.relative_to(REPO)}:{line} imports {target} (a plugin folder imports core and "
                         f"its own folder only)")
    return found


def public_names() -> set[str]:
    """``kernelfuse.__all__``, read from core/__init__.py."""
    tree = ast.parse((REPO / "core" / "__init__.py").read_text())
    (names,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
    return set(ast.literal_eval(names))


def violations_of_contrib(path: Path) -> list[str]:
    """Imports of modules other than ``kernelfuse`` and ``kernelfuse.testing``, and names of
    ``kernelfuse`` (``from kernelfuse import X``, ``kernelfuse.X``) outside its ``__all__``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    found = [f"{where}:{line} imports {target} (contrib uses the public API: {sorted(CONTRIB_PUBLIC)})"
             for line, target in imports(tree, "")
             if (target == "kernelfuse" or target.startswith("kernelfuse.")) and target not in CONTRIB_PUBLIC]
    public = public_names()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "kernelfuse" and not node.level:
            used = [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "kernelfuse":
            used = [(node.lineno, node.attr)]
        else:
            continue
        found += [f"{where}:{line} uses kernelfuse.{name}, not in kernelfuse.__all__"
                  for line, name in used if name not in public and name != "testing"]
    return found


CORE = source_files("core/**/*.py")
PLUGINS = source_files("plugins/*/**/*.py")
CONTRIB = source_files("contrib/*/src/**/*.py", "contrib/*/tests/**/*.py")


@pytest.mark.parametrize(("files", "check"), [
    pytest.param(CORE, violations_of_core, id="core-layers"),
    pytest.param(PLUGINS, violations_of_plugin, id="plugin-folders"),
    pytest.param(CONTRIB, violations_of_contrib, id="contrib-public-api"),
])
def test_layer_rules(files, check):
    assert files, "no source files found"
    found = [v for path in files for v in check(path)]
    assert not found, "\n".join(found)


def test_the_checker_sees_what_it_must():
    """Function-level and relative imports count; TYPE_CHECKING imports do not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kernelfuse.assembly import solver\nelse:\n    import kernelfuse.kernels\n"
        "def f():\n    from kernelfuse.plugins.svm import active_set\n"
        "from ..problem import instance\n"
        "from kernelfuse import errors, solve\n"
    )
    found = sorted(t for _, t in imports(ast.parse(source), "kernelfuse.parts"))
    assert found == ["kernelfuse", "kernelfuse.errors", "kernelfuse.kernels", "kernelfuse.plugins.svm.active_set",
                     "kernelfuse.problem.instance", "typing"]
    assert layer("kernelfuse.problem.instance") == "problem" and layer("kernelfuse.testing") == "top"


def test_contrib_checker_refuses_internals(tmp_path):
    """A module path, or a name of ``kernelfuse`` outside its ``__all__``, is reported."""
    source = tmp_path / "plugin.py"
    source.write_text("import kernelfuse\nfrom kernelfuse import Recipe, get_family, objectives\n"
                      "from kernelfuse.problem import duality\nkernelfuse.solve\nkernelfuse.problem\n")
    found = violations_of_contrib(source)
    assert [v.split(" ", 1)[1] for v in found] == [
        "imports kernelfuse.problem.duality (contrib uses the public API: ['kernelfuse', 'kernelfuse.testing'])",
        "uses kernelfuse.objectives, not in kernelfuse.__all__",
        "uses kernelfuse.problem, not in kernelfuse.__all__",
    ]


#: Import cycles allowed in core, each with its reason: a model file holds an estimator, which
#: saves itself (both imports run on use).
ALLOWED_CYCLES = [{"kernelfuse.frontends.estimators", "kernelfuse.frontends.persistence"}]


def _core_import_graph() -> dict[str, set[str]]:
    """Each core module's imports of core modules, at module level and inside functions alike."""
    graph = {}
    for path in CORE:
        name = module_name(path)
        found = set()
        for _, target in kernelfuse_imports(path, name):
            while target and not is_module(target):
                target = target.rpartition(".")[0]
            if target not in ("", "kernelfuse", name):
                found.add(target)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v] & graph.keys():
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_core_has_no_import_cycle():
    """Lazy imports count: a cycle held apart by an import inside a function is still one
    (recipe, solver and outer_loop were: the requirements and the composition now stand apart)."""
    assert [c for c in _cycles(_core_import_graph()) if c not in ALLOWED_CYCLES] == []


def test_a_lazy_import_cycle_is_found():
    graph = {"kernelfuse.a": {"kernelfuse.b"}, "kernelfuse.b": {"kernelfuse.c"}, "kernelfuse.c": {"kernelfuse.a"},
             "kernelfuse.d": {"kernelfuse.a"}}
    assert _cycles(graph) == [{"kernelfuse.a", "kernelfuse.b", "kernelfuse.c"}]
