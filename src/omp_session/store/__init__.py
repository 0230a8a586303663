"""Where session lines go: a small protocol with a file and an in-memory implementation.

The manager never knows which one it talks to (compare httpx's transports).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, Protocol

from omp_session.store.blobs import BlobSink

DurabilityPolicy = Literal["os", "fsync", "batch"]


class Storage(Protocol):
    """Append-only JSONL storage of one session."""

    #: The session file, or ``None`` for storage that is not a file.
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


__all__ = ["DurabilityPolicy", "Storage"]
