"""Shared fixtures; plain helpers live in helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SHARED_DATA


@pytest.fixture
def shared_data() -> Path:
    """../shared/data beside the checkout; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"benchmark data folder {SHARED_DATA} is absent (CI always has it)")
    return SHARED_DATA
