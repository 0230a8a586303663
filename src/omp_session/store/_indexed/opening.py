"""Reading a session file for ``SessionManager.open``: lock, read, validate, migrate (spec §7.5).

Kept apart from the manager so that the façade only composes: this module decides what an
``open`` finds on disk, and never writes a user's file.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from omp_session.errors import CorruptSessionError, SessionError, SessionNotFoundError
from omp_session.store import DurabilityPolicy, Storage
from omp_session.store._indexed.fast_open import IndexedOpen, open_cold, open_indexed, remember_index
from omp_session.store.blobs import BlobSink
from omp_session.store.file import FileStorage
from omp_session.store.loading import LoadedSession, is_blank, is_slot_only, parse_session
from omp_session.store.moves import recover_move

__all__ = ["OpenedFile", "absolute", "open_file"]


@dataclass
class OpenedFile:
    """What ``open`` found. ``loaded is None`` means: nothing to lose, start a new session there."""

    path: Path
    storage: Storage
    loaded: LoadedSession | None = None
    #: Offset after the last complete line (where ``refresh`` continues).
    read_offset: int = 0


def open_file(
    path: Path, blobs: BlobSink, *, read_only: bool, durability: DurabilityPolicy, use_index: bool = True
) -> OpenedFile:
    """Lock (unless ``read_only``) and read ``path``; raise ``SessionError``s for unusable files.

    A missing, empty or whitespace-only file gives ``loaded=None`` (read-only: an error instead).
    On an error the storage is closed again, so no lock is left behind.
    """
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
        found = _lock_and_read(storage, path, read_only, use_index)
        if isinstance(found, IndexedOpen):
            return OpenedFile(path, storage, found.loaded, found.read_offset)
        if is_blank(found) or (len(found) < 65536 and is_slot_only(found)):
            # omp 18 starts afresh on a slot-only file too (its slot title is lost, §6.2).
            if read_only:
                raise CorruptSessionError(path, "empty session file")
            return OpenedFile(path, storage)
        # Without the index (the runtime switched it off), no cold open either: it writes one.
        cold = open_cold(path, found, storage) if use_index else None
        if cold is not None:
            return OpenedFile(path, storage, cold.loaded, cold.read_offset)
        loaded = parse_session(path, found, storage.blobs)
        if use_index:
            remember_index(path, found, loaded)
    except BaseException:
        storage.close()
        raise
    return OpenedFile(path, storage, loaded, found.rfind(b"\n") + 1)


def _lock_and_read(storage: FileStorage, path: Path, read_only: bool, use_index: bool) -> bytes | IndexedOpen:
    """Take the writer lock, then read: nobody can append in between.

    The order of the open path (store/_indexed/fast_open.py): a large file with a valid offset index is
    opened through it; else it is read, and ``open_file`` gives a large plain file the one-pass
    cold open (which writes the index) and anything else a full ``parse_session``.
    """
    try:
        if not read_only:
            storage.lock()
            recover_move(path)  # a move_to killed between its two renames (store/moves.py)
        return (open_indexed(path, storage) if use_index else None) or storage.read()
    except SessionError:
        raise
    except OSError as exc:
        raise CorruptSessionError(path, f"cannot be opened: {exc.strerror or exc}") from exc


def absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute without resolving symlinks (omp keeps the path it was given)."""
    return Path(os.path.abspath(path))
