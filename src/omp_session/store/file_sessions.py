"""The default :class:`~omp_session.store.SessionStorage`: session files in directories.

``open_file`` is the open path of a file (spec §7.5: lock, read, validate, migrate; never a write
to a user's file): through the offset index when it can (``store/_indexed/``, the private package
only the file backend enters), else one full parse. ``Tuning.read_strategy`` names the way it
reads (``auto`` by default); ``store/_indexed/strategies.py`` says which steps each way takes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from omp_session.errors import CorruptSessionError, SessionError, SessionNotFoundError
from omp_session.format.entries import is_assistant_line
from omp_session.format.header import is_blank, is_slot_only
from omp_session.format.transform import KeepReplay, drop_replay
from omp_session.store import DurabilityPolicy, OpenedFile, SessionStorage, StoredSession
from omp_session.store._indexed.fast_open import IndexedOpen, open_cold, open_indexed, remember_index
from omp_session.store._indexed.line_table import LineTable
from omp_session.store._indexed.strategies import read_path
from omp_session.store.blobs import BlobSink
from omp_session.store.file import FileStorage
from omp_session.store.loading import parse_session, read_session_bytes
from omp_session.store.moves import recover_move
from omp_session.store.regular import regular_file
from omp_session.store.tuning import DEFAULT_TUNING, Tuning


class FileSessionStorage:
    """Sessions as JSONL files (omp's ``FileSessionStorage``); paths are file paths. ``tuning``:
    the thresholds and sizes its opens read with (the offset index, lazy reads)."""

    def __init__(self, tuning: Tuning = DEFAULT_TUNING) -> None:
        self.tuning = tuning

    def new_storage(self, path: Path, blobs: BlobSink, *, durability: DurabilityPolicy) -> FileStorage:
        path.parent.mkdir(parents=True, exist_ok=True)  # omp creates the session directory at once
        return FileStorage(path, blobs, policy=durability)

    def open_session(
        self,
        path: Path,
        blobs: BlobSink,
        *,
        read_only: bool,
        durability: DurabilityPolicy,
        use_index: bool = True,
        keep_replay: KeepReplay = drop_replay,
    ) -> OpenedFile:
        return open_file(
            path,
            blobs,
            read_only=read_only,
            durability=durability,
            use_index=use_index,
            keep_replay=keep_replay,
            tuning=self.tuning,
        )

    def read_session(self, path: Path) -> bytes:
        try:
            return read_session_bytes(path)
        except FileNotFoundError:
            raise SessionNotFoundError(path) from None

    def session_exists(self, path: Path) -> bool:
        return path.is_file()

    def stat_session(self, path: Path) -> StoredSession | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        return StoredSession(path, stat.st_size, stat.st_mtime)

    def read_head(self, path: Path, limit: int) -> bytes:
        try:
            with regular_file(path) as handle:
                return handle.read(limit)
        except (OSError, CorruptSessionError):
            return b""

    def list_sessions(self, directory: Path) -> list[StoredSession]:
        found: list[StoredSession] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name.endswith(".jsonl") and entry.is_file():
                        stat = entry.stat()
                        found.append(StoredSession(Path(entry.path), stat.st_size, stat.st_mtime))
        except OSError:
            return []
        return found

    def list_directories(self, root: Path) -> list[Path]:
        try:
            return [child for child in root.iterdir() if child.is_dir()]
        except OSError:
            return []

    def has_assistant_turn(self, path: Path) -> bool:
        """Streams the file line by line (a whole line at a time, never the whole file)."""
        try:
            with open(path, "rb") as handle:
                return any(is_assistant_line(line.rstrip(b"\r\n")) for line in handle)
        except OSError:
            return False

    def delete_session(self, path: Path, *, backups: bool = False) -> None:
        """Unlink the file and remove its artifact directory ``<path minus .jsonl>``; with
        ``backups`` also every ``<name>.*.bak`` file of its directory (the name of the session
        file, then a dot), as omp 18.2.9+ does; nothing else is touched."""
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        artifacts = path.with_suffix("") if path.suffix == ".jsonl" else None
        if artifacts is not None and artifacts.is_dir() and not artifacts.is_symlink():
            shutil.rmtree(artifacts)
        if not backups:
            return
        prefix = path.name + "."
        try:
            with os.scandir(path.parent) as entries:
                stale = [e.path for e in entries if e.name.startswith(prefix) and e.name.endswith(".bak")]
        except OSError:
            return
        for backup in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(backup)


__all__ = [
    "FileSessionStorage",
    "open_file",
    "read_stored_session",
    "session_storage",
    "stored_session_exists",
]


def session_storage(storage: SessionStorage | None = None) -> SessionStorage:
    """``storage`` if given, else session files (a caller's store is passed in, never configured
    for the process)."""
    return storage if storage is not None else FileSessionStorage()


def read_stored_session(path: Path, storage: SessionStorage | None = None) -> bytes:
    """The bytes of the session at ``path`` in ``storage`` (files by default)."""
    return session_storage(storage).read_session(path)


def stored_session_exists(path: Path, storage: SessionStorage | None = None) -> bool:
    return session_storage(storage).session_exists(path)


def open_file(
    path: Path,
    blobs: BlobSink,
    *,
    read_only: bool,
    durability: DurabilityPolicy,
    use_index: bool = True,
    keep_replay: KeepReplay = drop_replay,
    tuning: Tuning = DEFAULT_TUNING,
) -> OpenedFile:
    """Lock (unless ``read_only``) and read ``path``; raise ``SessionError``s for unusable files
    (``keep_replay``: the opening dialect's OpenAI replay rule, ``parse_session``; ``tuning``:
    the read strategy, and the thresholds and sizes of the offset-index open; ``use_index``:
    whether an offset index may be read and written, without which a strategy other than
    ``auto`` or ``full`` is a ``ValueError``, raised before anything is opened).

    A missing, empty or whitespace-only file gives ``loaded=None`` (read-only: an error instead).
    On an error the storage is closed again, so no lock is left behind.
    """
    route = read_path(tuning.read_strategy, use_index)
    if path.is_dir():
        raise CorruptSessionError(path, "is a directory, not a session file")
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a symlink loop, a path through a non-directory: not "missing"
        raise CorruptSessionError(path, f"cannot be opened: {exc.strerror or exc}") from exc
    storage = FileStorage(path, blobs, policy=durability, read_only=read_only)
    if not path.exists():
        if read_only:
            raise SessionNotFoundError(path)
        return OpenedFile(path, storage)
    try:
        found = _lock_and_read(storage, path, read_only, route.warm, keep_replay, tuning)
        if isinstance(found, IndexedOpen):
            _keep_lines(storage, found.lines, read_only)
            return OpenedFile(path, storage, found.loaded, found.read_offset)
        if is_blank(found) or (len(found) < 65536 and is_slot_only(found)):
            # omp 18 starts afresh on a slot-only file too (its slot title is lost, §6.2).
            if read_only:
                raise CorruptSessionError(path, "empty session file")
            return OpenedFile(path, storage)
        # No cold open for the full strategy, nor where the runtime switched the index off: it writes one.
        cold = open_cold(path, found, storage, keep_replay, tuning, route.cold) if route.cold else None
        if cold is not None:
            # The warm strategy reads through the index just written (else this open serves).
            warm = open_indexed(path, storage, keep_replay, tuning) if route.rebuilds else None
            if warm is not None:
                cold.close()
                cold = warm
            _keep_lines(storage, cold.lines, read_only)
            return OpenedFile(path, storage, cold.loaded, cold.read_offset)
        loaded = parse_session(path, found, storage.blobs, keep_replay)
        if route.remembers:
            remember_index(path, found, loaded, tuning)
            warm = open_indexed(path, storage, keep_replay, tuning) if route.rebuilds else None
            if warm is not None:
                _keep_lines(storage, warm.lines, read_only)
                return OpenedFile(path, storage, warm.loaded, warm.read_offset)
        decoded = loaded.decoded
        if loaded.migrated_from is None and decoded is not None:
            table = LineTable(decoded.offsets[1:], decoded.lengths[1:], loaded.entries)
            _keep_lines(storage, table, read_only)
    except BaseException:
        storage.close()
        raise
    return OpenedFile(path, storage, loaded, found.rfind(b"\n") + 1)


def _keep_lines(storage: FileStorage, table: LineTable | None, read_only: bool) -> None:
    """A writable session's storage keeps where each entry's line is: its rewrites copy the lines
    of unchanged entries from there (line_table.py, issue 11 item 6). A reader never writes."""
    if not read_only and table is not None:
        storage.keep_lines(table)


def _lock_and_read(
    storage: FileStorage,
    path: Path,
    read_only: bool,
    warm: bool,
    keep_replay: KeepReplay,
    tuning: Tuning,
) -> bytes | IndexedOpen:
    """Take the writer lock, then read: nobody can append in between.

    The order of the open path (store/_indexed/strategies.py): a large file with a valid offset
    index is opened through it (if ``warm``); else it is read, and ``open_file`` gives a large
    plain file the one-pass cold open (which writes the index) and anything else a full
    ``parse_session``.
    """
    try:
        if not read_only:
            storage.lock()
            recover_move(path)  # a move_to killed between its two renames (store/moves.py)
        return (open_indexed(path, storage, keep_replay, tuning) if warm else None) or storage.read()
    except SessionError:
        raise
    except OSError as exc:
        raise CorruptSessionError(path, f"cannot be opened: {exc.strerror or exc}") from exc
