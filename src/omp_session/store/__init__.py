"""Where session lines go: two small protocols, each with a file, an in-memory and a PostgreSQL
implementation.

* :class:`Storage` is one session: append, rewrite, read. The manager never knows which one it
  talks to (compare httpx's transports): everything it needs from a backend is a method of
  :class:`Storage`, so a new backend is one class, not a new branch in the façade.
* :class:`SessionStorage` is a store of many sessions addressed by their path strings (omp 18's
  ``SessionStorage``): the manager's factories and listing take one as ``storage=``. The default
  is the file system (:class:`~omp_session.store.file_sessions.FileSessionStorage`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from omp_session.store.blobs import BlobSink

if TYPE_CHECKING:
    from omp_session.store.opening import OpenedFile

DurabilityPolicy = Literal["os", "fsync", "batch"]


class Storage(Protocol):
    """Append-only JSONL storage of one session."""

    #: Where the session lives (a file path, or the path key of a database row), or ``None`` for
    #: storage that does not outlive the process (memory).
    path: Path | None
    #: Where the persistence transform puts externalised images.
    blobs: BlobSink

    def exists(self) -> bool:
        """Whether anything has been written (the file exists)."""

    def read(self) -> bytes:
        """Every byte currently stored."""

    def append(self, data: bytes) -> None:
        """Append complete lines; returns once they are handed to the OS (or memory, or committed)."""

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        """Replace the whole content atomically; with ``backup_suffix`` keep the old content."""

    def flush(self) -> None:
        """Make everything appended so far durable."""

    def close(self) -> None:
        """Flush and release resources (locks, descriptors, connections)."""

    def read_from(self, offset: int) -> bytes:
        """Bytes stored after ``offset`` (for readers following a live writer)."""

    def replaced_since_read(self) -> bool:
        """Whether the stored session is no longer the one last read (replaced or truncated by a
        full rewrite), so following it from an offset would misread it."""

    def sibling(self, path: Path | None) -> Storage:
        """A new, empty storage of the same kind and settings (same blobs, same durability) for
        another session at ``path``. Writes nothing until it is appended to or rewritten."""

    def move(self, target: Path) -> None:
        """Give the stored session the address ``target``, keeping its lock (files: a rename)."""

    def overwrite_title_slot(self, slot_line: bytes) -> None:
        """Replace omp 18's 256-byte title slot at the start of the stored session in place
        (its length never changes). Raises unless the stored session starts with a slot of the
        same size."""


class StoredSession(NamedTuple):
    """One session of a :class:`SessionStorage`, as a listing sees it."""

    path: Path
    size: int
    #: Modification time in seconds since the epoch.
    mtime: float


class SessionStorage(Protocol):
    """A store of sessions addressed by path (files under a directory, rows of a table, ...)."""

    def new_storage(self, path: Path, blobs: BlobSink, *, durability: DurabilityPolicy) -> Storage:
        """Storage for a session not written yet (nothing is written until the first append)."""

    def open_session(
        self,
        path: Path,
        blobs: BlobSink,
        *,
        read_only: bool,
        durability: DurabilityPolicy,
        use_index: bool = True,
    ) -> OpenedFile:
        """Lock (unless ``read_only``) and read the session at ``path`` (see ``opening.open_file``;
        ``use_index``: whether a file store may use and write its offset-index cache)."""

    def read_session(self, path: Path) -> bytes:
        """The bytes of the session at ``path`` (``SessionNotFoundError`` if there is none)."""

    def session_exists(self, path: Path) -> bool:
        """Whether a session is stored at ``path``."""

    def stat_session(self, path: Path) -> StoredSession | None:
        """Size and modification time of the session at ``path`` (``None`` if there is none)."""

    def read_head(self, path: Path, limit: int) -> bytes:
        """At most the first ``limit`` bytes of the session at ``path`` (``b""`` if there is none)."""

    def list_sessions(self, directory: Path) -> list[StoredSession]:
        """The ``*.jsonl`` sessions directly inside ``directory``, in no particular order."""

    def list_directories(self, root: Path) -> list[Path]:
        """The directories directly under ``root`` that hold sessions (the projects)."""

    def has_assistant_turn(self, path: Path) -> bool:
        """Whether any line of the session at ``path`` is an assistant ``message`` entry: the
        full-line scan omp 18.3's listing falls back to (``hasAssistantTurn``)."""

    def delete_session(self, path: Path, *, backups: bool = False) -> None:
        """Delete the session at ``path`` and its artifacts (omp's ``deleteSessionWithArtifacts``);
        none there is not an error. ``backups``: also every ``<name>.*.bak`` beside it (omp 18.2.9+)."""


__all__ = ["DurabilityPolicy", "SessionStorage", "Storage", "StoredSession"]
