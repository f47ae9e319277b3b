"""mkdocs hook: point the verbatim contract page to its typeset companion.

docs/objectives.md must stay a byte-for-byte copy of the shared
OBJECTIVES.md (tests/project/test_docs.py), so its formulas stay plain
text; the site shows a note above it linking docs/objectives-typeset.md,
added here at build time without touching the file.
"""

from __future__ import annotations

from typing import Any

NOTE = ('!!! note "Typeset"\n'
        "    The same formulas as equations: [The objectives, typeset](objectives-typeset.md).\n"
        "    This page is the shared contract, kept verbatim.\n\n")


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    return NOTE + markdown if page.file.src_uri == "objectives.md" else markdown
