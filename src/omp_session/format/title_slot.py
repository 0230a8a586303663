"""The omp 18 title slot: a fixed 256-byte first line ahead of the header (omp18-differences §1).

``{"type":"title","v":1,"title":T,["source":S,]"updatedAt":ISO,"pad":"<spaces>"}`` + ``\\n``,
exactly :data:`SLOT_BYTES` UTF-8 bytes. The slot is rewritten in place on a rename, so it must
never change length: the title is cut to the longest prefix of whole code points that fits, and
``pad`` fills the rest with spaces. Only the slot is cut; the header and ``title_change`` keep the
full title (§1.1).

Reading (§1.3): a first line is a slot when it parses to an object with ``type == "title"``,
``v == 1``, string ``title``, ``updatedAt`` and ``pad``, and ``source`` absent or ``"auto"`` /
``"user"``. Its length and pad are not checked (omp 18 accepts a short slot). The slot always wins
over the header: a non-empty slot title replaces ``header.title``, an empty one removes it, and
the same for ``titleSource``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omp_session.errors import UnwritableValueError

from .codec import decode_line, encode_json

__all__ = [
    "SLOT_BYTES",
    "SLOT_TYPE",
    "TITLE_SOURCES",
    "TitleSlot",
    "encode_slot",
    "fit_title",
    "fold_into_header",
    "parse_slot_line",
    "parsed_slot_dict",
    "slot_from_value",
    "split_slot",
]

SLOT_BYTES = 256
SLOT_TYPE = "title"
TITLE_SOURCES = ("auto", "user")


@dataclass(frozen=True)
class TitleSlot:
    """The meaning of a slot line: what a rename changes and a load folds into the header."""

    title: str
    updated_at: str
    source: str | None = None

    def to_dict(self, pad: str = "") -> dict[str, Any]:
        """omp's object, in its writer key order (``source`` only when there is one)."""
        out: dict[str, Any] = {"type": SLOT_TYPE, "v": 1, "title": self.title}
        if self.source:
            out["source"] = self.source
        out["updatedAt"] = self.updated_at
        out["pad"] = pad
        return out


def _line(slot: TitleSlot, pad: str) -> bytes:
    return encode_json(slot.to_dict(pad)) + b"\n"


def fit_title(title: str, source: str | None, updated_at: str) -> str:
    """The longest whole-code-point prefix of ``title`` whose unpadded slot line fits (§1.1).

    Python strings are sequences of code points, so a surrogate pair is never split (combining
    marks may be, as in omp). JSON escapes count toward the budget.
    """
    low, high, best = 0, len(title), ""
    while low <= high:
        middle = (low + high) // 2
        candidate = title[:middle]
        if len(_line(TitleSlot(candidate, updated_at, source), "")) <= SLOT_BYTES:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def encode_slot(slot: TitleSlot) -> bytes:
    """The slot line, exactly :data:`SLOT_BYTES` bytes including its ``\\n``.

    >>> line = encode_slot(TitleSlot("Hi", "2026-01-01T00:00:00.000Z", "user"))
    >>> len(line), line[:49]
    (256, b'{"type":"title","v":1,"title":"Hi","source":"use')
    """
    fitted = TitleSlot(fit_title(slot.title, slot.source, slot.updated_at), slot.updated_at, slot.source)
    spare = SLOT_BYTES - len(_line(fitted, ""))
    if spare < 0:  # only an absurd updatedAt can do this; omp throws too
        raise UnwritableValueError("title slot metadata exceeds the fixed slot size")
    line = _line(fitted, " " * spare)
    assert len(line) == SLOT_BYTES
    return line


def slot_from_value(value: Any) -> TitleSlot | None:
    """The slot a decoded first line holds, or ``None`` when it is not a valid slot."""
    if not isinstance(value, dict) or value.get("type") != SLOT_TYPE:
        return None
    version = value.get("v")
    if version != 1 or isinstance(version, bool):  # JS: ``v !== 1`` (true is not 1)
        return None
    title, updated_at, pad = value.get("title"), value.get("updatedAt"), value.get("pad")
    if not (isinstance(title, str) and isinstance(updated_at, str) and isinstance(pad, str)):
        return None
    source = value.get("source")
    if "source" in value and source not in TITLE_SOURCES:
        return None
    return TitleSlot(title, updated_at, source if isinstance(source, str) else None)


def parse_slot_line(line: bytes) -> TitleSlot | None:
    """The slot held by one physical line (without its ``\\n``), or ``None``."""
    if b'"title"' not in line:
        return None
    try:
        return slot_from_value(decode_line(line))
    except ValueError:
        return None


def split_slot(data: bytes) -> tuple[TitleSlot | None, int]:
    """``(slot, offset of the line after it)`` for a file's bytes; ``(None, 0)`` without a slot.

    As in omp, only text before the first ``\\n`` is considered: a lone line without a newline is
    never a slot.
    """
    end = data.find(b"\n")
    if end < 0:
        return None, 0
    slot = parse_slot_line(data[:end])
    return (slot, end + 1) if slot is not None else (None, 0)


def fold_into_header(header: dict[str, Any], slot: TitleSlot) -> None:
    """Apply the slot to a valid header in place: the slot wins (§1.3 step 3)."""
    if slot.title:
        header["title"] = slot.title
    else:
        header.pop("title", None)
    if slot.source:
        header["titleSource"] = slot.source
    else:
        header.pop("titleSource", None)


def parsed_slot_dict(line: bytes) -> dict[str, Any] | None:
    """omp's parser object for a slot line (``type, v, title, updatedAt, pad, source?``)."""
    try:
        value = decode_line(line)
    except ValueError:
        return None
    slot = slot_from_value(value)
    if slot is None:
        return None
    out: dict[str, Any] = {"type": SLOT_TYPE, "v": 1, "title": slot.title}
    out.update({"updatedAt": slot.updated_at, "pad": value["pad"]})
    if slot.source:
        out["source"] = slot.source
    return out
