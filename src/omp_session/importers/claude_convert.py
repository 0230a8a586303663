"""A Claude Code transcript → omp entries, in one streaming pass (spec importers §1.2).

With ``lossless=False`` the result is omp 18.2.3's, entry for entry. With ``lossless=True`` (the
default) the named deviations of docs/importers.md apply: every record omp drops is kept (a
``claude_record`` custom entry in its place in the tree, or a ``compaction`` entry for a
``compact_boundary``), every converted record keeps what omp leaves behind in the entry's
``sourceRecords`` (its metadata and the content blocks omp drops), a response split over several
records becomes one assistant message with
its usage counted once, ``toolUseResult`` becomes the tool result's ``details``, and sub-agent
transcripts (``<session>/subagents/*.jsonl``) are kept as ``claude_subagent_record`` entries.

omp reads the whole file first to know every record's parent; this reads it once and resolves a
parent that appears *later* in the file at the end (the rare "child before parent" case).
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping, MutableSet
from typing import Any

import orjson

from omp_session.errors import ForeignSessionError
from omp_session.format.ids import iso_from_ms
from omp_session.importers.base import ConvertedSession, EntryBatch, ForeignSessionInfo, Sink, js_string
from omp_session.importers.claude_lossless import (
    _FOLD_WINDOW,
    COMPACTION,
    KEPT_RECORD,
    MERGED_RESPONSE,
    REDACTED_THINKING,
    STOP_DETAILS,
    SUBAGENT,
    TOOL_DETAILS,
    LosslessParts,
)
from omp_session.importers.claude_records import Converted, claude_timestamp_ms, convert_message, float_free
from omp_session.importers.claude_resume import ImportedSession, ToolNames, UsedIds, tail_hash
from omp_session.importers.jsonl import ReadStats, iter_raw_records
from omp_session.importers.timestamps import canonical_iso_ms

Entry = dict[str, Any]

#: How often (in records) a streaming conversion hands finished entries to its sink.
_DRAIN_EVERY = 256


class _Builder(LosslessParts):
    def __init__(
        self,
        mtime_ms: int | float,
        lossless: bool,
        converted: ConvertedSession,
        raw_records: bool = False,
        session: ImportedSession | None = None,
    ) -> None:
        self.mtime_ms = mtime_ms
        #: The entry timestamp of every record without a usable one (snapshot records have none).
        self.mtime_iso = iso_from_ms(int(mtime_ms))
        self.lossless = lossless
        #: Keep source records as their raw line bytes (``orjson.Fragment``), not re-encoded.
        self.raw_records = raw_records
        self.out = converted
        self.source_parents: dict[str, str | None] = {}
        self.tails: dict[str, tuple[int, str]] = {}
        #: The earlier import an update continues (lookups into what it already wrote).
        self.session = session
        self.used_ids: MutableSet[str] = UsedIds(session) if session is not None else set()
        self.tool_names: MutableMapping[str, str] = ToolNames(session) if session is not None else {}
        #: Per sub-agent file: how far it was read ({bytes, line, tail}), for a later update.
        self.subagent_progress: dict[str, dict[str, Any]] = {}
        self.last_model: str | None = None
        self.counter = 0
        self.cwd: str | None = None
        self.custom_title: str | None = None
        self.ai_title: str | None = None
        self.upstream_leaf: str | None = None
        self.meta_tail: str | None = None
        self.last_assistant: Entry | None = None
        #: Redacted thinking of a record omp skips, waiting for its response's message (lossless).
        self.pending_redacted: tuple[Any, list[dict[str, Any]]] | None = None
        self.compactions: dict[str, tuple[int, Entry]] = {}
        #: ``id()`` of the entries built here and proved to hold no float (EntryBatch.float_free).
        self.float_free: set[int] = set()
        self.line = 0
        #: (entry, walk cursor, line) of entries whose parent chain runs through a later record.
        self.deferred: list[tuple[Entry, str, int]] = []

    # ---------------------------------------------------------------- ids and parents

    def unique(self, base: str) -> str:
        candidate, n = base, 2
        while candidate in self.used_ids:
            candidate, n = f"{base}-{n}", n + 1
        self.used_ids.add(candidate)
        return candidate

    def _walk(self, cursor: str | None, line: int, final: bool) -> tuple[str | None, str | None]:
        seen: set[str] = set()
        while cursor and cursor not in seen:
            seen.add(cursor)
            tail = self.tails.get(cursor)
            if tail is not None and tail[0] < line:
                return tail[1], None
            if cursor not in self.source_parents:
                earlier = self.session.tail(cursor) if self.session is not None else None
                if earlier is not None:  # a record of the part an earlier import wrote
                    self.tails[cursor] = (0, earlier)
                    return earlier, None
                return None, (None if final else cursor)
            cursor = self.source_parents[cursor]
        return None, None

    def resolve(self, parent_uuid: str | None, line: int) -> tuple[str | None, str | None]:
        """The nearest earlier kept ancestor's entry id, and a cursor when that is not known yet."""
        tail = self.tails.get(parent_uuid) if parent_uuid else None
        if tail is not None and tail[0] < line:  # the parent is a kept record: the usual case
            return tail[1], None
        return self._walk(parent_uuid, line, final=False)

    def emit(self, entry: Entry, pending_cursor: str | None, line: int) -> None:
        if pending_cursor is not None:
            self.deferred.append((entry, pending_cursor, line))
        self.out.entries.append(entry)
        self.out.source_lines[entry["id"]] = line

    # ---------------------------------------------------------------- records

    def add(self, line: int, record: dict[str, Any], raw: bytes | None = None) -> None:
        """One source record. The import's hot path: one call per record, with the common work
        inlined (no helper per field) and nothing computed that the mode does not write."""
        self.line = line
        get: Callable[[str], Any] = record.get
        raw_uuid, raw_parent = get("uuid"), get("parentUuid")
        uuid: str | None = raw_uuid if type(raw_uuid) is str and raw_uuid else None
        parent_uuid: str | None = raw_parent if type(raw_parent) is str and raw_parent else None
        if uuid:
            self.source_parents[uuid] = parent_uuid
        if not self.cwd:
            cwd = get("cwd")
            self.cwd = cwd if type(cwd) is str and cwd else None
        kind = get("type")
        if kind == "custom-title":
            self.custom_title = js_string(get("customTitle")) or self.custom_title
        elif kind == "ai-title":
            self.ai_title = js_string(get("aiTitle")) or self.ai_title
        message = get("message")
        converts = (
            (kind == "user" or kind == "assistant")
            and type(message) is dict
            and get("isSidechain") is not True
            and get("isMeta") is not True
        )
        lossless = self.lossless
        if not converts and not lossless:
            return  # omp drops it (spec §1.2): nothing of it is written
        raw_ts = get("timestamp")
        fast = canonical_iso_ms(raw_ts) if type(raw_ts) is str else None
        ts: int | float
        if fast is not None:
            ts, iso = fast, raw_ts
        else:
            ts = claude_timestamp_ms(raw_ts, self.mtime_ms)
            iso = self.mtime_iso if ts == self.mtime_ms else iso_from_ms(int(ts))
        converted = convert_message(kind, record, message, ts, self.tool_names) if converts else []
        kept: Any = orjson.Fragment(raw) if raw is not None and self.raw_records and lossless else record
        key = uuid or f"line-{line}"
        if not converted:
            if lossless:
                self._keep_dropped(line, record, kept, key, uuid, iso)
                if kind == "assistant":
                    self._hold_redacted(record)
            return
        self._add_messages(line, record, kind == "assistant", converted, kept, key, parent_uuid, ts, iso)

    def _add_messages(
        self,
        line: int,
        record: dict[str, Any],
        assistant: bool,
        converted: list[Converted],
        kept: Any,
        key: str,
        parent_uuid: str | None,
        ts: int | float,
        iso: str,
    ) -> None:
        """The entries of a record omp converts: a model change when the model changed, then one
        message entry per converted message (lossless: joined to a split response's message, or
        folded into a compaction as its summary, instead)."""
        lossless = self.lossless
        if lossless:
            if assistant:
                self._assistant_extras(record, converted[0][0])
            if record.get("isCompactSummary") is True and self._fold_into_compaction(
                record, kept, key, line, converted
            ):
                return
        parent, cursor = self.resolve(parent_uuid, line)
        free = float_free(converted, ts, record if lossless else None, kept, assistant)
        if lossless and assistant and self._merge_split_response(record, kept, key, line, parent, converted):
            if not free:
                self.float_free.discard(id(self.last_assistant))
            return
        first = True
        emit = self.emit
        if assistant:
            model = record["message"].get("model")
            if type(model) is str and model and model != self.last_model:
                parent, first = self._model_change(model, key, parent, cursor, line, iso), False
        elif lossless and "toolUseResult" in record:
            self._attach_tool_details(record, converted)
        used = self.used_ids
        # The record verbatim, on the first entry it makes (lossless).
        sources = [{"line": line, "record": kept}] if lossless else None
        for message_out, suffix in converted:
            self.counter += 1
            entry_id = f"claude-{key}-{suffix}-{self.counter}"
            if entry_id in used:
                entry_id = self.unique(entry_id)
            else:
                used.add(entry_id)
            entry: Entry = {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": iso,
                "message": message_out,
            }
            if sources is not None:
                entry["sourceRecords"], sources = sources, None
            if free:
                self.float_free.add(id(entry))
            emit(entry, cursor if first else None, line)
            parent, first = entry_id, False
            if assistant:
                self.last_assistant = entry
        assert parent is not None
        self.tails[key] = (line, parent)
        self.upstream_leaf = parent

    def _model_change(
        self, model: str, key: str, parent: str | None, cursor: str | None, line: int, iso: str
    ) -> str:
        """omp's ``model_change`` before an assistant message whose model differs from the last."""
        entry_id = self.unique(f"claude-{key}-model")
        change: Entry = {
            "type": "model_change",
            "id": entry_id,
            "parentId": parent,
            "timestamp": iso,
            "model": f"anthropic/{model}",
        }
        self.float_free.add(id(change))
        self.emit(change, cursor, line)
        self.last_model = model
        return entry_id

    def snapshot(self, path: str, stats: ReadStats) -> dict[str, Any] | None:
        """Where a later update resumes (claude_resume): ``None`` when the transcript ends in a
        line still being written, which an update could not tell from the lines after it."""
        if stats.torn_tail or not self.lossless:
            return None
        return {
            "bytes": stats.end_offset,
            "line": stats.lines,
            "tailHash": tail_hash(path, stats.end_offset),
            "counter": self.counter,
            "lastModel": self.last_model,
            "cwd": self.cwd,
            "customTitle": self.custom_title,
            "aiTitle": self.ai_title,
            "leaf": self.upstream_leaf,
            "metaTail": self.meta_tail,
            "subagents": self.subagent_progress,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue after :meth:`snapshot` (the ids and titles go on as one conversion would)."""
        self.counter = state["counter"]
        self.last_model = state["lastModel"]
        self.cwd = state["cwd"]
        self.custom_title = state["customTitle"]
        self.ai_title = state["aiTitle"]
        self.upstream_leaf = state["leaf"]
        self.meta_tail = state["metaTail"]
        self.subagent_progress = dict(state["subagents"])

    def drain(self) -> list[Entry]:
        """Remove and return the leading entries that can no longer change (file order kept).

        Held back: the last assistant message (a split response may still join it), a compaction
        waiting for its summary, and everything from an entry whose parent is not known yet.
        """
        held = {id(self.last_assistant)} if self.last_assistant is not None else set()
        for boundary, (line, entry) in list(self.compactions.items()):
            if self.line - line > _FOLD_WINDOW:
                del self.compactions[boundary]
            else:
                held.add(id(entry))
        held.update(id(entry) for entry, _, _ in self.deferred)
        entries = self.out.entries
        stop = next((i for i, entry in enumerate(entries) if id(entry) in held), len(entries))
        ready = self.as_batch(entries[:stop])
        del entries[:stop]
        return ready

    def as_batch(self, entries: list[Entry]) -> EntryBatch:
        """``entries`` as a batch telling which hold no float (they leave the builder here)."""
        batch, proved = EntryBatch(entries), self.float_free
        batch.float_free = [id(entry) in proved for entry in entries]
        proved.difference_update([id(entry) for entry in entries])
        return batch

    def finish(self) -> None:
        for entry, cursor, line in self.deferred:
            entry["parentId"] = self._walk(cursor, line, final=True)[0]


def convert_claude(
    info: ForeignSessionInfo,
    *,
    mtime_ms: int | float,
    lossless: bool = True,
    sink: Sink | None = None,
    drain_every: int = _DRAIN_EVERY,
    raw_records: bool = False,
    resume: tuple[dict[str, Any], ImportedSession] | None = None,
) -> ConvertedSession:
    """Convert ``info.path``; raises :class:`ForeignSessionError` as omp does (spec §1.2).

    With a ``sink`` the entries are handed over in file order as soon as they are final (and the
    result's ``entries`` is empty): memory stays bounded by the longest run of entries that may
    still change, not by the transcript. ``resume`` (a lossless import's recorded ``resume``
    state and the session it wrote) converts only the lines after it (:mod:`claude_resume`);
    the result's ``resume`` is the state for the next update.
    """
    try:
        size = os.path.getsize(info.path)
    except OSError as error:
        raise ForeignSessionError(info.path, f"Unable to read Claude session {info.id}: {error}") from error
    stats = ReadStats()
    out = ConvertedSession(source="claude", cwd=info.cwd, entries=[], leaf_id=None, stats=stats)
    state, session = resume if resume is not None else (None, None)
    builder = _Builder(mtime_ms, lossless, out, raw_records, session)
    start, first_line = 0, 1
    if state is not None:
        builder.restore(state)
        start, first_line = state["bytes"], state["line"] + 1
    add = builder.add
    countdown = drain_every
    try:
        for line, record, raw in iter_raw_records(info.path, stats, start=start, first_line=first_line):
            add(line, record, raw)
            countdown -= 1
            if not countdown:
                countdown = drain_every
                if sink is not None:
                    sink(builder.drain())
    except OSError as error:
        raise ForeignSessionError(info.path, f"Unable to read Claude session {info.id}: {error}") from error
    if stats.records == 0 and size > 0 and state is None:
        raise ForeignSessionError(info.path, f"Claude session {info.id} contains no readable records")
    if lossless:
        builder.keep_subagents(info.path)
    builder.finish()
    if sink is not None:
        sink(builder.as_batch(out.entries))
        out.entries = []
    out.cwd = builder.cwd or info.cwd
    out.leaf_id = builder.upstream_leaf
    out.title = builder.custom_title or builder.ai_title or info.title
    out.title_source = "user" if builder.custom_title else "auto"
    out.resume = builder.snapshot(info.path, stats)
    return out


__all__ = [
    "COMPACTION",
    "KEPT_RECORD",
    "MERGED_RESPONSE",
    "REDACTED_THINKING",
    "STOP_DETAILS",
    "SUBAGENT",
    "TOOL_DETAILS",
    "convert_claude",
]
