"""mkdocs hook: benchmarks/README.md (every benchmark script, its command and run time) as the
site page ``benchmark-scripts.md``, so that the pages' links to it open a page, not raw text.

The README stays beside the scripts it describes; at build time its links into docs/ are made
relative to the site's root, and the pages' links to it (``../benchmarks/README.md`` from
docs/, ``../../benchmarks/README.md`` from docs/methods/) point to the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parents[1] / "benchmarks" / "README.md"
PAGE = "benchmark-scripts.md"


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    files.append(File.generated(config, PAGE, content=README.read_text().replace("](../docs/", "](")))
    return files


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    depth = page.file.src_uri.count("/")
    return markdown.replace("../" * (depth + 1) + "benchmarks/README.md", "../" * depth + PAGE)
