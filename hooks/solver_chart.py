"""mkdocs hook: the decision chart of docs/choosing-a-solver.md, drawn by matplotlib at build time.

The chart is the questions a user asks, in the order the page answers them (:data:`STEPS`):
each "yes" leads right to the solver(s) for that case, each "no" down to the next question,
and the last "no" to the default, ``spicymkl``.  It is drawn here, at build time, rather than
committed as a PNG so that the picture cannot drift from its text: the questions and answers
are the data below, a change to them is a change to the chart, and
``tests/project/test_docs_language.py`` checks that every solver it names is one the page
describes and that no text in it is smaller than :data:`MIN_POINTS`.  The PNG is added to the
site in memory (``File.generated``, served at :data:`SITE_PATH`): nothing is written under
docs/, so a build leaves the tree as it was, and nothing is fetched (matplotlib, already needed
by the gallery, is the only dependency).

The figure is :data:`WIDTH_PX` wide in CSS pixels, the text column of mkdocs-material at
1366 px, and saved at :data:`DPI_SCALE` times that for sharp text on high-density screens; the
page sets its displayed width, so a point of text is 100/72 CSS px, as in a figure shown at
100 dpi.
"""

from __future__ import annotations

import io
from typing import Any

#: Where the site serves the chart (the page links ``generated/solver-chart.png``).
SITE_PATH = "generated/solver-chart.png"
#: Displayed width in CSS px (the page's ``{ width="688" }``), and the factor it is saved at.
WIDTH_PX, DPI_SCALE = 688, 2
#: The smallest text in the chart, in points (12.5 CSS px at the displayed width).
MIN_POINTS = 9.5

#: (question, solver(s), what for): a "yes" to the question leads to the solver(s).
STEPS: tuple[tuple[str, str, str], ...] = (
    ("Several labels share one kernel\ncombination?", "mlmkl-sum  /  mlmkl-sa",
     "few labels  /  many labels, worst label"),
    ("Indefinite or non-symmetric\nkernels?", "mikl", "the only family that takes them"),
    ("Kernels in groups, a norm\nacross the groups?", "mirror-vskl", "family vskl, choose q"),
    ("Non-sparse p-norm weights, or many\nclasses in one model?", "obscure",
     "family pnorm_mkl, Crammer-Singer"),
    ("N too large for the N x N\nkernels in memory?", "spicymkl  /  obscure",
     "on low-rank factors  /  rows on demand"),
)
#: Where every answer was "no", and what to do then.
DEFAULT = ("spicymkl", "family l1_mkl: the estimators' default")
THEN = "then compare it with solver=\"average\",\nthe mean-kernel SVM (the table below)"

ROW_PX, BOX_PX = 58, 42               # a row's pitch and a box's height
LEFT, RIGHT = (4, 318), (392, 684)    # the question column and the answer column, in px
QUESTION = {"facecolor": "#eef1f5", "edgecolor": "#5a6270"}
ANSWER = {"facecolor": "#e3effd", "edgecolor": "#1f5fbf"}
CHOSEN = {"facecolor": "#e6f4ea", "edgecolor": "#2e7d32"}


def figure() -> Any:
    """The chart as a matplotlib ``Figure`` (no pyplot, so no backend state is touched)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    height = ROW_PX * (len(STEPS) + 1)
    fig = Figure(figsize=(WIDTH_PX / 100, height / 100), dpi=100, facecolor="white")
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH_PX)
    ax.set_ylim(height, 0)  # y downwards, in px from the top
    ax.set_axis_off()

    def box(x: tuple[int, int], row: int, style: dict[str, str]) -> float:
        top = row * ROW_PX + (ROW_PX - BOX_PX) / 2
        ax.add_patch(FancyBboxPatch((x[0] + 4, top), x[1] - x[0] - 8, BOX_PX, linewidth=1.2,
                                    boxstyle="round,pad=0,rounding_size=6", **style))
        return top + BOX_PX / 2

    def solver(row: int, name: str, note: str, style: dict[str, str], x: tuple[int, int] = RIGHT) -> None:
        middle = box(x, row, style)
        ax.text(x[0] + 14, middle - 8, name, fontsize=10.5, fontweight="bold", family="monospace", va="center")
        ax.text(x[0] + 14, middle + 9, note, fontsize=MIN_POINTS, va="center", linespacing=1.0)

    def arrow(start: tuple[float, float], end: tuple[float, float], label: str,
              at: tuple[float, float]) -> None:
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, linewidth=1.2,
                                     color="#444444", shrinkA=0, shrinkB=0))
        ax.text(*at, label, fontsize=MIN_POINTS, color="#444444", ha="center", va="center", style="italic")

    for row, (question, names, note) in enumerate(STEPS):
        middle = box(LEFT, row, QUESTION)
        ax.text(LEFT[0] + 14, middle, question, fontsize=10, va="center", linespacing=1.15)
        solver(row, names, note, ANSWER)
        arrow((LEFT[1] - 4, middle), (RIGHT[0] + 4, middle), "yes", ((LEFT[1] + RIGHT[0]) / 2, middle - 9))
        below = (row + 1) * ROW_PX
        x = (LEFT[0] + LEFT[1]) / 2
        arrow((x, below - (ROW_PX - BOX_PX) / 2), (x, below + (ROW_PX - BOX_PX) / 2), "no", (x + 16, below))
    solver(len(STEPS), *DEFAULT, CHOSEN, x=LEFT)
    ax.text(RIGHT[0] + 4, (len(STEPS) + 0.5) * ROW_PX, THEN, fontsize=MIN_POINTS, color="#444444",
            va="center", linespacing=1.15)
    return fig


def png() -> bytes:
    """The chart as PNG bytes, the same bytes for the same chart (no date in its metadata)."""
    buffer = io.BytesIO()
    figure().savefig(buffer, format="png", dpi=100 * DPI_SCALE, metadata={"Software": None})
    return buffer.getvalue()


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, SITE_PATH, content=png()))
    return files
