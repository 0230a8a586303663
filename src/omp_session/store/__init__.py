"""Where session lines go: a small protocol with a file and an in-memory implementation.

The manager never knows which one it talks to (compare httpx's transports): everything it needs
from a backend is a method of :class:`Storage`, so a new backend is one class, not a new branch
in the façade.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, Protocol

from omp_session.store.blobs import BlobSink

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
        """Append complete lines; returns once they are handed to the OS (or memory)."""

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        """Replace the whole content atomically; with ``backup_suffix`` keep the old content."""

    def flush(self) -> None:
        """Make everything appended so far durable."""

    def close(self) -> None:
        """Flush and release resources (locks, descriptors)."""

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


__all__ = ["DurabilityPolicy", "Storage"]
