"""The content-addressed blob store (spec §6.7, §7.4): ``<blobs>/<sha256 hex>``, raw bytes.

Unlike omp (§9 #5) a blob is written atomically (temp file, fsync, rename) and never rewritten
when it already exists.

The reference format (``blob:sha256:<hex>``) and the ``BlobSink`` protocol the persistence
transform writes through live in :mod:`omp_session.format.blob_refs`; they are re-exported here.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from omp_session.errors import SessionError
from omp_session.format.blob_refs import BLOB_PREFIX, BlobSink, blob_ref, is_digest, parse_blob_ref

__all__ = [
    "BLOB_PREFIX",
    "BlobSink",
    "FileBlobStore",
    "MemoryBlobStore",
    "UnresolvedBlobs",
    "blob_ref",
    "parse_blob_ref",
]


class FileBlobStore:
    """Blobs as files in one directory (global, shared by every session of an agent dir)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path_of(self, digest: str) -> Path:
        if not is_digest(digest):
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
