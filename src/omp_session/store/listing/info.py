"""What a session list shows for one file (spec §6.9): :class:`SessionInfo` and :class:`SessionList`,
with the small rules of its dates that the summary (``summary.py``) applies.

Internal module (re-exported by :mod:`omp_session.store.listing`); not part of the public API.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from omp_session.format.header import is_session_header
from omp_session.format.ids import iso_to_ms
from omp_session.format.title_slot import fold_into_header, slot_from_value

__all__ = [
    "CANONICAL_TIME",
    "FileKey",
    "SessionInfo",
    "SessionList",
    "conversation_stamps",
    "created_ms",
    "fold_slot_record",
    "is_canonical_time",
]


class FileKey(NamedTuple):
    """What identifies one version of a file's content without reading it (a database row's has
    inode and ctime -1, its ``mtime`` in ns)."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileKey:
        # tuple.__new__: FileKey's own __new__ is Python code, and this runs per listed file.
        return tuple.__new__(cls, (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino))


@dataclass(frozen=True)
class SessionInfo:
    """What a session list shows, every field plain, with one exception: a partial info
    (:meth:`partial`) reads the fields it was not made with on first use, so that a listing reads
    what its caller looks at: one from the listing cache (:meth:`from_cache`) reads
    ``all_messages_text`` from that cache (else from the file), one from a file's head
    (``summary.summarize_head``) reads the rest of the file when a field that needs every entry is
    first read. Either way the values are those of the whole summary.

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
    #: omp 18 listings only (``omp18.py``): the state of the last message; with it, ``size``
    #: and ``status`` are part of the JSON shape, as in omp 18.
    status: str | None = None
    #: The first user message that is not a slash command (``/mode``), for display titles; not an
    #: omp field (issue 13 #7: a session opened with ``/mode`` was listed as "/mode").
    first_prompt: str = ""
    #: omp 18.3 listings only: the assistant turns the listing windows show (``omp18.py``;
    #: placed after ``messageCount`` in the JSON shape).
    assistant_turns: int | None = None

    @classmethod
    def partial(
        cls,
        known: dict[str, Any],
        rest: Callable[[], dict[str, Any]],
        alone: dict[str, Callable[[], Any]] | None = None,
    ) -> SessionInfo:
        """An info of the fields in ``known``; the others are ``rest()``'s (every field, those
        already known left as they are), called once, when one of them is first read, but for the
        fields of ``alone``, each read by its own cheaper reader while ``rest`` has not run
        (:meth:`to_dict` and copies, which read every field, run ``rest`` first). Built without
        ``__init__``: a listing makes thousands."""
        info = object.__new__(cls)
        info.__dict__.update(known)
        info.__dict__["_rest"] = rest
        if alone:
            info.__dict__["_alone"] = dict(alone)
        return info

    @classmethod
    def from_cache(cls, known: dict[str, Any], text: Callable[[], str]) -> SessionInfo:
        """An info of every field in ``known`` but ``all_messages_text``, which ``text()`` gives on
        first use."""
        return cls.partial(known, lambda: {"all_messages_text": text()})

    def __getstate__(self) -> dict[str, Any]:
        # Copies and pickles hold the values themselves, not the readers of the rest.
        self._read_for(_FIELD_NAMES)
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def _read_for(self, names: frozenset[str]) -> None:
        """Of a partial info about to read ``names``: the rest read first when one of them is not
        known and has no reader of its own (so a field's own reader, such as an untitled
        session's title search, does not read the file before the rest reads it again)."""
        found = self.__dict__
        rest = found.get("_rest")
        if rest is None or not names - found.keys() - found.get("_alone", {}).keys():
            return
        for key, value in rest().items():
            found.setdefault(key, value)

    if not TYPE_CHECKING:  # (mypy keeps checking attribute names)

        def __getattr__(self, name: str) -> Any:
            # Called only for attributes not set: the fields of a partial info not read yet.
            # The readers stay in place: another thread (the viewer's) may be reading the same
            # info, and once every field is set this is never called again.
            found = self.__dict__
            rest = found.get("_rest") if name in _FIELD_NAMES else None
            if rest is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            reader = found.get("_alone", {}).pop(name, None)
            if reader is not None:
                found.setdefault(name, reader())
            else:
                for key, value in rest().items():
                    found.setdefault(key, value)
            return found[name]

    def to_dict(self, *, with_text: bool = True) -> dict[str, Any]:
        """omp's camelCase JSON shape (dates as ISO strings; absent optional keys omitted);
        without ``allMessagesText`` when not ``with_text`` (then never read: the whole
        conversation of a lazily summarised session is read only for it)."""
        self._read_for(_DICT_FIELDS if with_text else _DICT_FIELDS_WITHOUT_TEXT)
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
        if with_text:
            out["allMessagesText"] = self.all_messages_text
        if self.status is not None:
            out["size"] = self.size
            out["status"] = self.status
        return out


_FIELD_NAMES = frozenset(field.name for field in fields(SessionInfo))
#: The fields :meth:`SessionInfo.to_dict` reads (with and without the text).
_DICT_FIELDS_WITHOUT_TEXT = _FIELD_NAMES - {"all_messages_text", "last_activity", "cost", "first_prompt"}
_DICT_FIELDS = _DICT_FIELDS_WITHOUT_TEXT | {"all_messages_text"}


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (
        moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


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


class SessionList(list[SessionInfo]):
    """The sessions a listing found, and ``skipped``: ``(path, reason)`` of every ``*.jsonl`` entry
    that could not be read (a symlink loop, no permission, a FIFO), so views can say so (item 16)."""

    skipped: list[tuple[str, str]]

    def __init__(self, infos: Iterable[SessionInfo] = (), skipped: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(infos)
        self.skipped = list(skipped)
