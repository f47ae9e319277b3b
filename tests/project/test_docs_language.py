"""User pages speak to users: no development jargon, and each method page shows its speed early.

The user pages are README.md and every page of docs/ except the development notes
(docs/methods/notes/, where what was tried and dropped is kept), the generated gallery
and docs/objectives.md (a verbatim copy of the shared contract).  A method page opens
with what it solves, when to use it, a runnable call and a figure of its speed, in
that order, and links its development notes at the end.

Where the first figure lands on screen is estimated from the markdown, not measured
in a browser (no headless browser is installed where the tests run): the estimate
lays the page out as mkdocs-material does at 1366 px wide (a 688 px text column
between the two sidebars, 16 px text at 25.6 px a line, code at 19 px a line,
headings with their margins), with fewer characters a line than the column holds,
so that it errs towards a lower figure.
"""

from __future__ import annotations

import importlib.util
import math
import re
import struct
from pathlib import Path
from types import ModuleType

import pytest

from helpers import REPO

DOCS = REPO / "docs"
NOTES = DOCS / "methods" / "notes"
METHOD_PAGES = sorted((DOCS / "methods").glob("*.md"))


def user_pages() -> list[Path]:
    pages = [REPO / "README.md"]
    for page in sorted(DOCS.rglob("*.md")):
        relative = page.relative_to(DOCS)
        if relative.parts[0] == "generated" or page.is_relative_to(NOTES) or page == DOCS / "objectives.md":
            continue
        pages.append(page)
    return pages


#: Phrases of the development log: an issue's number or its targets, an earlier value.
JARGON = re.compile(
    r"\bissues? #?\d+|\bthe issue\b|\bissue's\b|\btargets? of the issue\b|\(was \d[\d.,]*\)"
    r"|\btargets? \([a-z]\)|\bwas \d[\d.,]* before\b",
    re.IGNORECASE,
)


def _jargon(text: str) -> list[str]:
    return [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}" for m in JARGON.finditer(text)]


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_user_pages_have_no_development_phrases(page):
    found = _jargon(page.read_text())
    assert not found, f"{page.relative_to(REPO)} speaks of the development log: {found}"


def test_the_jargon_check_catches_each_phrase():
    for phrase in ("see issue 27", "the issue's target", "Targets of the issue", "15.1 passes (was 41)",
                   "target (b) is not met", "as the issue asks", "Issue #28"):
        assert _jargon(phrase), phrase
    for phrase in ("a known issue with libsvm", "issues a warning", "the target (a float)",
                   "the targets y", "was 41 s"):
        assert not _jargon(phrase), phrase


def test_the_development_notes_are_not_user_pages():
    assert NOTES.is_dir() and all(not p.is_relative_to(NOTES) for p in user_pages())
    assert DOCS / "methods" / "spicymkl.md" in user_pages() and REPO / "README.md" in user_pages()


# --- the method pages' order -------------------------------------------------------------

FENCE = re.compile(r"^```.*?^```\n?", re.S | re.M)
IMAGE = re.compile(r"^!\[[^\]]*\]\(([^)]+)\)", re.M)


def _sections(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^## (.+)$", FENCE.sub("", text), re.M)]


@pytest.mark.parametrize("page", METHOD_PAGES, ids=lambda p: p.name)
def test_a_method_page_opens_with_use_call_figure_then_parameters_and_mathematics(page):
    text = page.read_text()
    sections = _sections(text)
    order = ["When to use it", "A call", "Parameters that matter", "The mathematics"]
    assert [s for s in sections if s in order] == order, f"{page.name}: sections {sections}"
    assert sections[-1] == "Development notes", f"{page.name} ends with {sections[-1]!r}"
    notes = NOTES / page.name
    assert notes.exists() and f"(notes/{page.name})" in text.split("## Development notes")[1]
    assert "objectives-typeset.md" in text.split("## When to use it")[0], \
        f"{page.name}: what it solves links its family in objectives-typeset.md"
    call = text.split("## A call", 1)[1].split("\n## ", 1)[0]
    assert "```python" in call, f"{page.name}: no runnable call"
    after_code = call[call.index("```python"):]
    after_code = after_code[after_code.index("```", 3) + 3:]
    image = IMAGE.search(after_code)
    assert image and image.group(1).startswith("../../benchmarks/results/") and image.group(1).endswith(".png")
    assert not after_code[:image.start()].strip(), f"{page.name}: the figure does not follow the call"
    assert (REPO / "benchmarks" / "results" / Path(image.group(1)).name).exists()


# --- where the first figure lands ----------------------------------------------------------

SCREEN = 900            # px of the browser's viewport at 1366 x 900
HEADER = 48             # material's header bar
CHARS_PER_LINE = 80     # the 688 px column holds about 90 of 16 px Roboto; fewer, to err low
LIST_CHARS = 74         # a list item is indented
LINE, CODE_LINE = 25.6, 19.0
PARAGRAPH_GAP, CODE_BLOCK_EXTRA = 16.0, 44.0
HEADING = {1: 96.0, 2: 92.0, 3: 72.0, 4: 60.0}
TABLE_ROW = 40.0


def _rendered(text: str) -> str:
    """The words a reader sees: link targets, code ticks and emphasis marks dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[`*_]", "", text)


def _lines(text: str, width: int) -> int:
    return max(1, math.ceil(len(_rendered(text)) / width))


def estimated_offset(markdown: str, until: re.Pattern[str] = IMAGE, image_height: float = 0.0) -> float:
    """The estimated height in px, from the page's top, of the markdown before the first match of
    ``until`` (by default its first image); an image before that takes ``image_height`` px."""
    head = markdown[:until.search(markdown).start()]
    height = HEADER + 24.0  # the content's top padding
    blocks = re.split(r"(^```.*?^```\n?)", head, flags=re.S | re.M)
    for block in blocks:
        if block.startswith("```"):
            height += (block.count("\n") - 1) * CODE_LINE + CODE_BLOCK_EXTRA
            continue
        for paragraph in re.split(r"\n\s*\n", block):
            lines = paragraph.strip().splitlines()
            if not lines:
                continue
            heading = re.match(r"^(#{1,4}) ", lines[0])
            if heading:
                height += HEADING[len(heading.group(1))]
                lines = lines[1:]
                if not lines:
                    continue
            if IMAGE.match(lines[0]):
                height += image_height + PARAGRAPH_GAP
            elif lines[0].startswith("|"):
                height += TABLE_ROW * len([line for line in lines if not line.startswith("|--")])
            elif re.match(r"^\s*([-*]|\d+\.) ", lines[0]):
                items = re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", "\n".join(lines))
                height += sum(_lines(item, LIST_CHARS) * LINE + 8.0 for item in items) + PARAGRAPH_GAP
            else:
                height += _lines(" ".join(lines), CHARS_PER_LINE) * LINE + PARAGRAPH_GAP
    return height


@pytest.mark.parametrize("page", METHOD_PAGES, ids=lambda p: p.name)
def test_the_first_figure_of_a_method_page_is_within_two_screens(page):
    offset = estimated_offset(page.read_text())
    assert offset <= 2 * SCREEN, f"{page.name}: first figure at about {offset:.0f} px (two screens: {2 * SCREEN})"


def test_the_layout_estimate_counts_what_takes_room():
    one = "# Title\n\nword " * 1 + "\n\n![f](x.png)\n"
    longer = "# Title\n\n" + "word " * 800 + "\n\n```python\n" + "x = 1\n" * 30 + "```\n\n![f](x.png)\n"
    assert estimated_offset(one) < 300 < 2 * SCREEN < estimated_offset(longer)


# --- choosing a solver: the decision chart and the measured table in the first screen --------

CHOOSING = DOCS / "choosing-a-solver.md"
#: The measured table of choosing-a-solver.md (benchmarks/accuracy.py's ``solvers``).
SOLVERS_TABLE = re.compile(r"^<!-- generated: accuracy\.json solvers -->$", re.M)


def _solver_chart() -> ModuleType:
    """hooks/solver_chart.py, the mkdocs hook that draws the page's decision chart."""
    spec = importlib.util.spec_from_file_location("solver_chart", REPO / "hooks" / "solver_chart.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_choosing_a_solver_opens_with_the_chart_the_measured_table_then_the_rules_of_thumb():
    text = CHOOSING.read_text()
    chart = _solver_chart()
    image = IMAGE.search(text)
    assert image and image.group(1) == chart.SITE_PATH
    assert text[image.end():].startswith(f'{{ width="{chart.WIDTH_PX}" }}\n\n<!-- generated: accuracy.json solvers')
    assert _sections(text)[0] == "Rules of thumb"
    width, height = struct.unpack(">II", chart.png()[16:24])  # the PNG header's IHDR
    assert width == chart.WIDTH_PX * chart.DPI_SCALE
    shown = height * chart.WIDTH_PX / width
    table = estimated_offset(text, SOLVERS_TABLE, image_height=shown)
    assert estimated_offset(text) <= SCREEN / 2, "the chart starts in the upper half of the first screen"
    # the table's header and its first three rows are on the first screen
    assert table + 4 * TABLE_ROW <= SCREEN, f"the measured table starts at about {table:.0f} px"


def test_the_decision_chart_reads_at_1366_px_and_names_solvers_the_page_describes():
    from matplotlib.text import Text

    chart = _solver_chart()
    figure = chart.figure()
    texts = [t for t in figure.findobj(Text) if t.get_text()]
    assert min(t.get_fontsize() for t in texts) >= chart.MIN_POINTS >= 9
    assert all(not ax.axison for ax in figure.axes)  # boxes and arrows, no ticks
    page = CHOOSING.read_text()
    named = {name for _, names, _ in chart.STEPS for name in names.split(" / ")} | {chart.DEFAULT[0]}
    for name in named:
        assert f"| `{name.strip()}`" in page, f"the chart names {name!r}, which the solver table does not describe"
    assert chart.png() == chart.png()  # the same bytes each build
