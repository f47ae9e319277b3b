"""Memory-bound passes on threads: every item done once, errors raised, the copy exact."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from kernelfuse.frontends.estimators import kernels_first
from kernelfuse.runtime import bandwidth
from kernelfuse.runtime.bandwidth import blas_threads, run_threaded


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_every_item_is_done_once_with_blas_on_one_thread(monkeypatch, threads, n):
    monkeypatch.setattr(bandwidth, "BYTES_PER_THREAD", 1)
    seen, inside = np.zeros(n, dtype=int), []

    def work(items: range) -> None:
        inside.append(blas_threads())
        for i in items:
            seen[i] += 1

    with threadpool_limits(limits=threads, user_api="blas"):
        allowed = blas_threads()  # what BLAS grants (an OpenBLAS build may cap it)
        run_threaded(work, n, nbytes=10)
    assert seen.tolist() == [1] * n
    assert set(inside) == {1} and len(inside) == min(n, allowed)


def test_an_error_in_a_part_is_raised(monkeypatch):
    monkeypatch.setattr(bandwidth, "BYTES_PER_THREAD", 1)

    def work(items: range) -> None:
        if 3 in items:
            raise ValueError("item 3")

    with threadpool_limits(limits=2, user_api="blas"), pytest.raises(ValueError, match="item 3"):
        run_threaded(work, 5, nbytes=10)


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 2), (40, 40, 300)])
def test_kernels_first_is_the_transposed_copy(monkeypatch, shape):
    monkeypatch.setattr(bandwidth, "BYTES_PER_THREAD", 1)
    X = np.random.default_rng(0).standard_normal(shape)
    with threadpool_limits(limits=2, user_api="blas"):
        out = kernels_first(X)
    assert out.flags.c_contiguous and np.array_equal(out, np.moveaxis(X, 2, 0))
