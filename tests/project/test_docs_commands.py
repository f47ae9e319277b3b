"""The README and the tutorial run as written: their ```python and ```shell blocks in page
order, in one fresh folder, the shell blocks by bash with the installed ``kernelfuse`` first
on the PATH (each command must exit 0)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import COMMAND_PAGES

BLOCK = re.compile(r"^```(python|shell)\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda p: p.name)
def test_every_block_runs_in_order_in_a_fresh_folder(page, tmp_path, monkeypatch):
    blocks = BLOCK.findall(page.read_text())
    assert any(kind == "shell" for kind, _ in blocks), f"{page.name} has no shell block"
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for number, (kind, block) in enumerate(blocks, 1):
        if kind == "python":
            try:
                exec(compile(block, f"{page.name}[block {number}]", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the failure message is the point
                pytest.fail(f"{page.name}, python block {number} failed: {type(exc).__name__}: {exc}")
            continue
        done = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{page.name}, shell block {number}:\n{block}\n{done.stderr[-2000:]}"
