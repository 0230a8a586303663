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

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from omp_session.format.blob_refs import BlobSink
from omp_session.format.codec import DecodedFile, LineIssue
from omp_session.format.title_slot import TitleSlot
from omp_session.format.transform import KeepReplay, drop_replay
from omp_session.gcpause import gc_paused
from omp_session.model.tree import EntryIndex, SessionIndex

DurabilityPolicy = Literal["os", "fsync", "batch"]
Entry = dict[str, Any]
#: The line (with its newline) written for an entry: the dialect's persistence transform.
Encode = Callable[[Entry], bytes]


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

    def append_entry(self, entry: Entry, line: bytes) -> None:
        """``append(line)``, where ``line`` is the line of ``entry`` (the entry after every other
        one): a backend that copies unchanged lines in ``write_entries`` notes where it went."""

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        """Replace the whole content atomically with ``chunks`` (bytes as they are: a repair, an
        import); with ``backup_suffix`` keep the old content."""

    def write_entries(
        self,
        head: Iterable[bytes],
        entries: Sequence[Entry],
        encode: Encode,
        *,
        extra: Entry | None = None,
        source: Storage | None = None,
        backup_suffix: str | None = None,
    ) -> None:
        """Replace the whole content atomically with ``head`` (title slot, header), one line per
        entry of ``entries`` and one for ``extra``; with ``backup_suffix`` keep the old content.

        A line is ``encode(entry)``, except that a backend may copy the stored line of an entry
        unchanged since ``source`` (default: this storage) read or wrote it, byte for byte (the file
        backend does, issue 11 item 6, as ``mailbox`` copies unchanged messages); ``entries`` is
        then read only where a line is encoded. Afterwards this storage knows where each line is."""

    def forget_lines(self) -> None:
        """The entries in memory are no longer those of the stored lines (replaced, or changed in
        place by a caller): the next ``write_entries`` encodes every entry."""

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


@dataclass
class LoadedSession:
    """A parsed, migrated session: what a manager or a tool builds on."""

    header: dict[str, Any]
    entries: list[dict[str, Any]]
    #: The version the file had before in-memory migration, or ``None`` if it needed none.
    migrated_from: int | None = None
    issues: list[LineIssue] = field(default_factory=list)
    decoded: DecodedFile | None = None
    size: int = 0
    #: The omp 18 title slot of the file's first line (already folded into ``header``), if any.
    title_slot: TitleSlot | None = None
    #: The index over ``entries``: given by an open path that builds its own (the lazy one of an
    #: indexed file), else built on the first ``entry_index()``.
    index: EntryIndex | None = None
    #: Whether a kept OpenAI replay was dropped all the same (``github-copilot``'s, omp 18): memory
    #: then differs from the file, which omp 18 rewrites at the next write.
    replay_dropped: bool = False

    def entry_index(self) -> EntryIndex:
        """The index a manager reads this session through (built once, then kept)."""
        if self.index is None:
            with gc_paused():  # right after a load: the collector would walk every new entry
                self.index = SessionIndex(self.entries)
        return self.index


@dataclass
class OpenedFile:
    """What :meth:`SessionStorage.open_session` found. ``loaded is None`` means: nothing to lose,
    start a new session there."""

    path: Path
    storage: Storage
    loaded: LoadedSession | None = None
    #: Offset after the last complete line (where ``refresh`` continues).
    read_offset: int = 0


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
        keep_replay: KeepReplay = drop_replay,
    ) -> OpenedFile:
        """Lock (unless ``read_only``) and read the session at ``path`` (see ``opening.open_file``;
        ``use_index``: whether a file store may use and write its offset-index cache;
        ``keep_replay``: the opening dialect's OpenAI replay rule, ``parse_session``)."""

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


def encoded_lines(
    head: Iterable[bytes], entries: Iterable[Entry], encode: Encode, extra: Entry | None = None
) -> Iterator[bytes]:
    """The lines of ``write_entries`` for a backend that encodes every entry."""
    yield from head
    yield from map(encode, entries)
    if extra is not None:
        yield encode(extra)


class EncodesEveryLine:
    """``Storage``'s entry-level writes for a backend that keeps no stored lines to copy (memory,
    a database row): an entry's line is appended as it is, a full write encodes every entry. The
    backend provides ``append`` and ``rewrite``."""

    def append(self, data: bytes) -> None:
        raise NotImplementedError

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        raise NotImplementedError

    def append_entry(self, entry: Entry, line: bytes) -> None:
        self.append(line)

    def write_entries(
        self,
        head: Iterable[bytes],
        entries: Sequence[Entry],
        encode: Encode,
        *,
        extra: Entry | None = None,
        source: Storage | None = None,
        backup_suffix: str | None = None,
    ) -> None:
        self.rewrite(encoded_lines(head, entries, encode, extra), backup_suffix=backup_suffix)

    def forget_lines(self) -> None:
        return None  # every write encodes every entry


__all__ = [
    "DurabilityPolicy",
    "Encode",
    "EncodesEveryLine",
    "LoadedSession",
    "OpenedFile",
    "SessionStorage",
    "Storage",
    "StoredSession",
    "encoded_lines",
]
