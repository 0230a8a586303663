"""In-memory storage: the same write path as a file, nothing on disk (spec §7.7)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from omp_session.errors import SessionChangedError
from omp_session.store import EncodesEveryLine
from omp_session.store.blobs import BlobSink, MemoryBlobStore

__all__ = ["MemoryStorage"]


class MemoryStorage(EncodesEveryLine):
    """Keeps the session's bytes in a buffer; blobs in a dict."""

    path: Path | None = None

    def __init__(self, blobs: BlobSink | None = None) -> None:
        self.blobs: BlobSink = blobs if blobs is not None else MemoryBlobStore()
        self._buffer = bytearray()
        self._written = False
        self.backups: dict[str, bytes] = {}

    def exists(self) -> bool:
        return self._written

    def read(self) -> bytes:
        return bytes(self._buffer)

    def append(self, data: bytes) -> None:
        self._buffer += data
        self._written = True

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        new = b"".join(chunks)
        if backup_suffix is not None and self._written:
            self.backups[backup_suffix] = bytes(self._buffer)
        self._buffer = bytearray(new)
        self._written = True

    def flush(self) -> None:
        return None

    def read_from(self, offset: int) -> bytes:
        return bytes(self._buffer[offset:])

    def replaced_since_read(self) -> bool:
        return False  # one owner: nobody else can replace the buffer

    def sibling(self, path: Path | None) -> MemoryStorage:
        return MemoryStorage(self.blobs)

    def move(self, target: Path) -> None:
        return None  # nothing is addressed by path in memory

    def overwrite_title_slot(self, slot_line: bytes) -> None:
        if self._buffer.find(b"\n") + 1 != len(slot_line):
            raise SessionChangedError("<memory>", "the session does not start with a title slot of this size")
        self._buffer[: len(slot_line)] = slot_line

    def close(self) -> None:
        return None
