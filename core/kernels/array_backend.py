"""Kernel stacks held by another array library: CuPy or PyTorch on a GPU, any library of the
Python array API standard, through ``array-api-compat``.

A stack ``K`` (M, N, N) that is not a NumPy array stays where it is: the passes over it, the
Newton systems built from it and their solves run in its namespace, on its device, and only
results of ``O(M N)`` entries at most come back as NumPy arrays; no ``N x N`` matrix crosses to
the host.  The arithmetic is float64, as on the CPU (a float32 stack is read by blocks cast to
float64 on the device, :data:`DEVICE_BLOCK_ENTRIES`).  Per-step work stays on the device
without crossing to the host: :func:`clip` clips to numbers with each library's own clip, and
:class:`Replayed` replays a function of many small launches as one recorded graph.  NumPy arrays
reach only the namespace look-ups and :func:`clip` (:func:`namespace` is ``None`` for them), and
``array_api_compat`` is imported on the first non-NumPy array only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np

#: Entries of one float64 block cast from a float32 stack on a device (128 MiB).
DEVICE_BLOCK_ENTRIES = 2**24
#: Bytes of one batch of consecutive kernels read by one operation (bounds its temporaries).
GATHER_BYTES = 2**28
#: On a GPU, kernels less than this many bytes apart are read by one operation: 64 MiB take
#: about as long to read (20 us) as the host takes to start another product.  On a CPU
#: (PyTorch's CPU build, array-api-strict) reading is the cost: no kernel is read in vain.
MERGE_BYTES = 2**26


#: The namespace of each array type met so far (None: not an array, or NumPy's).
_NAMESPACES: dict[type, Any] = {}


def namespace(x: object) -> Any | None:
    """The array API namespace of ``x``, or None for a NumPy array or anything that is not an array
    (by type: the per-iteration calls cost a dictionary look-up)."""
    if isinstance(x, np.ndarray):
        return None
    kind = type(x)
    if kind not in _NAMESPACES:
        try:
            import array_api_compat
        except ImportError as error:  # a declared dependency; NumPy inputs never need it
            if hasattr(x, "__array_namespace__") or kind.__module__.split(".")[0] in ("torch", "cupy"):
                raise ImportError("reading a stack of another array library than NumPy needs "
                                  "array-api-compat: pip install array-api-compat") from error
            return None
        is_other = array_api_compat.is_array_api_obj(x) and not array_api_compat.is_numpy_array(x)
        _NAMESPACES[kind] = array_api_compat.array_namespace(x) if is_other else None
    return _NAMESPACES[kind]


def device_namespace(x: Any) -> Any:
    """The array API namespace of the device array ``x`` (never None: the functions below
    receive only those)."""
    xp = namespace(x)
    assert xp is not None, "a device array"
    return xp


def array_namespace(x: object) -> Any:
    """The namespace to compute on ``x`` with: NumPy's own for NumPy arrays and numbers (its main
    namespace follows the standard since NumPy 2), else the array's library's."""
    xp = namespace(x)
    return np if xp is None else xp


def is_device_array(x: object) -> bool:
    """Whether ``x`` is an array of another library than NumPy (read by this module)."""
    return namespace(x) is not None


def on_gpu(x: Any) -> bool:
    """Whether the device array ``x`` is on a GPU (CuPy, or PyTorch on CUDA)."""
    import array_api_compat

    return array_api_compat.is_cupy_array(x) or getattr(x.device, "type", "cpu") == "cuda"


def clip(x: Any, low: float | None = None, high: float | None = None) -> Any:
    """``x`` clipped to the numbers ``low`` and ``high`` (None: that side unbounded), where ``x`` is,
    nothing crossing to or from the host.  ``xp.maximum(x, 0.0)`` makes a PyTorch tensor of the
    number first (a transfer: a synchronisation of a GPU), and array-api-compat's ``clip`` for
    CuPy masks by boolean indexing (a read back); PyTorch's and CuPy's own clips take numbers.
    On NumPy arrays, ``np.maximum`` and ``np.minimum`` (the host's numbers as ever)."""
    xp = namespace(x)
    if xp is None:
        if low is not None:
            x = np.maximum(x, low)
        return x if high is None else np.minimum(x, high)
    import array_api_compat

    if array_api_compat.is_cupy_array(x):
        return x.clip(low, high)  # CuPy's own method
    return xp.clip(x, low, high)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of a device array (from the GPU when it is there): PyTorch's and CuPy's own
    transfers, and for any other array API library the standard's DLPack exchange to the CPU
    (``np.from_dlpack(x, device="cpu", copy=True)``; JAX, ``array-api-strict`` on another device)."""
    import array_api_compat

    if array_api_compat.is_torch_array(x):
        return x.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(x):
        return x.get()
    if isinstance(x, np.ndarray | np.generic | float | int) or not hasattr(x, "__dlpack__"):
        return np.asarray(x)
    return np.from_dlpack(x, device="cpu", copy=True)


def to_host(x: Any) -> np.ndarray:
    """``x`` as a NumPy array: NumPy arrays as they are, device arrays copied (:func:`to_numpy`)."""
    return x if isinstance(x, np.ndarray) else to_numpy(x)


def on_device(a: np.ndarray, like: Any, dtype: Any = None) -> Any:
    """The NumPy array ``a`` as an array of ``like``'s namespace on ``like``'s device."""
    return device_namespace(like).asarray(np.ascontiguousarray(a), dtype=dtype, device=like.device)


def all_like_stack(arrays: tuple[np.ndarray, ...], like: Any) -> tuple[Any, ...]:
    """:func:`like_stack` of each NumPy array (float64), in one transfer for them all."""
    if namespace(like) is None:
        return arrays
    flat = like_stack(np.concatenate([np.ravel(np.asarray(a, dtype=np.float64)) for a in arrays]), like)
    xp, out, start = device_namespace(like), [], 0
    for a in arrays:
        size = int(np.size(a))
        out.append(xp.reshape(flat[start:start + size], np.shape(a)))
        start += size
    return tuple(out)


def like_stack(a: Any, like: Any) -> Any:
    """``a`` (NumPy, or already of ``like``'s library) where ``like`` is: unchanged for a NumPy
    ``like`` or an array already there, else copied to ``like``'s device as float64."""
    if namespace(like) is None or namespace(a) is not None:
        return a
    return on_device(np.asarray(a, dtype=np.float64), like, device_namespace(like).float64)


@attrs.frozen
class HostCalls:
    """``part``'s methods called from a device: arrays among the arguments copied to NumPy, array
    results copied back to ``like``'s device (a loss or penalty of a plugin that computes on
    NumPy arrays only, in a Newton loop on a device: correct, at two transfers a call)."""

    part: Any
    like: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy and pickle look these up before the fields exist
            raise AttributeError(name)
        attribute = getattr(self.part, name)
        if not callable(attribute):
            return attribute

        def on_host(*args: Any) -> Any:
            result = attribute(*(to_host(a) if is_device_array(a) else a for a in args))
            back = [like_stack(np.asarray(r, dtype=np.float64), self.like)
                    for r in (result if isinstance(result, tuple) else (result,))]
            return tuple(back) if isinstance(result, tuple) else back[0]

        return on_host


def float64_blocks(xp: Any, A: Any) -> Iterator[tuple[slice, Any]]:
    """The rows of the 2-D array ``A`` in float64: all at once when it is float64, else by blocks
    of at most :data:`DEVICE_BLOCK_ENTRIES` entries cast on the device."""
    if A.dtype == xp.float64:
        yield slice(0, A.shape[0]), A
        return
    step = max(1, DEVICE_BLOCK_ENTRIES // max(1, A.shape[1]))
    for start in range(0, A.shape[0], step):
        rows = slice(start, min(A.shape[0], start + step))
        yield rows, xp.astype(A[rows, ...], xp.float64)


def _times(xp: Any, A: Any, V: Any) -> Any:
    """``A @ V`` in float64 for a 2-D ``A`` of any float dtype (``V`` float64, on the device)."""
    if A.dtype == xp.float64:
        return A @ V
    return xp.concat([block @ V for _, block in float64_blocks(xp, A)], axis=0)


def _batches(K: Any, kernels: np.ndarray) -> Iterator[tuple[slice, np.ndarray, Any]]:
    """The ``kernels`` of the stack (any order) by views ``K[a:b]``, no copy: increasing kernels
    less than :data:`MERGE_BYTES` apart share a view (reading the kernels between them costs less
    than starting another product), of at most :data:`GATHER_BYTES` (bounding the temporaries
    of an operation on it; one kernel when it alone is larger).  Yields ``(positions in
    kernels, their offsets in the view, the view)``."""
    xp = device_namespace(K)
    kernel_bytes = K.shape[1] * K.shape[2] * (4 if K.dtype == xp.float32 else 8)
    size, gap = max(1, GATHER_BYTES // kernel_bytes), (MERGE_BYTES if on_gpu(K) else 0) // kernel_bytes
    steps = np.diff(kernels)
    breaks = np.flatnonzero((steps <= 0) | (steps > 1 + gap)) + 1
    for begin, stop in zip([0, *breaks], [*breaks, kernels.size]):
        while begin < stop:  # kernels[begin:stop] increase
            first = int(kernels[begin])
            end = begin + int(np.searchsorted(kernels[begin:stop], first + size))
            yield slice(begin, end), kernels[begin:end] - first, K[first:int(kernels[end - 1]) + 1, ...]
            begin = end


def _rows(xp: Any, A: Any, offsets: np.ndarray) -> Any:
    """``A[offsets]`` along the first axis (``A`` itself when ``offsets`` are all of its rows)."""
    if offsets.size == A.shape[0]:
        return A
    return xp.take(A, on_device(offsets, A, xp.int64), axis=0)


@attrs.frozen(eq=False)
class KernelSubset:
    """The ``kernels`` of a device stack, read together: :meth:`times` is ``K_m @ V`` for each, on
    the device, from the index arrays built once here (no transfer per product: SpicyMKL's Newton
    steps read their working set this way).  Every kernel is read by one product when they are
    over a third of the stack, else by runs (:func:`_batches`)."""

    K: Any
    kernels: np.ndarray
    #: The views read and, per view, the rows kept (None: all), on the device.
    views: list[tuple[Any, Any]] = attrs.field(init=False)
    #: The rows of the views' products in the order of ``kernels`` (None: that order already).
    order: Any = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        K, kernels = self.K, np.asarray(self.kernels)
        xp, M = device_namespace(K), K.shape[0]
        if 3 * kernels.size > M:  # the whole stack in one product, then its rows
            views = [(K, None if np.array_equal(kernels, np.arange(M)) else on_device(kernels, K, xp.int64))]
            order = None
        else:
            by_kernel = np.argsort(kernels, kind="stable")  # increasing kernels share reads
            views = [(batch, None if offsets.size == batch.shape[0] else on_device(offsets, K, xp.int64))
                     for _, offsets, batch in _batches(K, kernels[by_kernel])]
            inverse = np.argsort(by_kernel)
            order = None if np.array_equal(inverse, np.arange(kernels.size)) else on_device(inverse, K, xp.int64)
        object.__setattr__(self, "views", views)
        object.__setattr__(self, "order", order)

    def times(self, V: Any) -> Any:
        """``K_m @ V`` for the kernels, float64 on the device: shape ``(len(kernels), N, columns)``
        for ``V`` of shape ``(N, columns)`` on the device."""
        xp, N = device_namespace(self.K), self.K.shape[1]
        parts = []
        for view, rows in self.views:
            count = view.shape[0]
            product = xp.reshape(_times(xp, xp.reshape(view, (count * N, N)), V), (count, N, V.shape[1]))
            parts.append(product if rows is None else xp.take(product, rows, axis=0))
        if not parts:
            return xp.zeros((0, N, V.shape[1]), dtype=xp.float64, device=self.K.device)
        out = parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)
        return out if self.order is None else xp.take(out, self.order, axis=0)


def kernel_times(K: Any, V: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
    """``K_m @ V`` for every kernel (or the ``kernels``, one row each): float64, shape
    ``(M or len(kernels), N) + V.shape[1:]``; one read of those kernels on the device
    (:class:`KernelSubset`)."""
    xp = device_namespace(K)
    M, N, _ = K.shape
    V_dev = on_device(np.asarray(V, dtype=np.float64).reshape(N, -1), K, xp.float64)
    kernels = np.arange(M) if kernels is None else np.asarray(kernels)
    return to_numpy(KernelSubset(K, kernels).times(V_dev)).reshape((kernels.size, N) + V.shape[1:])


def kernel_products(K: Any, coef: np.ndarray, kernels: np.ndarray) -> np.ndarray:
    """``K[m].T @ coef[m]`` for the ``kernels`` (zero for the others): float64, the shape of ``coef``."""
    xp = device_namespace(K)
    kernels = np.asarray(kernels)
    out = np.zeros(coef.shape)
    flat = coef.reshape(coef.shape[0], -1, coef.shape[-1])  # (M, outputs, N): coef_m' K_m by rows
    for positions, offsets, batch in _batches(K, kernels):
        chunk = kernels[positions]
        c = on_device(flat[chunk], K, xp.float64)
        if batch.dtype == xp.float64:
            product = c @ _rows(xp, batch, offsets)
        else:  # kernel by kernel, by float64 blocks of its rows
            product = xp.stack([sum(c[j, :, rows] @ block for rows, block in float64_blocks(xp, batch[int(o), ...]))
                                for j, o in enumerate(offsets)])
        out[chunk] = to_numpy(product).reshape((chunk.size,) + coef.shape[1:])
    return out


def zeros(like: Any, shape: tuple[int, ...], dtype: Any = None) -> Any:
    """Zeros of ``shape`` on ``like``'s device, of ``like``'s dtype unless given."""
    return device_namespace(like).zeros(shape, dtype=like.dtype if dtype is None else dtype, device=like.device)


def add_kernel(out: Any, K: Any, m: int, weight: float) -> None:
    """``out += weight * K_m`` in place on the device (``out`` of the stack's dtype, or float64)."""
    xp = device_namespace(K)
    if out.dtype == K.dtype:
        out += weight * K[m, ...]
        return
    for rows, block in float64_blocks(xp, K[m, ...]):
        out[rows, ...] += weight * block


def add_kernels(out: Any, K: Any, kernels: np.ndarray, weights: np.ndarray) -> None:
    """``out += sum_j weights[j] K_{kernels[j]}`` in place on the device, a batch of kernels per
    product (one launch per batch, not per kernel; the weights of every batch cross in one
    transfer); ``out`` of the stack's dtype, or float64."""
    xp = device_namespace(K)
    kernels, weights = np.asarray(kernels), np.asarray(weights, dtype=np.float64)
    if out.dtype != K.dtype:
        for m, w in zip(kernels, weights):
            add_kernel(out, K, int(m), float(w))
        return
    batches = list(_batches(K, kernels))
    spreads = []
    for positions, offsets, batch in batches:
        spread = np.zeros(batch.shape[0])  # zero for the kernels between those asked
        np.add.at(spread, offsets, weights[positions])
        spreads.append(spread)
    if not batches:
        return
    every = on_device(np.concatenate(spreads), K, K.dtype)
    start = 0
    for (_, _, batch), spread in zip(batches, spreads):
        out += xp.tensordot(every[start:start + spread.size], batch, axes=1)
        start += spread.size


def weighted_sum(K: Any, weights: np.ndarray, kernels: np.ndarray | None = None) -> Any:
    """``sum_m w_m K_m`` over ``kernels`` (default: all): float64 (N, N), on the device."""
    kernels = np.arange(K.shape[0]) if kernels is None else np.asarray(kernels)
    out = zeros(K, tuple(K.shape[1:]), device_namespace(K).float64)
    add_kernels(out, K, kernels, np.asarray(weights, dtype=np.float64)[kernels])
    return out


def diagonals(K: Any) -> np.ndarray:
    """``K_m[i, i]``, shape (M, N), float64."""
    xp = device_namespace(K)
    return to_numpy(xp.astype(xp.linalg.diagonal(K), xp.float64))


def frobenius_norms(K: Any) -> np.ndarray:
    """``||K_m||_F`` for every kernel, summed in float64 on the device (a transfer per batch)."""
    xp = device_namespace(K)
    squares = np.zeros(K.shape[0])
    for positions, _, batch in _batches(K, np.arange(K.shape[0])):
        if batch.dtype == xp.float64:
            squares[positions] = to_numpy(xp.sum(batch * batch, axis=(1, 2)))
        else:
            squares[positions] = [float(sum(xp.sum(block * block) for _, block in float64_blocks(xp, batch[j, ...])))
                                  for j in range(batch.shape[0])]
    return np.sqrt(squares)


def kernel_statistics(K: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel: the largest ``|K_ij|`` (NaN or inf where the kernel holds one) and
    ``max |K - K'|``, read on the device by batches of kernels."""
    xp = device_namespace(K)
    largest, asymmetry = np.empty(K.shape[0]), np.empty(K.shape[0])
    for positions, _, batch in _batches(K, np.arange(K.shape[0])):
        largest[positions] = to_numpy(xp.max(xp.abs(batch), axis=(1, 2)))
        asymmetry[positions] = to_numpy(xp.max(xp.abs(batch - xp.matrix_transpose(batch)), axis=(1, 2)))
    return largest, asymmetry


def extreme_eigenvalues(K: Any, m: int) -> tuple[float, float]:
    """The smallest and largest eigenvalue of the symmetric part of ``K_m``, in float64."""
    xp = device_namespace(K)
    Km = xp.astype(K[m, ...], xp.float64)
    eig = xp.linalg.eigvalsh(0.5 * (Km + xp.matrix_transpose(Km)))
    return float(eig[0]), float(eig[-1])


def hessian(kept_sum: Any, K_v: Any, weight: Any, gamma: float) -> Any:
    """``gamma [kept_sum + sum_j weight_j (K_v)_j (K_v)_j']`` as a float64 ``N x N`` array on the
    device of ``kept_sum`` (SpicyMKL's Hessian, :mod:`kernelfuse.plugins.spicymkl.active_kernels`);
    ``K_v`` (rows ``K_m v_m``) and ``weight`` on that device."""
    xp = device_namespace(kept_sum)
    H = xp.matrix_transpose(K_v * weight[:, None]) @ K_v
    H += kept_sum if kept_sum.dtype == xp.float64 else xp.astype(kept_sum, xp.float64)
    H *= gamma
    return H


def solve_shifted(H: Any, diagonal: Any, constant: float, rhs: Any) -> Any:
    """``(H + diag(diagonal) + constant 11')^{-1} rhs`` for a symmetric ``H`` on a device (``H`` is
    overwritten; ``diagonal``, ``rhs`` and the answer on that device): Cholesky where the library
    offers one without a read of its status (PyTorch), else LU (``linalg.solve``).  NaN where
    the matrix is not positive definite (Cholesky) or singular (LU), as
    :class:`~kernelfuse.plugins.spicymkl.newton_system.DenseSystem` answers."""
    import array_api_compat

    xp = device_namespace(H)
    N = H.shape[0]
    H += constant
    flat = xp.reshape(H, (N * N,))
    flat[::N + 1] += diagonal
    H = xp.reshape(flat, (N, N))
    b = rhs[:, None]
    if array_api_compat.is_torch_array(H):
        import torch

        factor, info = torch.linalg.cholesky_ex(H)  # info stays on the device: no read
        return torch.where(info == 0, torch.cholesky_solve(b, factor)[:, 0], torch.nan)
    try:
        return xp.linalg.solve(H, b)[:, 0]
    except np.linalg.LinAlgError:  # a singular matrix (NumPy's error class, raised by CuPy too)
        return xp.full_like(rhs, xp.nan)


#: Records a function's launches on its inputs: ``(the graph, its outputs)``.
GraphRecorder = Callable[[Callable[..., tuple[Any, ...]], tuple[Any, ...]], tuple[Any, tuple[Any, ...]]]
#: Calls of a :class:`Replayed` function made as they are before its launches are recorded: a
#: Newton loop of one step records nothing, and the first call warms the library up (loads its
#: kernels) for the recording.
CALLS_BEFORE_RECORDING = 1


@attrs.define(eq=False)
class Replayed:
    """``function`` of device arrays of fixed shapes, called again and again (SpicyMKL's line
    search, once a Newton step), returning a tuple of arrays.

    Where the library records launches as a graph (PyTorch on CUDA, :func:`graph_recorder`),
    the second call records them, and each later call copies its arguments into the recorded
    inputs and replays the graph: one launch where there were hundreds, each costing the host
    about 20 us (docs/scaling.md).  Elsewhere, or where recording fails (a function that reads a
    number back), the function is called.  The outputs are copies, kept past the next call.
    ``recordable`` False: always called (a function known to read back, such as a
    :class:`HostCalls` part's); it turns False where no graph can be recorded."""

    function: Callable[..., tuple[Any, ...]]
    recordable: bool = True
    calls: int = 0
    replays: int = 0
    _graph: Any = None
    _inputs: tuple[Any, ...] = ()
    _outputs: tuple[Any, ...] = ()

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        self.calls += 1
        if self._graph is None and not self._record(args):
            return self.function(*args)
        if any(a.shape != b.shape for a, b in zip(args, self._inputs)):
            return self.function(*args)
        for recorded, given in zip(self._inputs, args):
            recorded[...] = given
        self._graph.replay()
        self.replays += 1
        xp = device_namespace(args[0])
        return tuple(xp.asarray(out, copy=True) for out in self._outputs)

    def _record(self, args: tuple[Any, ...]) -> bool:
        """Record the graph (once, from the second call), or say why not: too early, no recorder."""
        if not self.recordable or self.calls <= CALLS_BEFORE_RECORDING:
            return False
        recorder = graph_recorder(args[0])
        if recorder is None:
            self.recordable = False
            return False
        xp = device_namespace(args[0])
        inputs = tuple(xp.asarray(a, copy=True) for a in args)
        try:
            self._graph, self._outputs = recorder(self.function, inputs)
        except Exception:  # noqa: BLE001  (a function that cannot be recorded runs as it is)
            self.recordable, self._graph = False, None
            return False
        self._inputs = inputs
        return True


def graph_recorder(x: Any) -> GraphRecorder | None:
    """How to record a function's launches on ``x``'s device as a graph to replay, or None where
    its library has none: PyTorch on CUDA (``torch.cuda.CUDAGraph``, recorded on a side stream,
    as CUDA's stream capture asks; not through ``torch.cuda.graph``, whose garbage collection and
    emptied memory cache at each recording would cost more than a replay saves)."""
    import array_api_compat

    if not (array_api_compat.is_torch_array(x) and getattr(x.device, "type", "cpu") == "cuda"):
        return None

    def record(function: Callable[..., tuple[Any, ...]], inputs: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(side):  # the call before this one (eager) warmed the library up
            graph.capture_begin()
            try:
                outputs = function(*inputs)
            finally:
                graph.capture_end()
        torch.cuda.current_stream().wait_stream(side)
        return graph, outputs

    return record


def check_kernels(K: Any, *, require_psd: bool, check_psd: str | bool) -> tuple[Any, float]:
    """The checks of :func:`kernelfuse.validation.check_kernels` on a device stack, on its device:
    shape (M, N, N), float32 or float64, finite, entries within bounds, symmetric and (where
    ``check_psd``) PSD to the same tolerances; returns it unchanged and its largest entry."""
    from kernelfuse.errors import ValidationError
    from kernelfuse.validation import FLOAT32_TOL, MAX_KERNEL_ENTRY, PSD_TOL, SYMMETRY_TOL, check_eigenvalues

    xp = device_namespace(K)
    if K.ndim != 3 or K.shape[1] != K.shape[2] or 0 in K.shape:
        raise ValidationError(f"K must have shape (M, N, N) with M, N >= 1, got {tuple(K.shape)}")
    if K.dtype not in (xp.float32, xp.float64):
        raise ValidationError(f"a device stack K must be float32 or float64, got {K.dtype}; "
                              "convert it on its device (xp.astype)")
    tol = FLOAT32_TOL if K.dtype == xp.float32 else SYMMETRY_TOL
    largest, asymmetry = kernel_statistics(K)
    bad = np.flatnonzero(~(largest <= MAX_KERNEL_ENTRY))
    if bad.size:
        raise ValidationError(f"kernel {bad[0]} of K holds NaN, inf or entries beyond {MAX_KERNEL_ENTRY:g} "
                              f"(largest |K_ij| {largest[bad[0]]:.6g}); rescale or fix the kernels")
    if require_psd:
        bad = np.flatnonzero(asymmetry > tol * np.maximum(1.0, largest))
        if bad.size:
            raise ValidationError(f"kernel {bad[0]} of K is not symmetric (max |K - K'| = "
                                  f"{asymmetry[bad[0]]:.3g}); this family needs symmetric PSD kernels")
        psd_tol = FLOAT32_TOL if K.dtype == xp.float32 else PSD_TOL
        for m in range(K.shape[0]) if check_psd else ():
            check_eigenvalues(m, *extreme_eigenvalues(K, m), psd_tol)
    return K, float(largest.max())
