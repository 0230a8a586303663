"""What a session list shows for one file (spec §6.9): :class:`SessionInfo`, and the reference rule
that summarises a file's decoded records (:func:`summarize_records`, omp 13.19's listing plus our own
fields). ``listing_scan.py`` computes the same summary faster from the bytes.

Internal module (re-exported by :mod:`omp_session.tools.listing`); not part of the public API.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from omp_session.dialects import OMP_18_2
from omp_session.format.header import is_session_header
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.format.title_slot import fold_into_header, slot_from_value
from omp_session.model.usage import UsageStatistics
from omp_session.tools.content import message_text
from omp_session.tools.entry_kinds import FOREIGN_SESSION_IMPORT, is_import_bookkeeping
from omp_session.tools.summary import is_prompt

__all__ = [
    "CANONICAL_TIME",
    "SessionInfo",
    "conversation_stamps",
    "created_ms",
    "fold_slot_record",
    "is_canonical_time",
    "summarize_records",
]


@dataclass(frozen=True)
class SessionInfo:
    """What a session list shows, every field plain, with one exception: an info from the listing
    cache (:meth:`from_cache`) reads ``all_messages_text`` from that cache on first use (else from
    the file), so that a warm listing of thousands of sessions does not load every conversation.

    ``modified`` is the file's mtime, as in omp 13.19.0. ``last_activity`` is the newest entry
    timestamp (else ``modified``): copies and checkouts reset mtimes, entries keep their times.
    """

    path: str
    id: str
    cwd: str
    title: str | None
    parent_session_path: str | None
    created: datetime | None
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str
    #: The file's size in bytes.
    size: int = 0
    last_activity: datetime | None = None
    #: Total cost of every assistant message and task result (spec §6.3), and of omp 18's
    #: ``model_usage`` entries.
    cost: float = 0.0
    #: omp 18 listings only (``listing18.py``): the state of the last message; with it, ``size``
    #: and ``status`` are part of the JSON shape, as in omp 18.
    status: str | None = None
    #: The first user message that is not a slash command (``/mode``), for display titles; not an
    #: omp field (issue 13 #7: a session opened with ``/mode`` was listed as "/mode").
    first_prompt: str = ""
    #: omp 18.3 listings only: the assistant turns the listing windows show (``listing18.py``;
    #: placed after ``messageCount`` in the JSON shape).
    assistant_turns: int | None = None

    @classmethod
    def from_cache(cls, fields: dict[str, Any], text: Callable[[], str]) -> SessionInfo:
        """An info of every field in ``fields`` but ``all_messages_text``, which ``text()`` gives on
        first use (built without ``__init__``: the warm listing makes thousands)."""
        info = object.__new__(cls)
        info.__dict__.update(fields)
        info.__dict__["_text"] = text
        return info

    def __getstate__(self) -> dict[str, Any]:
        # Copies and pickles hold the text itself, not the cache's reader.
        return {field.name: getattr(self, field.name) for field in fields(self)}

    if not TYPE_CHECKING:  # (mypy keeps checking attribute names)

        def __getattr__(self, name: str) -> Any:
            # Called only for attributes not set: the text of an info from the cache.
            text = self.__dict__.get("_text") if name == "all_messages_text" else None
            if text is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            value = text()
            self.__dict__["all_messages_text"] = value
            return value

    def to_dict(self) -> dict[str, Any]:
        """omp's camelCase JSON shape (dates as ISO strings; absent optional keys omitted)."""
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        if self.parent_session_path is not None:
            out["parentSessionPath"] = self.parent_session_path
        out["created"] = _iso(self.created)
        out["modified"] = _iso(self.modified)
        out["messageCount"] = self.message_count
        if self.assistant_turns is not None:
            out["assistantTurns"] = self.assistant_turns
        out["firstMessage"] = self.first_message
        out["allMessagesText"] = self.all_messages_text
        if self.status is not None:
            out["size"] = self.size
            out["status"] = self.status
        return out


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (
        moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def _from_ms(ms: float | None) -> datetime | None:
    return ms_to_datetime(ms)


def fold_slot_record(records: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    """``records`` without a leading omp 18 title slot, which is folded into the header after it
    (a copy of the header; the slot wins, omp18-differences §1.3)."""
    slot = slot_from_value(records[0]) if records else None
    if slot is None:
        return records
    rest = list(records[1:])
    if rest and is_session_header(rest[0]):
        header = dict(rest[0])
        fold_into_header(header, slot)
        rest[0] = header
    return rest


#: What omp writes (``Date.toISOString``): such strings sort as text exactly as their instants do.
CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def is_canonical_time(value: object) -> TypeGuard[str]:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ``: such strings sort as text exactly as their instants do."""
    return isinstance(value, str) and len(value) == 24 and CANONICAL_TIME.fullmatch(value) is not None


def conversation_stamps(stamps: Sequence[Any], import_stamps: set[Any]) -> list[Any]:
    """``stamps`` less those equal to an import marker's time: what the import wrote beside its
    marker (omp 18's title change) carries the marker's time; the conversation keeps its own."""
    if not import_stamps:
        return list(stamps)
    return [stamp for stamp in stamps if not (isinstance(stamp, str) and stamp in import_stamps)]


def created_ms(header: dict[str, Any], conversation_stamps: Iterable[Any] = ()) -> int | None:
    """When a session was created: its header's time, or, for an imported session (pass the
    timestamps of its conversation's entries), the first of those when it is earlier: an importer
    writes the header at import time, the conversation keeps its own dates."""
    created = iso_to_ms(header.get("timestamp"))
    first = min((ms for ms in map(iso_to_ms, conversation_stamps) if ms is not None), default=None)
    if first is not None and (created is None or first < created):
        return first
    return created


def summarize_records(
    path: Path | str, records: Sequence[dict[str, Any]], mtime: float, size: int = 0
) -> SessionInfo | None:
    """A ``SessionInfo`` from decoded records (header first, after an omp 18 title slot if any),
    or ``None`` if not a session."""
    records = fold_slot_record(records)
    if not records or not is_session_header(records[0]) or not records[0].get("id"):
        return None
    header = records[0]
    title = header.get("title") if isinstance(header.get("title"), str) else None
    count, first, prompt, texts = 0, None, None, []
    newest_ms: float | None = None
    newest_canonical: str | None = None
    imported = False
    import_stamps: set[Any] = set()
    kept: list[dict[str, Any]] = []
    for record in records[1:]:
        if is_import_bookkeeping(record):
            # An import's marker and kept source records are dated at import time; the session's
            # times are its conversation's (issue 27 #5: a 2025 conversation "modified today").
            if record.get("customType") == FOREIGN_SESSION_IMPORT:
                imported = True
                if isinstance(stamp := record.get("timestamp"), str):
                    import_stamps.add(stamp)
            continue
        kept.append(record)
    stamps = conversation_stamps([record.get("timestamp") for record in kept], import_stamps)
    for record in kept:
        stamp = record.get("timestamp")
        if stamp in import_stamps and isinstance(stamp, str):
            stamp = None  # written by the import (its title change): not the conversation's time
        if is_canonical_time(stamp):  # what omp writes: orders as text, parsed once at the end
            if newest_canonical is None or stamp > newest_canonical:
                newest_canonical = stamp
        elif (ms := iso_to_ms(stamp)) is not None and (newest_ms is None or ms > newest_ms):
            newest_ms = ms
        kind = record.get("type")
        if (
            kind == "compaction"
            and header.get("title") is None
            and isinstance(record.get("shortSummary"), str)
        ):
            title = record["shortSummary"]
        if kind != "message" or not isinstance(record.get("message"), dict):
            continue
        count += 1
        message = record["message"]
        if message.get("role") not in ("user", "assistant"):
            continue
        text = message_text(message)
        if message.get("role") == "user" and first is None:
            first = text
        if message.get("role") == "user" and prompt is None and is_prompt(text):
            prompt = text
        if text:
            texts.append(text)
    parent = header.get("parentSession")
    canonical_ms = iso_to_ms(newest_canonical) if newest_canonical is not None else None
    if newest_canonical is not None and canonical_ms is None:  # shaped like a time but not one
        canonical_ms = max((ms for ms in map(iso_to_ms, stamps) if ms is not None), default=None)
    if canonical_ms is not None and (newest_ms is None or canonical_ms > newest_ms):
        newest_ms = canonical_ms
    modified = datetime.fromtimestamp(mtime, timezone.utc)
    return SessionInfo(
        path=os.fspath(path),
        id=header["id"],
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        title=title,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=_from_ms(created_ms(header, stamps if imported else ())),
        modified=modified,
        message_count=count,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts),
        size=size,
        last_activity=_from_ms(newest_ms) or modified,
        cost=UsageStatistics.of(records[1:]).reported(OMP_18_2.usage).cost,  # model_usage included
        first_prompt=prompt or first or "",
    )
