"""The blob-reference format (spec §6.7, §7.4): ``blob:sha256:<64 hex digits>``, and the
``BlobSink`` protocol through which the persistence transform externalises bytes.

Pure: the stores that hold the bytes (files, memory) are in :mod:`omp_session.store.blobs`.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = ["BLOB_PREFIX", "BlobSink", "blob_ref", "is_digest", "parse_blob_ref"]

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


def is_digest(text: str) -> bool:
    """Whether ``text`` is a sha256 hex digest (64 lowercase hex digits): a blob's name."""
    return _HEX64.match(text) is not None


def blob_ref(digest: str) -> str:
    return BLOB_PREFIX + digest


def parse_blob_ref(value: object) -> str | None:
    """The digest of a ``blob:sha256:<hex>`` reference, or ``None``."""
    if isinstance(value, str) and value.startswith(BLOB_PREFIX):
        digest = value[len(BLOB_PREFIX) :]
        if is_digest(digest):
            return digest
    return None
