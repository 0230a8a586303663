"""One writer *process* per session: an exclusive ``flock`` on the session file itself.

The kernel drops the lock when the holder dies, so a crash never leaves a stale lock. A full
rewrite locks the temp file *before* renaming it over the session, so the lock moves with the
content; whoever locks an fd must then check that the path still names that inode.

The lock belongs to the process, not to a manager (issue 11 item 9; omp lets a process reopen its
own session): a ``flock`` belongs to one open file description, so the process keeps one
:class:`ProcessLock` per inode, and every storage of the process that opens the same inode shares
its descriptor (each append is one ``write`` on it, ``O_APPEND``, so lines never interleave). The
descriptor is closed, and the lock released, when the last of them closes.

Internal module (used by :class:`~omp_session.store.file.FileStorage`); not part of the public API.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from dataclasses import dataclass
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


@dataclass
class ProcessLock:
    """This process's writer lock on one inode: the locked descriptor and how many storages use it."""

    fd: int
    key: tuple[int, int]
    pid: int
    users: int = 1


_held: dict[tuple[int, int], ProcessLock] = {}
_held_guard = threading.Lock()


def _key(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def share_or_lock(fd: int, path: Path) -> ProcessLock:
    """The process's lock on ``fd``'s inode: an existing one is shared (``fd`` is then closed and the
    shared descriptor is to be used instead), else ``fd`` is locked. Raises ``SessionLockedError``
    when another process holds it; ``fd`` is closed on every error."""
    try:
        key = _key(os.fstat(fd))
    except OSError:
        os.close(fd)
        raise
    with _held_guard:
        held = _held.get(key)
        if held is not None and held.pid == os.getpid():  # a forked child does not own it
            os.close(fd)
            held.users += 1
            return held
        try:
            try_lock(fd, path)
        except BaseException:
            os.close(fd)
            raise
        held = ProcessLock(fd, key, os.getpid())
        _held[key] = held
        return held


def adopt(fd: int) -> ProcessLock:
    """Register ``fd``, already locked (the temp file of a rewrite), as the process's lock of its inode."""
    held = ProcessLock(fd, _key(os.fstat(fd)), os.getpid())
    with _held_guard:
        _held[held.key] = held
    return held


def release(held: ProcessLock) -> None:
    """One user fewer; the last one closes the descriptor, which releases the ``flock``."""
    with _held_guard:
        held.users -= 1
        if held.users > 0:
            return
        if _held.get(held.key) is held:
            del _held[held.key]
    os.close(held.fd)


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
