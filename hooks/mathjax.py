"""mkdocs hook: serve MathJax from the installed package, never from a CDN.

The `docs` extra installs django-static-mathjax (MathJax 3 as package data);
this hook adds its self-contained SVG bundle (`es5/tex-svg.js`: TeX input,
SVG output, glyphs inlined, so no font files) to the site as
`assets/mathjax/tex-svg.js`, which `extra_javascript` in mkdocs.yml loads
after `javascripts/mathjax-config.js`.  The build reads no network.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

SITE_PATH = "assets/mathjax/tex-svg.js"


def _bundle() -> Path:
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise PluginError("MathJax is not installed: pip install -e '.[docs]' (django-static-mathjax)")
    bundle = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" / "es5" / "tex-svg.js"
    if not bundle.is_file():
        raise PluginError(f"MathJax's bundle {bundle} is missing: reinstall django-static-mathjax")
    return bundle


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, SITE_PATH, abs_src_path=str(_bundle())))
    return files
