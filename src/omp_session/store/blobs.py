"""The content-addressed blob store (spec §6.7, §7.4): ``<blobs>/<sha256 hex>``, raw bytes.

Unlike omp (§9 #5) a blob is written atomically (temp file, fsync, rename) and never rewritten
when it already exists.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Protocol

from omp_session.errors import SessionError

__all__ = [
    "BLOB_PREFIX",
    "BlobSink",
    "FileBlobStore",
    "MemoryBlobStore",
    "UnresolvedBlobs",
    "blob_ref",
    "parse_blob_ref",
]

BLOB_PREFIX = "blob:sha256:"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class BlobSink(Protocol):
    """Where the persistence transform puts externalised bytes."""

    def put(self, data: bytes) -> str:
        """Store ``data`` and return its sha256 hex digest."""

    def get(self, digest: str) -> bytes | None:
        """The bytes of ``digest`` or ``None`` when unknown."""

    def put_sidecar(self, digest: str, extension: str) -> None:
        """Give blob ``digest`` a typed name ``<digest>.<extension>`` too (omp 18: for OS viewers)."""


def blob_ref(digest: str) -> str:
    return BLOB_PREFIX + digest


def parse_blob_ref(value: object) -> str | None:
    """The digest of a ``blob:sha256:<hex>`` reference, or ``None``."""
    if isinstance(value, str) and value.startswith(BLOB_PREFIX):
        digest = value[len(BLOB_PREFIX) :]
        if _HEX64.match(digest):
            return digest
    return None


class FileBlobStore:
    """Blobs as files in one directory (global, shared by every session of an agent dir)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path_of(self, digest: str) -> Path:
        if not _HEX64.match(digest):
            raise ValueError(f"not a sha256 hex digest: {digest!r}")
        return self.directory / digest

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_of(digest)
        if target.exists() and target.stat().st_size == len(data):
            return digest
        self.directory.mkdir(parents=True, exist_ok=True)
        temp = self.directory / f".{digest}.{os.getpid()}.tmp"
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
        return digest

    def get(self, digest: str) -> bytes | None:
        try:
            return self.path_of(digest).read_bytes()
        except (OSError, ValueError):
            return None

    def put_sidecar(self, digest: str, extension: str) -> None:
        """A hard link ``<digest>.<extension>`` to the blob (a copy where links fail), as omp 18."""
        source = self.path_of(digest)
        target = source.with_name(f"{digest}.{extension}")
        if target.exists():
            return
        try:
            os.link(source, target)
        except FileExistsError:
            return
        except OSError:
            data = source.read_bytes()
            temp = self.directory / f".{digest}.{extension}.{os.getpid()}.tmp"
            temp.write_bytes(data)
            os.replace(temp, target)


class UnresolvedBlobs:
    """A blob store that holds nothing: a read-only session opened with it keeps every
    ``blob:sha256:`` reference as written (the viewer links them instead of inlining the bytes)."""

    def put(self, data: bytes) -> str:
        raise SessionError("this session was opened to read only; it cannot store blobs")

    def get(self, digest: str) -> bytes | None:
        return None

    def put_sidecar(self, digest: str, extension: str) -> None:
        raise SessionError("this session was opened to read only; it cannot store blobs")


class MemoryBlobStore:
    """Blobs in a dict: for in-memory sessions, which must never write to disk (§7.7)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self.blobs[digest] = data
        return digest

    def get(self, digest: str) -> bytes | None:
        return self.blobs.get(digest)

    def put_sidecar(self, digest: str, extension: str) -> None:
        return None  # nothing for an OS viewer to open in memory
