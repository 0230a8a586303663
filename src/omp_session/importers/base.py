"""The foreign-session interface shared by every importer (spec importers §0).

A *store* lists the sessions another agent keeps, cheaply (no whole transcript is parsed), and
converts one of them into omp entries. A conversion is plain data (:class:`ConvertedSession`);
:meth:`ConvertedSession.to_manager` turns it into an in-memory :class:`SessionManager`, and
:mod:`omp_session.importers.persist` writes it as an omp session.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from omp_session.dialects import OMP_18_2
from omp_session.format.ids import iso_from_ms, now_iso, random_entry_suffix
from omp_session.importers.jsonl import ReadStats
from omp_session.manager import SessionManager
from omp_session.model.context import SessionContext
from omp_session.model.tree import build_session_context
from omp_session.model.usage import UsageStatistics

Entry = dict[str, Any]


class EntryBatch(list[Entry]):
    """Entries handed to a sink, with what their converter proved for each: ``float_free[i]`` is
    True when entry ``i`` holds no float anywhere, so an encoder may skip looking for one
    (:func:`session_file.encode_entries`). A plain list of entries means nothing is proved."""

    float_free: list[bool]


#: Receives converted entries in order (a streaming conversion, see ``convert_streaming``).
Sink = Callable[[list[Entry]], None]
Source = Literal["claude", "codex", "pi"]

#: Every source this package imports, in the order the CLI and the viewer show them.
SOURCES: tuple[Source, ...] = ("claude", "codex", "pi")
AGENT_NAMES: dict[str, str] = {"claude": "Claude Code", "codex": "Codex", "pi": "pi"}


@dataclass(frozen=True)
class ForeignSessionInfo:
    """One session of another agent, as a listing sees it (omp's ``ForeignSessionInfo``)."""

    source: Source
    id: str
    path: str
    cwd: str
    created_ms: float
    modified_ms: float
    title: str | None = None
    message_count: int | None = None
    first_message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """omp's JSON shape: dates as ISO strings, absent optional keys omitted."""
        out: dict[str, Any] = {"source": self.source, "id": self.id, "path": self.path, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        out["created"] = iso_from_ms(int(self.created_ms))
        out["modified"] = iso_from_ms(int(self.modified_ms))
        if self.message_count is not None:
            out["messageCount"] = self.message_count
        if self.first_message is not None:
            out["firstMessage"] = self.first_message
        return out

    @property
    def modified(self) -> datetime:
        return datetime.fromtimestamp(self.modified_ms / 1000, tz=timezone.utc)


class HeaderHint(NamedTuple):
    """The header a conversion will produce, known before it runs (see ``header_hint``)."""

    cwd: str
    title: str | None
    title_source: str


@dataclass
class ConvertedSession:
    """A foreign transcript converted to omp entries, before any omp session exists.

    ``entries`` are in ingestion order (omp's ``ingestReplicatedEntry``); ``leaf_id`` is the entry
    the context follows; the title, when there is one, becomes a ``title_change`` entry and the
    header's ``title``/``titleSource`` (:meth:`with_title`).
    """

    source: Source
    cwd: str
    entries: list[Entry]
    leaf_id: str | None
    title: str | None = None
    title_source: str | None = None
    title_trigger: str | None = None
    stats: ReadStats = field(default_factory=ReadStats)
    #: The physical source line each entry came from (diagnostics, tests and the viewer).
    source_lines: dict[str, int] = field(default_factory=dict)
    #: Named deviations that changed this conversion (docs/importers.md), with how often each applied.
    deviations: dict[str, int] = field(default_factory=dict)
    #: Where an update of a persisted import resumes reading (lossless Claude imports), or None.
    resume: dict[str, Any] | None = None

    def note(self, deviation: str, count: int = 1) -> None:
        self.deviations[deviation] = self.deviations.get(deviation, 0) + count

    def with_title(self, now: str | None = None) -> tuple[list[Entry], str | None]:
        """The entries plus omp's ``title_change`` (``setSessionName``, spec §0), and the new leaf."""
        title = clean_title(self.title) if self.title else None
        if not title:
            return self.entries, self.leaf_id
        entry: Entry = {
            "type": "title_change",
            "id": fresh_entry_id({*self.source_lines, *(str(e.get("id")) for e in self.entries)}),
            "parentId": self.leaf_id,
            "timestamp": now or now_iso(),
            "title": title,
            "source": self.title_source,
        }
        if self.title_trigger is not None:
            entry["trigger"] = self.title_trigger
        return [*self.entries, entry], entry["id"]

    def header(self, session_id: str | None = None, now: str | None = None) -> Entry:
        """A fresh v3 header for this conversion (omp 18: UUIDv7 id, title and its source)."""
        header: Entry = {
            "type": "session",
            "version": 3,
            "id": session_id or OMP_18_2.new_session_id(),
            "timestamp": now or now_iso(),
            "cwd": self.cwd,
        }
        title = clean_title(self.title) if self.title else None
        if title:
            header["title"] = title
            header["titleSource"] = self.title_source
        return header

    def context(self) -> SessionContext:
        """The context omp 18 builds for this conversion at its leaf (title entry included)."""
        entries, leaf = self.with_title()
        return build_session_context(entries, leaf, rules=OMP_18_2.context)

    def usage(self) -> UsageStatistics:
        """omp 18's ``getUsageStatistics()`` over every entry."""
        return UsageStatistics.of(self.entries).reported(OMP_18_2.usage)

    def to_manager(self) -> SessionManager:
        """An in-memory, non-persistent manager holding the conversion (omp's ``store.load``)."""
        entries, leaf = self.with_title()
        manager = SessionManager.of_entries(self.header(), entries, cwd=self.cwd)
        if leaf is not None and manager.get_leaf_id() != leaf:
            manager.branch(leaf)
        return manager


class ForeignSessionStore(Protocol):
    """Lists and converts the sessions of another agent (omp's ``ForeignSessionStore``)."""

    source: Source
    #: The agent's own directory (``~/.claude``, ``~/.codex``, ``~/.pi/agent``) or the one given.
    root: Path

    def list(self) -> list[ForeignSessionInfo]:
        """Every session of the store, newest first, without parsing whole transcripts."""
        ...

    def info_for(self, path: str) -> ForeignSessionInfo:
        """The listing info of one transcript file (for a path given on the command line)."""
        ...

    def convert(self, info: ForeignSessionInfo, *, lossless: bool = True) -> ConvertedSession:
        """Convert one session; ``lossless=False`` reproduces omp 18.2.3 exactly (the corpus)."""
        ...

    def convert_streaming(
        self, info: ForeignSessionInfo, sink: Sink, *, lossless: bool = True
    ) -> ConvertedSession:
        """:meth:`convert`, but the entries go to ``sink`` in order (the result holds none).

        The entries are meant for writing: a source record may be carried as the raw JSON bytes
        of its line (an ``orjson.Fragment``, which :func:`session_file.encode_entry` writes verbatim)
        instead of its parsed dict.
        """
        ...

    def header_hint(self, info: ForeignSessionInfo) -> HeaderHint | None:
        """The cwd and title :meth:`convert` will find, when cheap to know beforehand (else
        ``None``): a streaming import then writes the header first and the entries straight
        after it. A wrong hint only costs a copy; the written header is always the conversion's."""
        ...

    def convert_update(
        self, info: ForeignSessionInfo, state: dict[str, Any], imported: Path
    ) -> ConvertedSession | None:
        """Only what the source gained since an import that recorded ``state`` (its ``resume``)
        into the session at ``imported``; ``None`` when this store cannot, or the source no
        longer starts with what was imported (the caller then converts it whole)."""
        ...


class WholeSourceConversion:
    """The streaming side of :class:`ForeignSessionStore` for a store that converts a session
    whole (Codex, pi): no header hint, no incremental update, and ``convert_streaming`` hands
    :meth:`convert`'s entries to the sink in one go."""

    def convert(self, info: ForeignSessionInfo, *, lossless: bool = True) -> ConvertedSession:
        raise NotImplementedError

    def header_hint(self, info: ForeignSessionInfo) -> HeaderHint | None:
        """None: this conversion runs whole before any entry is written anyway."""
        return None

    def convert_update(
        self, info: ForeignSessionInfo, state: dict[str, Any], imported: Path
    ) -> ConvertedSession | None:
        """Not incremental: an update converts the whole source (and appends what is new)."""
        return None

    def convert_streaming(
        self, info: ForeignSessionInfo, sink: Sink, *, lossless: bool = True
    ) -> ConvertedSession:
        """:meth:`convert`, then every entry to ``sink`` (this conversion is not incremental)."""
        converted = self.convert(info, lossless=lossless)
        sink(converted.entries)
        converted.entries = []
        return converted


def clean_title(title: str) -> str:
    """omp 18's ``setSessionName`` cleaning (the dialect owns the rule)."""
    return OMP_18_2.clean_title(title)


def fresh_entry_id(existing: set[str]) -> str:
    while True:
        candidate = random_entry_suffix()
        if candidate not in existing:
            return candidate


def ns_to_ms(ns: int) -> float:
    """Nanoseconds as JS ``mtimeMs``: an integer when whole, so JSON writes no ``.0``."""
    return ns // 1_000_000 if ns % 1_000_000 == 0 else ns / 1_000_000


def file_mtime_ms(path: str) -> float:
    return ns_to_ms(os.stat(path).st_mtime_ns)


def js_string(value: Any) -> str | None:
    """A non-empty string, else ``None`` (omp's ``stringField`` in the Claude store)."""
    return value if isinstance(value, str) and value else None


def clean_preview(value: str) -> str | None:
    cleaned = " ".join(value.split())
    return cleaned or None


__all__ = [
    "AGENT_NAMES",
    "SOURCES",
    "ConvertedSession",
    "EntryBatch",
    "ForeignSessionInfo",
    "ForeignSessionStore",
    "HeaderHint",
    "WholeSourceConversion",
    "clean_preview",
    "clean_title",
    "file_mtime_ms",
    "fresh_entry_id",
    "js_string",
    "ns_to_ms",
]
