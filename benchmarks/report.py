"""The measured tables of README.md and docs/, generated from the benchmark JSON (never typed).

A generated table sits in a markdown file between two comments::

    <!-- generated: peers_quick.json headline -->
    | ... the table ... |
    <!-- end generated -->

naming a JSON file of ``benchmarks/results/`` and one of the tables the
benchmark that wrote it renders (:func:`_renderers`); ``table:argument``
passes one argument to the table (``peers.json families:sonar``: one
set's rows).  A benchmark module's ``FIGURES`` are drawn from its JSON the
same way, as ``results/<json stem>_<figure>.png`` (not under ``--check``).  ``python
benchmarks/report.py`` rewrites every such region in README.md and
docs/**.md from the JSON as it is now; ``--check`` rewrites nothing and
exits 1 naming each region that differs (tests/project/test_generated_tables.py runs
it, so a table cannot drift from its measurements).  A benchmark run on another
machine (:data:`ELSEWHERE`: the GPU) may have no JSON here yet: its region then
says how to produce it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelfuse.runtime.files import atomic_write

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

#: Benchmarks measured on another machine, and the command that writes their JSON.
ELSEWHERE = {"gpu": "python3 benchmarks/gpu.py --device cuda --out benchmarks/results"}
#: Benchmarks whose full run takes hours and may not have been made yet: the command.
LONG_RUNS = {"accuracy": "python benchmarks/accuracy.py --jobs 2"}
REGION = re.compile(r"(<!-- generated: (\S+) (\S+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def _renderers() -> dict[str, dict[str, Callable[[dict[str, Any]], str]]]:
    """Benchmark (the JSON name before ``_quick`` / ``_10splits``) -> table name -> renderer."""
    import accuracy
    import cv_path
    import default_choice
    import default_solver
    import distributed_solve
    import gpu
    import input_checks
    import low_rank
    import mikl_newton
    import mikl_titanic
    import mklpy_algorithms
    import mlmkl_labels
    import multiview
    import obscure_certificate
    import obscure_factors
    import obscure_pendigits
    import parallel_cores
    import peers
    import psd_certificate
    import raw_units
    import spicymkl_factors
    import spicymkl_scaling
    import storage
    import vskl_report

    import common

    return {
        "distributed_solve": distributed_solve.TABLES,
        "peers": peers.TABLES,
        "accuracy": accuracy.TABLES,
        "spicymkl_scaling": {
            "grid": lambda d: spicymkl_scaling.grid_table(d["grid"]),
            "by_M": lambda d: spicymkl_scaling.ringnorm_table(d["ringnorm_by_M"]),
            "by_N": lambda d: spicymkl_scaling.ringnorm_table(d["ringnorm_by_N"]),
            "cvxpy": lambda d: spicymkl_scaling.cvxpy_table(d["ringnorm_by_M"]),
            "simplemkl_grid": lambda d: spicymkl_scaling.simplemkl_table(
                d["grid"], ("dataset", "N", "M", "C")),
            "simplemkl_ringnorm": lambda d: spicymkl_scaling.simplemkl_table(
                [*d["ringnorm_by_M"], *d["ringnorm_by_N"]], ("N", "M")),
            # recomputed from the runs, so the rule for ratios (common.speed_ratio) is today's
            "targets": lambda d: "\n".join(common.target_lines(spicymkl_scaling.check_targets(
                d["grid"], d["ringnorm_by_M"], d["ringnorm_by_N"]))),
        },
        "mlmkl_labels": mlmkl_labels.TABLES,
        "mklpy_algorithms": mklpy_algorithms.TABLES,
        "default_solver": default_solver.TABLES,
        "cv_path": cv_path.TABLES,
        "default_choice": default_choice.TABLES,
        "gpu": gpu.TABLES,
        "obscure_pendigits": obscure_pendigits.TABLES,
        "obscure_factors": obscure_factors.TABLES,
        "parallel_cores": parallel_cores.TABLES,
        "obscure_certificate": obscure_certificate.TABLES,
        "spicymkl_factors": spicymkl_factors.TABLES,
        "mikl_titanic": mikl_titanic.TABLES,
        "multiview": multiview.TABLES,
        "raw_units": raw_units.TABLES,
        "mikl_newton": mikl_newton.TABLES,
        "low_rank": low_rank.TABLES,
        "storage": storage.TABLES,
        "input_checks": input_checks.TABLES,
        "psd_certificate": psd_certificate.TABLES,
        "vskl_scaling": {"scaling": vskl_report.scaling_tables},
        "vskl_accuracy": {"accuracy": vskl_report.accuracy_table},
    }


def _benchmark(json_name: str) -> str:
    """The benchmark of a JSON file: its name less the suffixes of a run's variant
    (``accuracy_heldout_defaults.json``: ``accuracy``)."""
    return re.sub(r"(_(quick|10splits|smoke|heldout|defaults))+$", "", Path(json_name).stem)


def render(json_name: str, table: str, renderers: dict[str, Any], results: Path = RESULTS) -> str:
    """The table ``table`` of ``results/json_name``, with the command and date below it."""
    benchmark = _benchmark(json_name)
    if benchmark in ELSEWHERE and not (results / json_name).exists():
        return (f"_Not measured yet: `{json_name}` is written on a machine with a GPU by "
                f"`{ELSEWHERE[benchmark]}`, then `python benchmarks/report.py` renders it here._\n")
    if benchmark in LONG_RUNS and not (results / json_name).exists():
        return (f"_Not measured yet: `{json_name}` is written by the full run "
                f"`{LONG_RUNS[benchmark]}` (hours), then `python benchmarks/report.py` renders it "
                "here._\n")
    payload = json.loads((results / json_name).read_text())
    tables = renderers[benchmark]
    table, _, argument = table.partition(":")
    if table not in tables:
        raise SystemExit(f"{json_name}: no table {table!r} (tables: {', '.join(tables)})")
    machine = payload.get("machine", {})
    flags = "".join(flag for suffix, flag in (("_quick", " --quick"), ("_10splits", " --splits 10"),
                                              ("_smoke", " --smoke"), ("_heldout", " --heldout"))
                    if suffix in json_name)
    if "_defaults" in json_name:  # a run of some methods, named in the file
        flags += " --methods " + " ".join(f'"{method}"' for method in payload.get("methods", []))
    source = (f"\n_Generated by `python benchmarks/report.py` from `benchmarks/results/{json_name}` "
              f"(`python benchmarks/{_benchmark(json_name)}.py{flags}`, "
              f"{machine.get('date', 'date not recorded')}, {machine.get('cpu', 'cpu not recorded')}, "
              f"git {str(machine.get('git_commit'))[:8]}"
              + "".join(f"; {', '.join(r['methods'])} rerun on the same splits at git {str(r['git_commit'])[:8]}, "
                        f"{r['date']}" for r in payload.get("reruns", []))
              + ")._\n")
    rendered = tables[table](payload, argument) if argument else tables[table](payload)
    return rendered.rstrip("\n") + "\n" + source


def regenerate(text: str, renderers: dict[str, Any]) -> str:
    return REGION.sub(lambda m: m.group(1) + render(m.group(2), m.group(3), renderers) + m.group(5), text)


def draw_figures(results: Path = RESULTS) -> list[Path]:
    """Every figure a benchmark module declares (``FIGURES``), drawn from each of its JSON files."""
    import mklpy_algorithms
    import peers

    drawn = []
    for module in (peers, mklpy_algorithms):
        benchmark = module.__name__
        for json_path in sorted(results.glob(f"{benchmark}*.json")):
            if _benchmark(json_path.name) != benchmark:
                continue
            payload = json.loads(json_path.read_text())
            for name, draw in module.FIGURES.items():
                path = draw(payload, results / f"{json_path.stem}_{name}.png")
                if path is not None:
                    drawn.append(path)
    return drawn


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    renderers = _renderers()
    stale = []
    for page in pages():
        text = page.read_text()
        new = regenerate(text, renderers)
        if new != text:
            stale.append(page.relative_to(REPO))
            if not args.check:
                with atomic_write(page, "w") as handle:
                    handle.write(new)
    if not args.check:
        for path in draw_figures():
            print(f"{path.relative_to(REPO)}: drawn")
    verb = "stale (run python benchmarks/report.py)" if args.check else "regenerated"
    for page in stale:
        print(f"{page}: {verb}")
    regions = sum(len(REGION.findall(page.read_text())) for page in pages())
    print(f"{regions} generated tables, {len(stale)} page(s) {verb if stale else 'up to date'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
