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
import errno
import fcntl
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from omp_session.errors import PersistenceError, ReadOnlySessionError, SessionChangedError
from omp_session.format.ids import new_session_id
from omp_session.store import DurabilityPolicy
from omp_session.store.atomic_files import (
    FileState,
    create_from,
    describe_change,
    fsync_directory,
    state_fields,
    unique_path,
    write_all,
)
from omp_session.store.blobs import BlobSink
from omp_session.store.lock import ProcessLock, adopt, release, share_or_lock, try_lock
from omp_session.store.regular import open_regular

__all__ = ["FileStorage"]


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
        self._path_text = os.fspath(path)  # for the stat of every append (no Path conversion)
        self.blobs = blobs
        self.policy: DurabilityPolicy = policy
        self.read_only = read_only
        self.batch_interval = batch_interval
        self._lock: ProcessLock | None = None
        self._known: FileState | None = None
        #: Why the file no longer is what we last read or wrote (another program or another
        #: manager of this process changed it); a full rewrite then refuses to run.
        self._changed_by_others: str | None = None
        self._tail_checked = False
        self._sync_lock = threading.Lock()
        self._timer: threading.Timer | None = None

    # -- reading -------------------------------------------------------------------------------

    def exists(self) -> bool:
        return self._path.exists()

    @property
    def _fd(self) -> int | None:
        return self._lock.fd if self._lock is not None else None

    def read(self) -> bytes:
        """Every byte of the file (a regular file only: never blocks on a FIFO, issue 11 item 4)."""
        with os.fdopen(open_regular(self._path), "rb") as handle:
            data = handle.read()
            self._known = FileState.of(os.fstat(handle.fileno()))
        self._changed_by_others = None
        return data

    def move(self, target: Path) -> None:
        """Rename the session file to ``target``. The lock and the append descriptor follow the
        inode, so no other writer can slip in and no stray file is left at the old path (omp
        recreates one when an append races its rename, §9 #8a). Onto another filesystem
        (``EXDEV``, as omp 18.3 handles it) the file is copied instead: see
        :meth:`_move_across_devices`."""
        self._ensure_writable()
        if target.exists():
            raise PersistenceError(target, FileExistsError(f"{target} already exists"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if not self._path.exists():  # nothing written yet: only the future place changes
            self._path = self.path = target
            self._path_text = os.fspath(target)
            return
        try:
            os.rename(self._path, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise PersistenceError(self._path, exc) from exc
            self._move_across_devices(target)
            return
        fsync_directory(target.parent)
        fsync_directory(self._path.parent)
        self._path = self.path = target
        self._path_text = os.fspath(target)
        self._note_own_metadata_change()

    def _move_across_devices(self, target: Path) -> None:
        """``move`` onto another filesystem, never exposing a partial file: the bytes are copied
        to a staging file beside ``target`` (locked before anyone can see it), fsynced, linked to
        ``target`` (which fails if a file appeared there), and only then is the old file unlinked
        (if that fails, ``target`` is removed again and the session stays where it was). The
        staging copy's descriptor becomes our lock and append descriptor."""
        self.check_unchanged()
        staging = target.parent / f".{target.name}.{os.getpid()}.{new_session_id()}.move"
        try:
            fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise PersistenceError(target, exc) from exc
        try:
            try_lock(fd, target)
            source = self._lock.fd if self._lock is not None else open_regular(self._path)
            try:
                offset = 0
                while chunk := os.pread(source, 1 << 20, offset):
                    write_all(fd, chunk)
                    offset += len(chunk)
                os.fchmod(fd, os.fstat(source).st_mode & 0o7777)
            finally:
                if self._lock is None:
                    os.close(source)
            self.check_unchanged()  # nothing was appended meanwhile (one manager owns the file)
            os.fsync(fd)
            os.link(staging, target)
            try:
                os.unlink(self._path)
            except OSError:
                os.unlink(target)
                raise
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError):
                raise PersistenceError(self._path, exc) from exc
            raise
        finally:
            with contextlib.suppress(OSError):
                os.unlink(staging)
        fsync_directory(target.parent)
        fsync_directory(self._path.parent)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        old, self._lock = self._lock, adopt(fd)
        if old is not None:
            release(old)
        self._path = self.path = target
        self._path_text = os.fspath(target)
        self._known = FileState.of(os.fstat(fd))

    def _note_own_metadata_change(self) -> None:
        """Our rename changed the file's ctime; anything else that differs stays a foreign change."""
        known = self._known
        with contextlib.suppress(OSError):
            current = FileState.of(os.stat(self._path))
            if known is not None and current._replace(ctime_ns=known.ctime_ns) == known:
                self._known = current

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
        return known is None or not known.same_file(current) or current.st_size < known.size

    def read_range(self, offset: int, size: int) -> bytes:
        """``size`` bytes of the file from ``offset`` (fewer at its end): a rewrite copies the lines
        of unchanged entries from here (store/line_table.py)."""
        if self._lock is not None:
            return os.pread(self._lock.fd, size, offset)
        fd = open_regular(self._path)
        try:
            return os.pread(fd, size, offset)
        finally:
            os.close(fd)

    def unchanged(self) -> bool:
        """Whether the file is still exactly what we last read or wrote (see ``check_unchanged``)."""
        try:
            self.check_unchanged()
        except SessionChangedError:
            return False
        return True

    @property
    def size(self) -> int | None:
        """The file's size after our last read or write (where our next append lands)."""
        return self._known.size if self._known is not None else None

    def read_from(self, offset: int) -> bytes:
        """Bytes appended after ``offset`` (for readers following a live writer)."""
        with os.fdopen(open_regular(self._path), "rb") as handle:
            handle.seek(offset)
            return handle.read()

    # -- locking -------------------------------------------------------------------------------

    def lock(self) -> None:
        """Take this process's writer lock of an existing file, shared with every other storage of
        the process on the same file (raises ``SessionLockedError`` if another process holds it)."""
        self._ensure_writable()
        if self._lock is not None:
            return
        for _attempt in range(5):
            held = share_or_lock(open_regular(self._path, os.O_RDWR | os.O_APPEND), self._path)
            try:
                if (os.stat(self._path).st_dev, os.stat(self._path).st_ino) == held.key:
                    self._lock = held
                    if held.users == 1:
                        self._remove_stale_temps()
                    return
            except BaseException:
                release(held)
                raise
            release(held)  # renamed over while we waited: lock the new file instead
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
        """Write ``data`` at the end of the file in one ``write``. Raises ``SessionChangedError``
        instead of acknowledging a write that went nowhere: when the path names another file (a
        foreign rename-replace, issue 11 item 1) or the file was truncated.

        Three system calls besides the write: an ``fstat`` before it (a foreign truncation, append
        or same-size edit since our last write is noticed here, issue 11 item 3) and a ``stat`` of
        the path after it. When that stat names our inode it *is* the state of our descriptor, so
        no second ``fstat`` is needed (the append cost, issue 11 "append cost")."""
        if self.read_only:
            raise ReadOnlySessionError(self._path)
        try:
            lock = self._lock
            fd = lock.fd if lock is not None else self._open_for_append()
            before = os.fstat(fd)
            known = self._known
            if known is not None and before.st_size < known.size:
                self._refuse_truncated(known.size, before.st_size)
            if not self._tail_checked:
                data = self._newline_if_torn(fd) + data
                self._tail_checked = True
            written = os.write(fd, data)
            if written != len(data):
                write_all(fd, data[written:])
            # Checked after the write: a write that went to a replaced file is never acknowledged.
            try:
                after = os.stat(self._path_text)
            except FileNotFoundError:
                after = None
            if after is None or after.st_ino != before.st_ino or after.st_dev != before.st_dev:
                what = "deleted" if after is None else "replaced by another file"
                raise SessionChangedError(
                    self._path, f"the file was {what} by another program; the entry was not saved"
                )
            if after.st_size < before.st_size + len(data):
                self._refuse_truncated(before.st_size + len(data), after.st_size)
            self._after_write(fd, before, after, len(data))
        except OSError as exc:
            # A partial write may have left a torn line: check the tail again before the next one.
            self._tail_checked = False
            raise PersistenceError(self._path, exc) from exc

    def _open_for_append(self) -> int:
        """Create the file if it is missing and take the writer lock; returns the descriptor."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        if not self._path.exists():
            os.close(os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        self.lock()
        fd = self._fd
        assert fd is not None
        return fd

    def _refuse_truncated(self, expected: int, found: int) -> None:
        self._tail_checked = False
        raise SessionChangedError(
            self._path, f"the file was truncated by another program ({expected} → {found} bytes)"
        )

    def _newline_if_torn(self, fd: int) -> bytes:
        size = os.fstat(fd).st_size
        if size == 0:
            return b""
        return b"" if os.pread(fd, 1, size - 1) == b"\n" else b"\n"

    def _after_write(self, fd: int, before: os.stat_result, after: os.stat_result, written: int) -> None:
        policy = self.policy
        if policy == "fsync":
            os.fsync(fd)
        elif policy == "batch":
            self._schedule_sync()
        known = self._known
        if known is None or state_fields(before) != known:  # field by field, as one tuple
            # Someone else wrote to the file since our last read or write: appends stay safe
            # (line granularity), a full rewrite would lose their change.
            if known is not None and self._changed_by_others is None:
                self._changed_by_others = describe_change(known, before)
        elif after.st_size != before.st_size + written and self._changed_by_others is None:
            self._changed_by_others = "another writer appended at the same time"
        self._known = FileState.of(after)

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

    def check_unchanged(self, *, ignore_ctime: bool = False) -> None:
        """Raise ``SessionChangedError`` if the file differs from what we last read or wrote
        (``ignore_ctime``: after we hard-linked a backup to it, which changes its ctime)."""
        try:
            current = FileState.of(os.stat(self._path))
        except FileNotFoundError:
            if self._known is not None:
                raise SessionChangedError(self._path, "file was deleted") from None
            return
        if self._known is None:
            raise SessionChangedError(self._path, "a file appeared at this path")
        if self._changed_by_others is not None:
            raise SessionChangedError(self._path, self._changed_by_others)
        if ignore_ctime:
            current = current._replace(ctime_ns=self._known.ctime_ns)
        if current != self._known:
            raise SessionChangedError(self._path, describe_change(self._known, current))

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        """Replace the file atomically (temp file, fsync, rename). A file that did not exist when
        we last looked is *created* (hard link), never replaced: two processes creating the same
        path cannot both win (issue 11 item 2)."""
        self._ensure_writable()
        self.check_unchanged()
        creating = self._known is None
        # Through a symlink, the target is rewritten and the link stays a link (issue 11 item 10).
        target = Path(os.path.realpath(self._path)) if self._path.is_symlink() else self._path
        directory = target.parent
        directory.mkdir(parents=True, exist_ok=True)
        temp = directory / f".{target.name}.{new_session_id()}.tmp"
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise PersistenceError(self._path, exc) from exc
        try:
            try_lock(fd, self._path)
            for chunk in chunks:
                write_all(fd, chunk)
            os.fsync(fd)
            self._install(fd, temp, target, backup_suffix, creating=creating)
        except BaseException as exc:
            os.close(fd)
            temp.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise PersistenceError(self._path, exc) from exc
            raise
        self._known = FileState.of(os.fstat(fd))
        self._changed_by_others = None

    def _install(
        self, fd: int, temp: Path, target: Path, backup_suffix: str | None, *, creating: bool
    ) -> None:
        """Put the complete, locked temp file at the path; from here on ``fd`` is our lock."""
        with contextlib.suppress(FileNotFoundError):
            os.fchmod(fd, os.stat(target).st_mode & 0o7777)
        if backup_suffix is not None and target.exists():
            backup = unique_path(target.with_name(target.name + backup_suffix))
            try:
                os.link(target, backup)  # keeps the old inode: no copy needed
            except OSError:
                import shutil

                shutil.copy2(target, backup)
        self.check_unchanged(ignore_ctime=True)
        if creating:
            create_from(temp, target)
        else:
            os.replace(temp, target)
        fsync_directory(target.parent)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        old, self._lock = self._lock, adopt(fd)
        self._tail_checked = True
        if old is not None:
            release(old)

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
        if self._lock is not None:
            held, self._lock = self._lock, None
            try:
                os.fsync(held.fd)
            finally:
                release(held)

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
            fd = open_regular(self._path, os.O_RDWR)
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
