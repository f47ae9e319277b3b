"""The built site as a reader sees it: every page laid out by headless Chromium at 1366 x 900.

Measured in the browser, on the site ``make docs`` built into ``site/``: every code block and
table fits its column (no sideways scrolling), every image loads, no link opens a markdown file as raw
text, each method page shows its first figure within two screens, choosing-a-solver shows its
measured table in the first screen, and the home page a figure and code.  ``make docs-check``
builds the site, installs Playwright (the ``docs-check`` extra) and keeps screenshots of four
pages in ``build/docs-check/`` to be looked at.  Without a built site, Playwright or a Chromium
these tests skip, naming what is missing (test_docs_language.py estimates the figure
positions from the markdown everywhere).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO

SITE = REPO / "site"
DOCS = REPO / "docs"
WIDTH, SCREEN = 1366, 900
#: Where the screenshots go: ``make docs-check`` sets it to build/docs-check.
SCREENSHOTS = os.environ.get("DOCS_CHECK_SCREENSHOTS")
#: The pages whose screenshots are looked at before a release.
SHOWN = {"home": "", "choosing-a-solver": "choosing-a-solver/", "spicymkl": "methods/spicymkl/",
         "gallery-main-job": "generated/gallery/plot_01_main_job/"}
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]


def page_paths() -> list[str]:
    """The site path of every page: each markdown file of docs/, the pages the build generates
    (the benchmark scripts' page from benchmarks/README.md, the gallery's) and each example's."""
    paths = ["benchmark-scripts/", "generated/gallery/mg_execution_times/"]
    for source in sorted(DOCS.rglob("*.md")):
        relative = source.relative_to(DOCS)
        if relative.parts[0] == "generated":
            continue
        stem = relative.with_suffix("").as_posix()
        paths.append("" if stem == "index" else stem.removesuffix("/index") + "/")
    examples = sorted((REPO / "examples").glob("plot_*.py"))
    return paths + ["generated/gallery/"] + [f"generated/gallery/{e.stem}/" for e in examples]


METHOD_PAGES = [p for p in page_paths() if p.startswith("methods/") and not p.startswith("methods/notes/")]

#: Waits for MathJax and the fonts (both move the layout), then measures the page's article.
MEASURE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await document.fonts.ready;
  const article = document.querySelector('article') || document.body;
  const top = el => el.getBoundingClientRect().top + window.scrollY;
  const code = [...article.querySelectorAll('pre > code')];
  const images = [...article.querySelectorAll('img')];
  const table = article.querySelector('table');
  const firstRow = table && table.querySelector('tbody tr');
  return {
    wide: code.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => ({
      line: c.innerText.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 100),
      over: c.scrollWidth - c.clientWidth})),
    wideTables: [...article.querySelectorAll('table')].filter(t => {
      const box = t.closest('.md-typeset__scrollwrap') || t.parentElement;
      return box.scrollWidth > box.clientWidth + 1;
    }).map(t => [...t.querySelectorAll('th')].map(h => h.innerText).join(' | ').slice(0, 100)),
    broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
    raw: [...article.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
           .filter(h => !/^[a-z]+:/.test(h) && /\\.md($|#)/.test(h)),
    firstImage: images.length ? top(images[0]) : null,
    code: code.length,
    firstRowBottom: firstRow ? firstRow.getBoundingClientRect().bottom + window.scrollY : null,
    pageWidth: document.documentElement.scrollWidth,
  };
}"""


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    """The built site served on loopback (directory URLs need a server, not file://)."""
    if not (SITE / "index.html").exists():
        pytest.skip("the site is not built: `make docs` builds it into site/ (`make docs-check` runs these tests)")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser_page() -> Iterator[Any]:
    """A headless Chromium tab of 1366 x 900."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: `make docs-check` "
                                   "installs it (the docs-check extra)")
    executable = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if executable is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        tab = browser.new_page(viewport={"width": WIDTH, "height": SCREEN})
        yield tab
        browser.close()


def measured(tab: Any, url: str) -> dict[str, Any]:
    response = tab.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url}: {response.status if response else 'no response'}"
    return tab.evaluate(MEASURE)


@pytest.mark.parametrize("path", page_paths())
def test_every_code_block_and_table_fits_every_image_loads_and_no_raw_markdown_link(site_url, browser_page, path):
    page = measured(browser_page, site_url + path)
    assert not page["wide"], f"/{path}: code wider than its column at {WIDTH} px: {page['wide'][:3]}"
    assert not page["wideTables"], f"/{path}: tables wider than the column at {WIDTH} px: {page['wideTables'][:3]}"
    assert page["pageWidth"] <= WIDTH, f"/{path}: the page scrolls sideways ({page['pageWidth']} px)"
    assert not page["broken"], f"/{path}: images that do not load: {page['broken']}"
    assert not page["raw"], f"/{path}: links to markdown files, opened as raw text: {page['raw']}"


@pytest.mark.parametrize("path", METHOD_PAGES)
def test_a_method_page_shows_its_first_figure_within_two_screens(site_url, browser_page, path):
    page = measured(browser_page, site_url + path)
    assert page["firstImage"] is not None, f"/{path}: no figure"
    assert page["firstImage"] <= 2 * SCREEN, f"/{path}: first figure at {page['firstImage']:.0f} px"


def test_choosing_a_solver_shows_measured_numbers_in_its_first_screen(site_url, browser_page):
    page = measured(browser_page, site_url + "choosing-a-solver/")
    assert page["firstRowBottom"] is not None and page["firstRowBottom"] <= SCREEN, \
        f"the measured table's first row ends at {page['firstRowBottom']} px"


def test_the_home_page_shows_a_figure_and_code_in_its_first_screens(site_url, browser_page):
    page = measured(browser_page, site_url)
    assert page["code"] >= 1
    assert page["firstImage"] is not None and page["firstImage"] <= SCREEN, f"figure at {page['firstImage']} px"


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_screenshots_of_the_pages_a_newcomer_opens(site_url, browser_page, name, tmp_path):
    folder = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    measured(browser_page, site_url + SHOWN[name])
    path = folder / f"{name}.png"
    browser_page.screenshot(path=str(path))
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")) == (WIDTH, SCREEN)
