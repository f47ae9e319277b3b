"""The documentation's code runs: every ```python block of docs/*.md (README.md and the
tutorial, with their shell commands: test_docs_commands.py)."""

from __future__ import annotations

import re

import pytest

from helpers import COMMAND_PAGES, REPO, SHARED_DATA

PAGES = [page for page in sorted((REPO / "docs").rglob("*.md")) if page not in COMMAND_PAGES]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", [p for p in PAGES if BLOCK.search(p.read_text())],
                         ids=lambda p: p.name)
def test_python_blocks_run(page):
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for number, block in enumerate(BLOCK.findall(page.read_text()), 1):
        try:
            exec(compile(block, f"{page.name}[block {number}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{page.name}, python block {number} failed: {type(exc).__name__}: {exc}")


def test_objectives_page_is_the_shared_contract():
    """docs/objectives.md is a copy of ../shared/OBJECTIVES.md and must not drift."""
    shared = SHARED_DATA.parent / "OBJECTIVES.md"
    if not shared.exists():
        pytest.skip(f"{shared} is absent")
    assert (REPO / "docs" / "objectives.md").read_text() == shared.read_text()


def test_every_command_line_argument_has_help_and_is_in_the_reference():
    """The CLI reference of docs/cli.md is generated from the parser (hooks/cli_reference.py):
    every argument of every command has help, and the generated page names it."""
    import importlib.util

    from kernelfuse.frontends.cli import build_parser

    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    parser = build_parser()
    assert hook.MARKER in (REPO / "docs" / "cli.md").read_text()
    page = hook.reference(parser)
    commands = {"": parser, **hook._commands(parser)}
    assert set(commands) >= {"", "solve", "plugins", "demo", "fit", "predict", "families"}
    for command, sub in commands.items():
        assert f"### `kernelfuse{' ' + command if command else ''}`" in page
        for action in hook.arguments(sub):
            assert action.help and action.help.strip(), f"kernelfuse {command}: {action.dest} has no help"
            name = action.option_strings[0] if action.option_strings else action.metavar or action.dest
            assert f"`{name}`" in page, f"kernelfuse {command}: {name} missing from the reference"


def test_the_api_page_lists_every_estimator_parameter_as_help_does():
    """hooks/api_docstrings.py hands mkdocstrings the merged docstrings (every parameter, read as
    numpydoc) and plain code for Sphinx roles."""
    griffe = pytest.importorskip("griffe", reason="griffe comes with the docs extra (mkdocstrings)")
    from kernelfuse import MKLClassifier, MKLRegressor
    from kernelfuse.frontends.cv_estimators import MKLClassifierCV, MKLRegressorCV

    extensions = griffe.load_extensions(str(REPO / "hooks" / "api_docstrings.py"))
    for estimator in (MKLClassifier, MKLRegressor, MKLClassifierCV, MKLRegressorCV):
        module = griffe.load(estimator.__module__, extensions=extensions)
        docstring = module[estimator.__name__].docstring
        sections = {section.kind.value: section.value for section in docstring.parse()}
        names = [parameter.name for parameter in sections["parameters"]]
        assert sorted(names) == sorted(estimator().get_params(deep=False)), estimator.__name__
        assert all(parameter.description and parameter.description[0] != ":"
                   for parameter in sections["parameters"]), "each entry's line is its description"
        assert ":func:`" not in docstring.value and ":class:`" not in docstring.value
