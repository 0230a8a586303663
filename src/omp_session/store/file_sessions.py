"""The default :class:`~omp_session.store.SessionStorage`: session files in directories."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from omp_session.errors import SessionNotFoundError
from omp_session.format.entries import is_assistant_line
from omp_session.store import DurabilityPolicy, StoredSession
from omp_session.store.blobs import BlobSink
from omp_session.store.file import FileStorage
from omp_session.store.loading import read_session_bytes
from omp_session.store.opening import OpenedFile, open_file


class FileSessionStorage:
    """Sessions as JSONL files (omp's ``FileSessionStorage``); paths are file paths."""

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
    ) -> OpenedFile:
        return open_file(path, blobs, read_only=read_only, durability=durability, use_index=use_index)

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
            with open(path, "rb") as handle:
                return handle.read(limit)
        except OSError:
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


__all__ = ["FileSessionStorage"]
