"""The documentation's equations typeset: every $$...$$ and \\(...\\) of docs/.

The site shows TeX through MathJax in the browser (pymdownx.arithmatex,
hooks/mathjax.py); a formula MathJax rejects would show as red text there.
This runs the same MathJax (the package the `docs` extra installs) under
node over every formula of the pages, so a typo fails here instead.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import REPO

DISPLAY = re.compile(r"^\$\$\n(.*?)\n\$\$$", re.S | re.M)
INLINE = re.compile(r"\\\((.+?)\\\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")  # inline code: shown as written, never typeset


def _formulas() -> list[tuple[str, str, bool]]:
    found = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        text = CODE.sub("", FENCE.sub("", page.read_text()))
        where = str(page.relative_to(REPO))
        found += [(where, tex, True) for tex in DISPLAY.findall(text)]
        found += [(where, tex, False) for tex in INLINE.findall(DISPLAY.sub("", text))]
    return found


def _mathjax_es5() -> Path | None:
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" / "es5"


def test_pages_have_equations():
    pages = {where for where, _, _ in _formulas()}
    for page in ("docs/methods/spicymkl.md", "docs/methods/mirror-vskl.md", "docs/methods/mikl.md",
                 "docs/methods/obscure.md", "docs/methods/ml-mkl-sa.md", "docs/architecture.md",
                 "docs/objectives-typeset.md"):
        assert page in pages, f"{page} states its equations as code, not TeX"


def test_every_formula_typesets():
    es5, node = _mathjax_es5(), shutil.which("node")
    if es5 is None or node is None:
        pytest.skip("needs node and the docs extra's MathJax (pip install -e '.[docs]')")
    formulas = _formulas()
    run = subprocess.run([node, str(REPO / "tests" / "project" / "tex_check.js"), str(es5)],
                         input=json.dumps(formulas), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    *failures, summary = [json.loads(line) for line in run.stdout.splitlines()]
    assert summary == {"checked": len(formulas)}, run.stdout
    assert not failures, "\n".join(f"{f['where']}: {f['tex']!r}: {f['error']}" for f in failures)
