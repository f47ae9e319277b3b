"""Shared fixtures; plain helpers live in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import SHARED_DATA


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker's BLAS and OpenMP take their share of the cores (as
    scikit-learn's suite does): on two cores, `make test` took 750 s with two workers of two
    BLAS threads each, 611 s with every thread count set to 1.  Tests that
    need a thread count set their own (threadpool_limits); worker processes they start keep
    theirs."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        from threadpoolctl import threadpool_limits

        from kernelfuse.runtime.parallel import usable_cores

        threadpool_limits(max(1, usable_cores() // int(workers)))


@pytest.fixture
def shared_data() -> Path:
    """../shared/data beside the checkout; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"benchmark data folder {SHARED_DATA} is absent (CI always has it)")
    return SHARED_DATA
