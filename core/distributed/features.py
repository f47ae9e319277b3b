"""Low-rank kernel features computed on a Dask cluster, kept in row blocks where they are computed.

:func:`partition_features` takes row-partitioned inputs (a ``dask.array``, a ``dask.dataframe``,
or ``.npy`` shards: :func:`read_shards`) and the kernels' specs.  A kernel without explicit
features becomes a Nystrom kernel of rank ``rank`` on landmarks sampled uniformly from the data
(``sample_rows`` rows are gathered to fit them: the only rows that ever leave their block).  Each
block's features ``Phi_b = [phi_1(x) ... phi_M(x)]`` are computed by a task on the worker that
holds it and stay there (held by futures, so Dask recomputes a block lost with its worker from
its input block); only ``O(D)`` statistics come back: the column norms, which give the
unit-trace scales ``s_m = 1 / sqrt(trace K_m)`` a solve folds into its vectors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from kernelfuse.distributed import blocks
from kernelfuse.distributed.cluster import client_for
from kernelfuse.errors import SolverError, ValidationError
from kernelfuse.kernels.factors import has_features
from kernelfuse.kernels.functions import KernelSpec
from kernelfuse.kernels.normalization import METHODS
from kernelfuse.parts.registry import Registry, resolve_registry

if TYPE_CHECKING:
    from distributed import Client, Future



@attrs.frozen(eq=False)
class PartitionedFeatures:
    """The features of ``M`` low-rank kernels on ``N`` rows, in row blocks held by a Dask cluster.

    ``blocks[k]`` and ``targets[k]``: futures of block ``k``'s features (``n_k x D``) and targets;
    ``offsets``: kernel ``m``'s columns are ``offsets[m]:offsets[m + 1]``; ``scales`` (``D``): the
    normalisation's per-column factor (``1 / sqrt(trace K_m)`` for unit trace, else 1), so that
    the normalised kernels are ``K_m = Phi_m diag(s)^2 Phi_m'``; ``specs``: the low-rank kernels
    (fitted Nystrom kernels, or the given ones), which map new rows the same way.
    """

    client: Client
    blocks: tuple[Future, ...]
    targets: tuple[Future, ...]
    rows: tuple[int, ...]
    offsets: np.ndarray
    scales: np.ndarray
    specs: tuple[KernelSpec, ...]
    normalization: str
    dtype: np.dtype
    #: Where the workers keep their blocks: None for NumPy arrays in memory, else the function that
    #: moved each NumPy block there (an array of another library, on the worker's GPU).
    to_device: Callable[[np.ndarray], Any] | None = None
    #: The normalised kernels' mean diagonal entry ``sum_m trace(K_m) / (M N)`` (``1 / N`` for
    #: unit trace): the scale a family's default parameter is mapped to (``pnorm_mkl``'s ``lam``).
    mean_diagonal: float = 1.0

    @property
    def n_samples(self) -> int:
        return int(sum(self.rows))

    @property
    def n_kernels(self) -> int:
        return len(self.specs)

    @property
    def n_features(self) -> int:
        """``D = sum_m r_m``, the columns of a block."""
        return int(self.offsets[-1])

    @property
    def largest_block(self) -> int:
        """Rows of the largest block."""
        return max(self.rows)

    def lost_worker_error(self, exc: BaseException) -> SolverError:
        """The error of a task whose workers all died running it (Dask's ``KilledWorker``, after its
        ``allowed-failures``): a block too large for a worker's memory, most likely."""
        return workers_died(exc, self.largest_block, self.largest_block * self.n_features * self.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes the feature blocks take on the cluster, all workers together."""
        return self.n_samples * self.n_features * self.dtype.itemsize

    def with_targets(self, targets: Sequence[Future]) -> PartitionedFeatures:
        """The same blocks with other targets (futures of each block's, e.g. one class against
        the rest): the features are shared, not copied."""
        if len(targets) != len(self.blocks):
            raise ValidationError(f"targets: one per block ({len(self.blocks)}), got {len(targets)}")
        return attrs.evolve(self, targets=tuple(targets))

    def features(self, X: np.ndarray) -> np.ndarray:
        """The normalised features ``[s_m phi_m(x)]`` of new rows (``n x D``): what a model's
        weights multiply."""
        return blocks.block_features(X, self.specs, self.normalization, self.offsets) * self.scales


def workers_died(exc: BaseException, rows: int, block_bytes: int) -> SolverError:
    """A :class:`SolverError` for Dask's ``KilledWorker``: the workers running a block's task died,
    out of memory most likely; it names the block's size and the rows to use instead."""
    return SolverError(
        f"the workers running a task on blocks of up to {rows:,} rows ({block_bytes / 2**20:,.0f} MiB of "
        f"features each) died ({exc}): out of memory, most likely. Use blocks of fewer rows "
        f"(X.rechunk({{0: {max(1, rows // 2)}}}), or shards of fewer rows), or workers with more memory")


def read_shards(paths: Sequence[str], columns: Sequence[str] | None = None) -> Any:
    """The rows of shard files as one row-partitioned ``dask.array``, read on the workers: ``.npy``
    arrays (each ``n_k x d``, or ``n_k`` for targets), or Parquet files (``columns`` of them, all by
    default; Dask's reader, which needs ``pyarrow``).  A file that cannot be read is named."""
    import dask
    import dask.array as da

    paths = [str(path) for path in paths]
    if not paths:
        raise ValidationError("no shard files given")
    if all(path.endswith(".parquet") for path in paths):
        return da.concatenate([_parquet_shard(path, columns) for path in paths], axis=0)
    arrays = []
    for path in paths:
        try:
            header = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise ValidationError(f"shard {path}: cannot read it as a .npy array ({exc})") from None
        if header.ndim not in (1, 2):
            raise ValidationError(f"shard {path}: expected a 1-D or 2-D array, got shape {header.shape}")
        loaded = dask.delayed(np.load, pure=True)(path)
        arrays.append(da.from_delayed(loaded, shape=header.shape, dtype=header.dtype))
    return da.concatenate(arrays, axis=0)


def _parquet_rows(path: str, columns: list[str]) -> np.ndarray:
    import pyarrow.parquet as pq

    return np.column_stack([pq.read_table(path, columns=columns).column(c).to_numpy() for c in columns])


def _parquet_shard(path: str, columns: Sequence[str] | None) -> Any:
    """One Parquet file's ``columns`` (all by default) as one lazy block, its shape from the footer."""
    import dask
    import dask.array as da

    try:
        import pyarrow.parquet as pq

        footer = pq.ParquetFile(path)
    except ImportError:
        raise ValidationError("Parquet shards need pyarrow: pip install 'kernelfuse[dask]'") from None
    except (OSError, ValueError) as exc:
        raise ValidationError(f"shard {path}: cannot read it as Parquet ({exc})") from None
    names = list(footer.schema_arrow.names) if columns is None else list(columns)
    missing = [c for c in names if c not in footer.schema_arrow.names]
    if missing:
        raise ValidationError(f"shard {path}: no column {missing[0]!r}; it has {', '.join(footer.schema_arrow.names)}")
    block = dask.delayed(_parquet_rows, pure=True)(path, names)
    return da.from_delayed(block, shape=(footer.metadata.num_rows, len(names)), dtype=np.float64)


def as_row_blocks(data: Any, what: str) -> Any:
    """``data`` (a ``dask.array``, a ``dask.dataframe`` or a NumPy array) as a ``dask.array``
    partitioned by rows only."""
    import dask.array as da

    if hasattr(data, "to_dask_array"):  # a dask DataFrame or Series
        data = data.to_dask_array(lengths=True)
    elif not isinstance(data, da.Array):
        data = da.from_array(np.asarray(data), chunks=(min(len(data), 25_000),) + np.shape(data)[1:])
    if data.ndim == 2 and data.numblocks[1] != 1:
        data = data.rechunk({1: -1})
    if any(math.isnan(c) for c in data.chunks[0]):
        raise ValidationError(f"{what}: the row blocks' lengths are unknown; compute them first "
                              "(dask.array.Array.compute_chunk_sizes())")
    return data


def low_rank_specs(specs: Sequence[KernelSpec], sample: np.ndarray, rank: int, seed: int,
                   registry: Registry | None) -> list[KernelSpec]:
    """Each spec with explicit features as it is; each other one its Nystrom kernel of ``rank``
    landmarks drawn uniformly from the rows ``sample`` (its width, where relative, measured there)."""
    nystrom = resolve_registry(registry).get("kernel", "nystrom").factory
    out = []
    for m, spec in enumerate(specs):
        if has_features(spec):
            out.append(spec)
            continue
        columns = spec.columns(sample)
        function = nystrom.fit(spec.function, columns, min(rank, columns.shape[0]), seed=seed + m,
                               registry=registry)
        out.append(attrs.evolve(spec, function=function))
    return out


def partition_features(
    specs: Sequence[KernelSpec], X: Any, y: Any, *, client: Client | str | None = None,
    rank: int = 100, normalization: str = "unit-trace", sample_rows: int = 5_000, seed: int = 0,
    registry: Registry | None = None, to_device: Callable[[np.ndarray], Any] | None = None,
) -> PartitionedFeatures:
    """The features of ``specs`` on the rows of ``X`` with targets ``y``, computed and kept in
    ``X``'s row blocks on the cluster of ``client`` (None: the connected one; an address).

    ``specs`` must be fitted (their columns as indices, their widths set); a spec without explicit
    features becomes a Nystrom kernel of ``rank`` (at most ``sample_rows``) landmarks drawn from
    ``sample_rows`` rows sampled uniformly (seeded by ``seed``).  ``to_device``: a function run
    on each worker that moves a NumPy block where it computes, an array of a library of the
    Python array API standard (``lambda a: torch.asarray(a, device="cuda")``, ``cupy.asarray``):
    the blocks and targets are kept there and every pass over them runs there."""
    import dask

    client = client_for(client)
    if normalization not in METHODS:  # the normalisations of every stack (unit trace: one pass here)
        raise ValidationError(f"normalization must be one of {', '.join(METHODS)}, got {normalization!r}")
    if to_device is not None and not callable(to_device):
        raise ValidationError(f"to_device must be a function that moves a NumPy array to a device "
                              f"(lambda a: torch.asarray(a, device='cuda')) or None, got {to_device!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValidationError(f"rank must be a positive integer (the Nystrom landmarks per kernel), got {rank!r}")
    X, y = as_row_blocks(X, "X"), as_row_blocks(y, "y")
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValidationError(f"X must be (N, d) and y (N,) with the same N; got {X.shape} and {y.shape}")
    y = y.rechunk((X.chunks[0],))
    N = int(X.shape[0])
    index = np.sort(np.random.default_rng(seed).choice(N, size=min(N, sample_rows), replace=False))
    sample = np.asarray(X[index].compute(), dtype=np.float64)
    if not np.isfinite(sample).all():
        raise ValidationError("X: the sampled rows contain NaN or inf")
    specs = low_rank_specs(specs, sample, rank, seed, registry)
    ranks = [spec.function.features(spec.columns(sample[:1])).shape[1] for spec in specs]
    offsets = np.concatenate(([0], np.cumsum(ranks))).astype(np.intp)
    spec_key = dask.delayed(tuple(specs), pure=True)
    # Block k on worker k mod W (other workers allowed: where it is lost, it is recomputed
    # elsewhere): the passes then run evenly, each where its block is.
    workers = sorted(client.scheduler_info()["workers"])
    features, targets = [], []
    for k, (x_block, y_block) in enumerate(zip(X.to_delayed().ravel(), y.to_delayed().ravel())):
        where = {"workers": [workers[k % len(workers)]], "allow_other_workers": True}
        task = dask.delayed(blocks.block_features, pure=True)(x_block, spec_key, normalization, offsets)
        features.append(client.compute(dask.delayed(blocks.placed, pure=True)(task, to_device), **where))
        target = dask.delayed(np.asarray, pure=True)(y_block, np.float64)
        targets.append(client.compute(dask.delayed(blocks.placed, pure=True)(target, to_device), **where))
    try:
        statistics = sum(client.gather(client.map(blocks.block_statistics, features)))
    except Exception as exc:
        if type(exc).__name__ != "KilledWorker":
            raise
        raise workers_died(exc, max(X.chunks[0]), max(X.chunks[0]) * int(offsets[-1]) * 8) from None
    column_norms = np.asarray(statistics[:-1])
    if not np.isfinite(column_norms).all():
        raise ValidationError("X: the features of some rows are NaN or inf (check X for NaN or inf)")
    scales = np.ones(int(offsets[-1]))
    if normalization == "unit-trace":
        for m in range(len(specs)):
            columns = slice(offsets[m], offsets[m + 1])
            trace = float(column_norms[columns].sum())
            if not trace > 0:
                raise ValidationError(f"kernel {m} is zero on every row: it cannot have unit trace")
            scales[columns] = 1.0 / math.sqrt(trace)
    return PartitionedFeatures(client, tuple(features), tuple(targets), tuple(int(c) for c in X.chunks[0]),
                               offsets, scales, tuple(specs), normalization, np.dtype(np.float64), to_device,
                               float(np.sum(column_norms * scales**2)) / (len(specs) * N))
