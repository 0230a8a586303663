"""Append-only JSONL file storage with locking and crash-safe rewrites (spec §7.3, docs/durability.md).

* An append is one ``os.write`` of complete lines on an ``O_APPEND`` descriptor: once it returns,
  the lines survive a crash of this process. Policy ``"fsync"`` also fsyncs every append;
  ``"batch"`` fsyncs at most every ``batch_interval`` seconds and on ``flush``/``close``.
* If the file does not end in ``\\n`` (torn by a crash), a newline is written first so the next
  entry is never glued to the partial line (omp loses it, §9 #2).
* A full rewrite writes a temp file, fsyncs it, renames it over the session and fsyncs the
  directory, after checking that the file has not changed since we last read or wrote it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from omp_session.errors import PersistenceError, ReadOnlySessionError, SessionChangedError
from omp_session.format.ids import new_session_id
from omp_session.store import DurabilityPolicy
from omp_session.store.blobs import BlobSink
from omp_session.store.lock import try_lock


class FileState(NamedTuple):
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileState:
        return cls(st.st_ino, st.st_size, st.st_mtime_ns)


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _unique_path(path: Path) -> Path:
    if not path.exists():
        return path
    counter = 1
    while True:
        candidate = path.with_name(f"{path.name}.{counter}")
        if not candidate.exists():
            return candidate
        counter += 1


class FileStorage:
    """One session file. Not thread-safe beyond the batch timer: one manager owns it."""

    def __init__(
        self,
        path: Path | str,
        blobs: BlobSink,
        *,
        policy: DurabilityPolicy = "os",
        read_only: bool = False,
        batch_interval: float = 0.2,
    ) -> None:
        self.path: Path | None = Path(path)
        self._path = Path(path)
        self.blobs = blobs
        self.policy: DurabilityPolicy = policy
        self.read_only = read_only
        self.batch_interval = batch_interval
        self._fd: int | None = None
        self._known: FileState | None = None
        self._tail_checked = False
        self._sync_lock = threading.Lock()
        self._timer: threading.Timer | None = None

    # -- reading -------------------------------------------------------------------------------

    def exists(self) -> bool:
        return self._path.exists()

    def read(self) -> bytes:
        with open(self._path, "rb") as handle:
            data = handle.read()
            self._known = FileState.of(os.fstat(handle.fileno()))
        return data

    def move(self, target: Path) -> None:
        """Rename the session file to ``target`` (same filesystem). The lock and the append
        descriptor follow the inode, so no other writer can slip in and no stray file is left at
        the old path (omp recreates one when an append races its rename, §9 #8a)."""
        self._ensure_writable()
        if target.exists():
            raise PersistenceError(target, FileExistsError(f"{target} already exists"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if not self._path.exists():  # nothing written yet: only the future place changes
            self._path = self.path = target
            return
        try:
            os.rename(self._path, target)
        except OSError as exc:
            raise PersistenceError(self._path, exc) from exc
        fsync_directory(target.parent)
        fsync_directory(self._path.parent)
        self._path = self.path = target

    def sibling(self, path: Path | None) -> FileStorage:
        if path is None:
            raise ValueError("a file storage needs a path")
        return FileStorage(path, self.blobs, policy=self.policy, batch_interval=self.batch_interval)

    def adopt_read_state(self, stat: os.stat_result) -> None:
        """Record ``stat`` as the state last read, as :meth:`read` does, for a caller that read the
        file through its own descriptor (the offset-index open): rewrites then still refuse to
        overwrite changes made by someone else since."""
        self._known = FileState.of(stat)

    def replaced_since_read(self) -> bool:
        """Whether the file at the path is no longer the one last read (renamed over by a rewrite,
        or truncated), so following it from an offset would misread it."""
        try:
            current = os.stat(self._path)
        except FileNotFoundError:
            return True
        known = self._known
        return known is None or current.st_ino != known.inode or current.st_size < known.size

    def read_from(self, offset: int) -> bytes:
        """Bytes appended after ``offset`` (for readers following a live writer)."""
        with open(self._path, "rb") as handle:
            handle.seek(offset)
            return handle.read()

    # -- locking -------------------------------------------------------------------------------

    def lock(self) -> None:
        """Take the writer lock of an existing file (raises ``SessionLockedError`` if held)."""
        self._ensure_writable()
        if self._fd is not None:
            return
        for _attempt in range(5):
            fd = os.open(self._path, os.O_RDWR | os.O_APPEND)
            try:
                try_lock(fd, self._path)
                if os.stat(self._path).st_ino == os.fstat(fd).st_ino:
                    self._fd = fd
                    self._remove_stale_temps()
                    return
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # renamed over while we waited: lock the new file instead
        raise PersistenceError(self._path, OSError("file keeps being replaced while locking"))

    def _remove_stale_temps(self) -> None:
        # Holding the session lock means no rewrite of this session is in progress anywhere:
        # temp files left by a writer killed mid-rewrite are garbage (the session is intact).
        for temp in self._path.parent.glob(f".{self._path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                temp.unlink()

    # -- writing -------------------------------------------------------------------------------

    def _ensure_writable(self) -> None:
        if self.read_only:
            raise ReadOnlySessionError(self._path)

    def append(self, data: bytes) -> None:
        self._ensure_writable()
        try:
            if self._fd is None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                if not self._path.exists():
                    os.close(os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                self.lock()
            assert self._fd is not None
            if not self._tail_checked:
                data = self._newline_if_torn(self._fd) + data
                self._tail_checked = True
            _write_all(self._fd, data)
            self._after_write(self._fd, len(data))
        except OSError as exc:
            # A partial write may have left a torn line: check the tail again before the next one.
            self._tail_checked = False
            raise PersistenceError(self._path, exc) from exc

    def _newline_if_torn(self, fd: int) -> bytes:
        size = os.fstat(fd).st_size
        if size == 0:
            return b""
        return b"" if os.pread(fd, 1, size - 1) == b"\n" else b"\n"

    def _after_write(self, fd: int, written: int) -> None:
        if self.policy == "fsync":
            os.fsync(fd)
        elif self.policy == "batch":
            self._schedule_sync()
        if self._known is None:
            self._known = FileState.of(os.fstat(fd))
        else:
            # Our own append: the size grows by what we wrote and the mtime is now unknown (-1), so
            # the rewrite check compares inode and size only. Saves an fstat on every append.
            self._known = FileState(self._known.inode, self._known.size + written, -1)

    def _schedule_sync(self) -> None:
        with self._sync_lock:
            if self._timer is None:
                self._timer = threading.Timer(self.batch_interval, self._timed_sync)
                self._timer.daemon = True
                self._timer.start()

    def _timed_sync(self) -> None:
        with self._sync_lock:
            self._timer = None
            if self._fd is not None:
                # A failure here surfaces in the next flush()/close(), which fsync again.
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)

    def check_unchanged(self) -> None:
        """Raise ``SessionChangedError`` if the file differs from what we last read or wrote."""
        try:
            current = FileState.of(os.stat(self._path))
        except FileNotFoundError:
            if self._known is not None:
                raise SessionChangedError(self._path, "file was deleted") from None
            return
        if self._known is None:
            raise SessionChangedError(self._path, "a file appeared at this path")
        known = self._known
        if known.mtime_ns < 0:
            current = current._replace(mtime_ns=-1)
        if current != known:
            if current.inode != self._known.inode:
                detail = "file was replaced"
            elif current.size != self._known.size:
                detail = f"size {self._known.size} → {current.size}"
            else:
                detail = "modification time changed"
            raise SessionChangedError(self._path, detail)

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        self._ensure_writable()
        self.check_unchanged()
        directory = self._path.parent
        directory.mkdir(parents=True, exist_ok=True)
        temp = directory / f".{self._path.name}.{new_session_id()}.tmp"
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise PersistenceError(self._path, exc) from exc
        try:
            try_lock(fd, self._path)
            for chunk in chunks:
                _write_all(fd, chunk)
            os.fsync(fd)
            self._replace_with(fd, temp, backup_suffix)
        except BaseException as exc:
            os.close(fd)
            temp.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise PersistenceError(self._path, exc) from exc
            raise
        finally:
            self._stat_after_rewrite()

    def _replace_with(self, fd: int, temp: Path, backup_suffix: str | None) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.fchmod(fd, os.stat(self._path).st_mode & 0o7777)
        if backup_suffix is not None and self._path.exists():
            backup = _unique_path(self._path.with_name(self._path.name + backup_suffix))
            try:
                os.link(self._path, backup)  # keeps the old inode: no copy needed
            except OSError:
                import shutil

                shutil.copy2(self._path, backup)
        self.check_unchanged()
        os.replace(temp, self._path)
        fsync_directory(self._path.parent)
        old = self._fd
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        self._fd = fd
        self._tail_checked = True
        if old is not None:
            os.close(old)

    def _stat_after_rewrite(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self._known = FileState.of(os.fstat(self._fd))

    def flush(self) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise PersistenceError(self._path, exc) from exc

    def close(self) -> None:
        with self._sync_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def overwrite_title_slot(self, slot_line: bytes) -> None:
        """Replace the omp 18 title slot (the first 256 bytes) in place (omp18-differences §1.2).

        Refuses unless the file is the one we know and already starts with a slot of exactly the
        same length, so no other byte can be touched. The write is one ``pwrite`` of 256 bytes at
        offset 0 — inside the first sector, which filesystems write whole — then ``fsync``: a
        crash leaves the old slot or the new one. (Not the append descriptor: with ``O_APPEND``,
        Linux ``pwrite`` ignores the offset.)
        """
        from omp_session.format.title_slot import parse_slot_line

        self._ensure_writable()
        self.check_unchanged()
        try:
            fd = os.open(self._path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise PersistenceError(self._path, exc) from exc
        try:
            current = os.pread(fd, len(slot_line), 0)
            if (
                len(current) != len(slot_line)
                or not current.endswith(b"\n")
                or parse_slot_line(current[:-1]) is None
            ):
                raise SessionChangedError(self._path, "the first line is not a title slot of the same size")
            if os.pwrite(fd, slot_line, 0) != len(slot_line):
                raise OSError("short write of the title slot")
            os.fsync(fd)
            self._known = FileState.of(os.fstat(fd))
        except OSError as exc:
            raise PersistenceError(self._path, exc) from exc
        finally:
            os.close(fd)
