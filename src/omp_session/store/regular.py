"""Opening a file only if it is a regular file, without ever blocking: the special-file rule
(issue 11 item 4, issue 25 item 2; docs/durability.md).

A FIFO named ``*.jsonl`` would block ``open`` until a writer appears, a socket cannot be opened, a
symlink to ``/dev/zero`` reads until memory runs out, and a directory is no file. Every read of a
session, a transcript, an import marker, a blob or a small store file opens with ``O_NONBLOCK``
(which only matters for such special files), then checks with ``fstat`` what it opened: no window
between a check and the open. Scans skip what this refuses; a file named on the command line is
refused with :class:`CorruptSessionError` naming it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from omp_session.errors import CorruptSessionError

__all__ = ["open_regular", "open_regular_stat", "read_regular", "regular_file"]

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def open_regular(path: Path | str, flags: int = os.O_RDONLY) -> int:
    """``os.open(path, flags)`` for a regular file (symlinks followed); raises
    :class:`CorruptSessionError` for anything else and for a symlink loop. Other ``OSError``s
    (missing, permission) are raised as they are, for the caller to name."""
    return open_regular_stat(path, flags)[0]


def open_regular_stat(path: Path | str, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
    """:func:`open_regular` and the ``fstat`` it checked, for a caller that needs the size or
    the mtime too (one system call fewer per file of a listing)."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptSessionError(path, "is a symbolic link loop") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a socket, or a directory opened for writing
            raise CorruptSessionError(path, f"is not a regular file ({exc.strerror})") from None
        raise
    try:
        found = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        kind = _KINDS.get(stat.S_IFMT(found.st_mode), "not a regular file")
        raise CorruptSessionError(path, f"is {kind}, not a session file; not read")
    return fd, found


def regular_file(path: Path | str | os.PathLike[str]) -> BinaryIO:
    """:func:`open_regular` as a binary file object (``with regular_file(path) as handle:``)."""
    return os.fdopen(open_regular(os.fspath(path)), "rb")


def read_regular(path: Path | str) -> bytes:
    """The whole content of the regular file ``path`` (see :func:`open_regular`)."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return handle.read()
