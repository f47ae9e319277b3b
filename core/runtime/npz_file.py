"""The ``.npz`` files kernelfuse reads and writes: arrays only, never pickle.

Files kernelfuse writes (models, results) carry a SHA-256 digest of their
arrays (array ``"sha256"``, over every other array's name, dtype, shape and
bytes, in name order).  Reading such a file recomputes it, so that a file
changed or cut short after it was written is refused with a clear error
instead of loading as a subtly different model.  The digest guards
integrity, not authenticity: anyone can write a file with a valid digest;
what makes loading safe is that it never unpickles and rebuilds objects
only from registered names (:mod:`kernelfuse.frontends.persistence`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from os import PathLike
from typing import TypeVar

import numpy as np

from kernelfuse.errors import ValidationError
from kernelfuse.runtime.files import atomic_write

T = TypeVar("T")

#: Name of the array holding the digest.
DIGEST = "sha256"
#: The first bytes of a zip archive (an ``.npz`` file).
ZIP_MAGIC = b"PK\x03\x04"


def arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 (hex) of the arrays but :data:`DIGEST`: name, dtype, shape and bytes of each."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        if name == DIGEST:
            continue
        array = np.ascontiguousarray(arrays[name])
        digest.update(json.dumps([name, array.dtype.str, list(array.shape)]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def write_npz(path: str | PathLike[str], arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` with their digest (``numpy.savez``; no object arrays) at exactly
    ``path`` (no ``.npz`` appended), atomically (:func:`kernelfuse.runtime.files.atomic_write`)."""
    arrays = {name: np.asarray(value) for name, value in arrays.items()}
    for name, array in arrays.items():
        if array.dtype.hasobject:
            raise ValidationError(f"array {name!r} holds Python objects: it cannot be saved without pickle")
    with atomic_write(path) as handle:  # a file object: numpy appends no suffix to it
        # numpy's stub lets a ** mapping fill savez's allow_pickle: these names are the arrays'
        np.savez(handle, **arrays, **{DIGEST: np.array(arrays_digest(arrays))})  # type: ignore[arg-type]


def read_numpy_file(path: str | PathLike[str], what: str, suffix: str, magic: bytes, expected: str,
                    read: Callable[[], T]) -> T:
    """``read()`` of a numpy file whose first bytes are ``magic``, with every failure a
    :class:`ValidationError` naming the file (``expected`` says what it should be)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(len(magic))
        if head != magic:  # numpy would take it for a pickle and suggest allow_pickle=True
            raise ValidationError(f"cannot read {what} file {path} as {suffix}: it is not {expected}")
        return read()
    except FileNotFoundError:
        raise ValidationError(f"{what} file {path} does not exist") from None
    except IsADirectoryError:
        raise ValidationError(f"{what} file {path} is a folder, not a file") from None
    except ValidationError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parser failure means an unreadable file
        # (a damaged array header fails in numpy's header parser with SyntaxError, a
        # damaged archive with BadZipFile, a huge declared shape with MemoryError, ...)
        raise ValidationError(f"cannot read {what} file {path} as {suffix}: "
                              f"{type(exc).__name__}: {exc}") from None


def read_npz(path: str | PathLike[str], what: str, *, verify: bool = False) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, read without pickle; errors name the file.

    ``verify``: the file must carry a digest (:func:`write_npz`) that matches
    its arrays; the digest is not among the arrays returned.
    """
    def read() -> dict[str, np.ndarray]:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}

    arrays = read_numpy_file(path, what, ".npz", ZIP_MAGIC, "a zip archive (numpy.savez writes one)", read)
    if not verify:
        return arrays
    recorded = arrays.pop(DIGEST, None)
    if recorded is None or recorded.shape != () or recorded.dtype.kind != "U":
        raise ValidationError(f"{what} file {path} has no kernelfuse digest: it was not written "
                              "by kernelfuse (or by a version before digests)")
    if str(recorded) != arrays_digest(arrays):
        raise ValidationError(f"{what} file {path} was modified or corrupted after it was written: "
                              "its arrays do not match the digest it carries")
    return arrays
