"""Every file kernelfuse writes, written atomically at exactly the path given.

:func:`atomic_write` writes into a new temporary file in the target's
folder, flushes and ``fsync``\\ s it, then renames it over the target
(``os.replace``, atomic on POSIX and Windows): a reader sees the old file or
the new one, never a part of either.  When the write fails (a full disk, a
file size limit, an interrupt) the temporary file is removed, the earlier
file is left as it was, and the failure is a
:class:`~kernelfuse.errors.FileWriteError` naming the path and the operating
system's error.  :func:`check_output_path` refuses a path that cannot be
written (empty, a folder, a missing or read-only folder) before any work is
done; the path is never changed (no suffix is appended).  :func:`writable_folder` refuses, by
the parameter's name, a folder to write into that is missing or is not one (an estimator's
``storage_dir``), before any work is done.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from os import PathLike
from pathlib import Path
from typing import IO, Any

from kernelfuse.errors import FileWriteError, KernelfuseError, ValidationError


def _temporary(path: Path) -> tuple[int, Path]:
    """A new file beside ``path`` (hidden, unique), opened for writing; permissions as a plain
    ``open`` would give (0o666 less the umask)."""
    while True:
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                           0o666), temporary
        except FileExistsError:
            continue


def check_output_path(path: str | PathLike[str], what: str = "output") -> Path:
    """``path`` as a :class:`~pathlib.Path` once a file can be written there, else a
    :class:`ValidationError` saying why: an empty path, a folder, something other than a
    regular file, a missing folder, or a folder that refuses a new file (tried by creating
    and removing one).  A symbolic link is checked, and written, at the file it points to."""
    if not str(path):
        raise ValidationError(f"the {what} path is empty: give a file name")
    target = Path(path)
    if target.is_dir():
        raise ValidationError(f"{what} {target} is a folder: give a file name")
    if target.exists() and not target.is_file():
        raise ValidationError(f"{what} {target} exists and is not a regular file")
    folder = _destination(target).parent
    if not folder.is_dir():
        raise ValidationError(f"cannot write {what} {target}: folder {folder} does not exist")
    _probe(_destination(target), f"cannot write {what} {target}: folder {folder}")
    return target


def _destination(target: Path) -> Path:
    """Where ``target``'s content goes: the file a symbolic link points to (the link stays)."""
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def output_folder(path: str | PathLike[str], what: str = "output folder") -> Path:
    """The folder ``path``, created if missing (with its parents), once a file can be written
    in it (:func:`writable_folder`); else a :class:`ValidationError` saying why."""
    if isinstance(path, (str, PathLike)) and str(path) and not os.path.lexists(path):
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValidationError(f"cannot create {what} {path}: {exc.strerror or exc}") from None
    return writable_folder(path, what)


def writable_folder(path: object, what: str) -> Path:
    """The existing folder ``path`` once a file can be written in it (tried by creating and
    removing one), else a :class:`ValidationError` naming ``what`` (the parameter) and saying
    why: not a path, empty, missing, not a folder, or a folder refusing new files."""
    if not isinstance(path, (str, PathLike)):
        raise ValidationError(f"{what} must be a folder path (str or os.PathLike), got {path!r}")
    if not str(path):
        raise ValidationError(f"the {what} path is empty: give a folder")
    folder = Path(path)
    if not folder.exists():
        raise ValidationError(f"{what} {folder} does not exist: create it, or give an existing folder")
    if not folder.is_dir():
        raise ValidationError(f"{what} {folder} exists and is not a folder: give a folder")
    _probe(folder / "probe", f"{what} {folder}")
    return folder


def _probe(target: Path, where: str) -> None:
    """Create and remove a file beside ``target``; ``where`` starts the error if that fails."""
    try:
        descriptor, probe = _temporary(target)
    except OSError as exc:
        raise ValidationError(f"{where} does not accept new files ({exc.strerror or exc})") from None
    os.close(descriptor)
    os.unlink(probe)


@contextmanager
def atomic_write(path: str | PathLike[str], mode: str = "wb", **options: Any) -> Iterator[IO[Any]]:
    """A file object to write ``path``'s new content to (``open``'s ``mode``, ``"w..."`` only,
    and ``options``); the content replaces ``path`` only when the block ends without error.

    On any error (or interrupt) inside the block or while finishing the file, the
    temporary file is removed and ``path`` keeps its earlier content; an ``OSError`` is
    raised again as a :class:`FileWriteError` naming ``path``.  A replaced file keeps its
    permissions.
    """
    if not mode.startswith("w"):
        raise ValueError(f"atomic_write writes a new file: mode must start with 'w', got {mode!r}")
    target = check_output_path(path)
    destination = _destination(target)
    descriptor, temporary = _temporary(destination)
    try:
        with open(descriptor, mode, **options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if destination.exists():
            os.chmod(temporary, stat.S_IMODE(destination.stat().st_mode))
        os.replace(temporary, destination)
    except BaseException as exc:
        with suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError) and not isinstance(exc, KernelfuseError):
            raise FileWriteError(f"cannot write {target}: {exc.strerror or exc}; "
                                 "the file there before, if any, is unchanged") from None
        raise
    _sync_folder(destination.parent)


def write_png(figure: Any, path: str | PathLike[str], dpi: int = 100) -> Path:
    """Write a matplotlib figure as PNG at ``path`` (atomically) and close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_write(path) as handle:
            figure.savefig(handle, format="png", dpi=dpi)
    finally:
        plt.close(figure)
    return Path(path)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the system allows opening a folder (POSIX)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
