"""mkdocs hook: the benchmarks' README and figures as files of the site.

benchmarks/README.md (every benchmark script, its command and run time) becomes the page
``benchmark-scripts.md``, so that the pages' links to it open a page, not raw text: its links
into docs/ are made relative to the site's root, and the pages' links to it
(``../benchmarks/README.md`` from docs/, ``../../benchmarks/README.md`` from docs/methods/)
point to the page.  Every figure of benchmarks/results/ is served at
``benchmarks/results/NAME.png``, where the pages' links to ``../../benchmarks/results/`` land.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PAGE = "benchmark-scripts.md"


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    readme = (BENCHMARKS / "README.md").read_text().replace("](../docs/", "](")
    files.append(File.generated(config, PAGE, content=readme))
    for figure in sorted((BENCHMARKS / "results").glob("*.png")):
        files.append(File.generated(config, f"benchmarks/results/{figure.name}", abs_src_path=str(figure)))
    return files


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    depth = page.file.src_uri.count("/")
    return markdown.replace("../" * (depth + 1) + "benchmarks/README.md", "../" * depth + PAGE)
