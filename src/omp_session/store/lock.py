"""One writer per session across processes: an exclusive ``flock`` on the session file itself.

The kernel drops the lock when the holder dies, so a crash never leaves a stale lock. A full
rewrite locks the temp file *before* renaming it over the session, so the lock moves with the
content; whoever locks an fd must then check that the path still names that inode.

Internal module (used by :class:`~omp_session.store.file.FileStorage`); not part of the public API.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from omp_session.errors import SessionLockedError

__all__ = ["holder_pid", "try_lock"]


def try_lock(fd: int, path: Path) -> None:
    """Take the exclusive lock on ``fd`` or raise :class:`SessionLockedError` naming the holder."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLockedError(path, holder_pid(fd)) from None
        raise


def holder_pid(fd: int) -> int | None:
    """The pid holding a ``flock`` on ``fd``'s inode, read from ``/proc/locks`` (Linux only)."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; blocked waiters have "->" fields.
        if len(fields) >= 6 and fields[1] == "FLOCK" and "->" not in fields:
            device = fields[5].lower()
            if _same_device_inode(device, wanted):
                try:
                    return int(fields[4])
                except ValueError:
                    return None
    return None


def _same_device_inode(found: str, wanted: str) -> bool:
    try:
        f_major, f_minor, f_inode = found.split(":")
        w_major, w_minor, w_inode = wanted.split(":")
        return (int(f_major, 16), int(f_minor, 16), int(f_inode)) == (
            int(w_major, 16),
            int(w_minor, 16),
            int(w_inode),
        )
    except ValueError:
        return False
