"""mkdocs hook: the reference of every ``kernelfuse`` command and option, generated from the parser.

docs/cli.md holds the marker ``<!-- cli-reference -->``; at build time it becomes one section per
command: its usage line and a table of its arguments (name, value, default, help), read from
``kernelfuse.frontends.cli.build_parser()``, so the page cannot drift from the program
(tests/project/test_docs.py checks that every argument has help and appears here).
"""

from __future__ import annotations

import argparse
from typing import Any

MARKER = "<!-- cli-reference -->"


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands' parsers, by name, in the order they were added."""
    return {name: sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a user gives (help and subcommand actions left out)."""
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(action: argparse.Action) -> str:
    """One argument: its name(s), the value it takes (its choices), its default or "required", its help."""
    name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
    takes_value = bool(action.option_strings) and action.nargs != 0
    value = ""
    if takes_value:
        value = (", ".join(f"`{c}`" for c in action.choices) if action.choices is not None
                 else f"`{action.metavar or action.dest.upper()}`")
    default = ("required" if action.required else
               f"`{action.default}`" if takes_value and action.default not in (None, argparse.SUPPRESS) else "")
    return f"| {name} | {value} | {default} | {_cell(action.help or '')} |"


def reference(parser: argparse.ArgumentParser) -> str:
    """Markdown: the program's own arguments, then one section per command."""
    sections = []
    for title, sub in [(parser.prog, parser), *((f"{parser.prog} {n}", s) for n, s in _commands(parser).items())]:
        rows = [_row(a) for a in arguments(sub)]
        if title != parser.prog or rows:
            head = f"### `{title}`\n\n" + (f"{_cell(sub.description)}\n\n" if sub.description else "")
            usage = sub.format_usage().removeprefix("usage: ").strip()
            table = ("| argument | value | default | what it does |\n|---|---|---|---|\n" + "\n".join(rows)
                     if rows else "No arguments.")
            sections.append(f"{head}```\n{usage}\n```\n\n{table}\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_uri != "cli.md" or MARKER not in markdown:
        return markdown
    from kernelfuse.frontends.cli import build_parser

    return markdown.replace(MARKER, reference(build_parser()))
