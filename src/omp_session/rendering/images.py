"""Images in sessions: only raster formats, identified by their bytes, never by the declared type.

An ``image`` block's ``mimeType`` comes from the session file and cannot be trusted (an SVG can carry
script), so the format is sniffed from the first bytes and only PNG, JPEG, GIF and WebP are shown.
Blob references (``blob:sha256:<hex>``, spec §7.4) are linked to the server's ``/blob/`` route or,
for a self-contained export, inlined as ``data:`` URLs.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError
from omp_session.store.blobs import FileBlobStore, parse_blob_ref
from omp_session.store.paths import is_within
from omp_session.store.regular import read_regular, regular_file

__all__ = ["ImageSource", "blob_file", "inline_images", "linked_images", "sniff_raster_mime"]

_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")

#: ``(image block) -> (src or None, note)``: the note explains an image that cannot be shown.
ImageSource = Callable[[dict[str, Any]], tuple[str | None, str]]


def sniff_raster_mime(head: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, else ``None`` (SVG, HTML, anything else)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _clean_base64(data: str) -> str | None:
    compact = "".join(data.split())
    return compact if compact and _BASE64.match(compact) else None


def _inline_base64(data: str) -> tuple[str | None, str]:
    compact = _clean_base64(data)
    if compact is None:
        return None, "image data is not base64"
    try:
        head = base64.b64decode(compact[:24] + "=" * (-len(compact[:24]) % 4))
    except (binascii.Error, ValueError):
        return None, "image data is not base64"
    mime = sniff_raster_mime(head)
    if mime is None:
        return None, "not a PNG, JPEG, GIF or WebP image (not shown)"
    return f"data:{mime};base64,{compact}", ""


def blob_file(blobs_dir: Path | None, digest: str) -> Path | None:
    """The file of ``digest`` inside ``blobs_dir`` when it exists and does not leave it, else ``None``."""
    if blobs_dir is None:
        return None
    try:
        path = FileBlobStore(blobs_dir).path_of(digest)
    except ValueError:
        return None
    if not path.is_file() or not is_within(blobs_dir, path):
        return None
    return path


def _blob_head(path: Path) -> bytes:
    with regular_file(path) as handle:
        return handle.read(16)


NOT_RASTER = "not a PNG, JPEG, GIF or WebP image (not shown)"


def _blob_or_inline(block: dict[str, Any], blobs_dir: Path | None) -> tuple[str | None, str] | Path:
    """The blob file an image block refers to, or the final (src, note) for everything else."""
    data = block.get("data")
    if not isinstance(data, str):
        return None, "image without data"
    digest = parse_blob_ref(data)
    if digest is None:
        return _inline_base64(data)
    path = blob_file(blobs_dir, digest)
    if path is None:
        return None, f"blob sha256:{digest[:12]}… is not in the blob store"
    return path


def linked_images(blobs_dir: Path | None, blob_url: Callable[[str], str]) -> ImageSource:
    """Inline base64 images as ``data:`` URLs and point blob references at ``blob_url(digest)``."""

    def source(block: dict[str, Any]) -> tuple[str | None, str]:
        found = _blob_or_inline(block, blobs_dir)
        if isinstance(found, tuple):
            return found
        digest, path = found.name, found
        if sniff_raster_mime(_blob_head(path)) is None:
            return None, NOT_RASTER
        return blob_url(digest), ""

    return source


def inline_images(blobs_dir: Path | None) -> ImageSource:
    """Every image as a ``data:`` URL, blobs read from ``blobs_dir`` (for self-contained exports)."""

    def source(block: dict[str, Any]) -> tuple[str | None, str]:
        found = _blob_or_inline(block, blobs_dir)
        if isinstance(found, tuple):
            return found
        try:
            raw = read_regular(found)
        except (OSError, CorruptSessionError):
            return None, NOT_RASTER
        mime = sniff_raster_mime(raw[:16])
        if mime is None:
            return None, NOT_RASTER
        return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}", ""

    return source
