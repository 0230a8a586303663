"""Crash-safe file primitives under the session store: atomic replace and create, the identity of a
file's content, durable renames (docs/durability.md).

Internal module (used by :mod:`omp_session.store.file` and the other writers of whole files).
"""

from __future__ import annotations

import contextlib
import errno
import operator
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from omp_session.errors import SessionChangedError
from omp_session.format.ids import new_session_id

__all__ = [
    "FileState",
    "create_from",
    "describe_change",
    "fsync_directory",
    "replace_file",
    "state_fields",
    "unique_path",
    "write_all",
]


#: A stat's fields in :class:`FileState`'s order, as a plain tuple (one C call reads them all): it
#: equals the ``FileState.of`` that stat, without building one.
state_fields: Callable[[os.stat_result], tuple[int, int, int, int, int]] = operator.attrgetter(
    "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns", "st_dev"
)


class FileState(NamedTuple):
    """What identifies the content of a file without reading it (issue 11 item 3: a same-size
    in-place edit changes the mtime, and even one that restores the mtime changes the ctime)."""

    # An append compares a stat with it field by field, the size first: it differs most often.
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    device: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileState:
        # Straight to tuple.__new__: NamedTuple's generated __new__ is one more Python call, and
        # every append records the state its write left.
        return tuple.__new__(cls, state_fields(st))

    def same_file(self, st: os.stat_result) -> bool:
        return (self.device, self.inode) == (st.st_dev, st.st_ino)


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (not possible on every platform)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def describe_change(known: FileState, current: FileState | os.stat_result) -> str:
    """What changed between two states of a file, for the message of a ``SessionChangedError``."""
    state = current if isinstance(current, FileState) else FileState.of(current)
    if (state.device, state.inode) != (known.device, known.inode):
        return "file was replaced"
    if state.size != known.size:
        return f"size {known.size} → {state.size}"
    if state.mtime_ns != known.mtime_ns:
        return "modification time changed"
    return "edited in place (status change time changed)"


def replace_file(path: Path, data: bytes) -> None:
    """Give ``path`` the content ``data`` atomically (temp file, fsync, rename, fsync the
    directory): a failure or a crash leaves the old file (or none) and no temp file behind."""
    temp = path.with_name(f".{path.name}.{new_session_id()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(temp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def create_from(temp: Path, path: Path) -> None:
    """Give ``temp``'s inode the name ``path`` only if nothing has that name (``link`` fails with
    EEXIST otherwise, atomically, where ``rename`` would replace it)."""
    try:
        os.link(temp, path)
    except FileExistsError:
        raise SessionChangedError(path, "a file appeared at this path while creating it") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
            raise
        os.replace(temp, path)  # a filesystem without hard links: checked just before, not atomic
        return
    with contextlib.suppress(OSError):
        os.unlink(temp)


def unique_path(path: Path) -> Path:
    """``path``, or the first ``<path>.N`` (N = 1, 2, ...) that does not exist."""
    if not path.exists():
        return path
    counter = 1
    while True:
        candidate = path.with_name(f"{path.name}.{counter}")
        if not candidate.exists():
            return candidate
        counter += 1
