"""The main job, in its quick form, as a user runs it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from kernelfuse.assembly.result import Result


def test_kernelfuse_demo_quick(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kernelfuse", "demo", "--quick", "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "455 training / 114 test points, 93 kernels" in out
    assert "test accuracy" in out and "top kernels:" in out and "certified gap" in out
    accuracy = float(out.split("test accuracy ")[1].split()[0])
    assert accuracy >= 0.93
    result = Result.load(tmp_path / "result.npz")
    assert result.gap <= 1e-3 and result.kernel_weights.size == 93
    assert np.sum(result.kernel_weights > 1e-3) < 93  # sparse weights
    for png in ("kernel_weights.png", "gap_vs_time.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "iter" in done.stderr  # progress lines
    # the kernel building announced before it starts (logged at INFO, on in the CLI)
    assert done.stderr.startswith("kernelfuse: demo: building 93 kernels on 455 training and 114 test points (")
    quiet = subprocess.run(
        [sys.executable, "-m", "kernelfuse", "demo", "--quick", "--quiet", "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
