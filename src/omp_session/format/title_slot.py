"""omp 18's title slot: a fixed-width first line ``{"type":"title",...}`` of exactly 256 bytes
(omp18-differences §1.1). Only what a store needs to keep a title outside the body: parse a slot
line, and serialise one from (title, source, updatedAt) byte for byte as omp does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omp_session.format.codec import decode_line, encode_json

TITLE_SLOT_BYTES = 256


@dataclass(frozen=True)
class TitleUpdate:
    """The semantic content of a slot (omp's ``SessionTitleUpdate``)."""

    title: str | None
    #: ``"auto"``, ``"user"`` or ``None`` (then the slot has no ``source`` key).
    source: str | None
    updated_at: str


def _slot_line(title: str, source: str | None, updated_at: str, pad: str) -> bytes:
    slot: dict[str, Any] = {"type": "title", "v": 1, "title": title}
    if source:
        slot["source"] = source
    slot["updatedAt"] = updated_at
    slot["pad"] = pad
    return encode_json(slot) + b"\n"


def _fitting_title(title: str, source: str | None, updated_at: str) -> str:
    """The longest prefix of whole code points whose unpadded line fits (§1.1, a binary search)."""
    low, high, best = 0, len(title), ""
    while low <= high:
        middle = (low + high) // 2
        candidate = title[:middle]
        if len(_slot_line(candidate, source, updated_at, "")) <= TITLE_SLOT_BYTES:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def serialize_title_slot(update: TitleUpdate) -> bytes:
    """The 256-byte slot line (newline included) for ``update``."""
    title = _fitting_title(update.title or "", update.source, update.updated_at)
    unpadded = _slot_line(title, update.source, update.updated_at, "")
    line = _slot_line(title, update.source, update.updated_at, " " * (TITLE_SLOT_BYTES - len(unpadded)))
    if len(line) != TITLE_SLOT_BYTES:
        raise ValueError("title slot metadata does not fit in 256 bytes")
    return line


def parse_title_slot(first_line: bytes) -> TitleUpdate | None:
    """The update a slot line holds, or ``None`` for anything that is not a valid slot."""
    try:
        value = decode_line(first_line)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("type") != "title" or value.get("v") != 1:
        return None
    title, updated_at, pad = value.get("title"), value.get("updatedAt"), value.get("pad")
    source = value.get("source")
    if not (isinstance(title, str) and isinstance(updated_at, str) and isinstance(pad, str)):
        return None
    if source is not None and source not in ("auto", "user"):
        return None
    return TitleUpdate(title, source, updated_at)


def overlay_title_slot(content: bytes, update: TitleUpdate) -> bytes:
    """``content`` with its first 256 bytes replaced by the slot of ``update`` (what omp's indexed
    stores return on read when the title columns are newer than the body)."""
    slot = serialize_title_slot(update)
    return slot + content[len(slot) :] if len(content) > len(slot) else slot
