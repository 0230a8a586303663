"""One streaming pass over a session: what the store catalog keeps of it.

:func:`read_pass` decodes a session's lines one at a time from an offset (a session that only
grew is read from where the catalog stopped) into a :class:`Build`: its header, its entries
reduced to what the reports count (:func:`slim_entry`), the title's first prompt, each entry's
searchable text (:class:`TextRow`) and its import markers. A session of an older format version,
or with something odd before its header, is loaded whole as every reader loads it
(:func:`read_whole`). Nothing here touches the catalog's database (``catalog_rows.py`` writes
what a pass built; ``catalog_refresh.py`` decides which sessions are read and from where).

Internal module (used by :mod:`omp_session.tools.catalog_refresh`); not part of the public API.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.errors import SessionError
from omp_session.format.codec import BOM, decode_line
from omp_session.format.entries import CURRENT_VERSION, IMPORT_MARKER_BYTES, import_origin
from omp_session.format.header import is_session_header
from omp_session.format.title_slot import fold_into_header, parse_slot_line
from omp_session.store.loading import parse_session
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.entry_text import entry_text
from omp_session.tools.listing_cache import FileKey
from omp_session.tools.summary import is_slash_command, message_text
from omp_session.tools.usage_facts import CopyKey, RecordFields

Entry = dict[str, Any]

__all__ = [
    "DIGEST_SPAN",
    "IMPORT_MARKER",
    "Build",
    "Entry",
    "Source",
    "TextRow",
    "digest",
    "read_pass",
    "read_whole",
    "slim_entry",
]

#: How much of the file is read at a time, and how much of each end of the indexed extent is
#: digested to tell "it only grew" from "it was rewritten".
_CHUNK = 1 << 20
DIGEST_SPAN = 4096
_MESSAGE_KEYS = ("role", "model", "provider", "usage", "toolName", "stopReason")
_ENTRY_KEYS = ("type", "id", "parentId", "timestamp", "usage")
#: What marks an import's bookkeeping entry in a session file (the importers' scan finds them by
#: the same bytes).
IMPORT_MARKER = IMPORT_MARKER_BYTES


def slim_entry(entry: Mapping[str, Any]) -> Entry:
    """``entry`` reduced to what usage reports, statistics and copy detection read: its type, id,
    parent, timestamp and usage; for a message its role, model, provider, usage, tool name, the
    names of its tool calls and a task result's ``details.usage``. Conversation text is dropped."""
    slim = {key: entry[key] for key in _ENTRY_KEYS if key in entry}
    message = entry.get("message")
    if isinstance(message, dict):
        kept = {key: message[key] for key in _MESSAGE_KEYS if key in message}
        content = message.get("content")
        if isinstance(content, list):
            kept["content"] = [
                {"type": "toolCall", "name": block.get("name")}
                for block in content
                if isinstance(block, dict) and block.get("type") == "toolCall"
            ]
        details = message.get("details")
        if isinstance(details, dict) and "usage" in details:
            kept["details"] = {"usage": details["usage"]}
        slim["message"] = kept
    elif "message" in entry:
        slim["message"] = message if not isinstance(message, str | list) else None
    return slim


class TextRow(NamedTuple):
    """One entry's searchable text, with what the search filters look at."""

    entry_id: str
    role: str
    timestamp: str | None
    tools: str
    model: str
    text: str


def digest(data: bytes) -> bytes:
    """The digest of the head or the tail of a session's indexed extent."""
    return hashlib.blake2b(data, digest_size=16).digest()


class Source:
    """The bytes of one session: an open file (read in chunks) or a database row's bytes."""

    def __init__(self, key: FileKey, fd: int | None = None, data: bytes | None = None) -> None:
        self.key = key
        self._fd = fd
        self._data = data
        #: Bytes read as lines (what a refresh costs; the digests are not counted).
        self.bytes_read = 0

    @property
    def size(self) -> int:
        return self.key.size if self._data is None else len(self._data)

    def read_at(self, offset: int, length: int) -> bytes:
        if self._data is not None:
            return self._data[offset : offset + length]
        assert self._fd is not None
        return os.pread(self._fd, length, offset)

    def all_bytes(self) -> bytes:
        return self._data if self._data is not None else self.read_at(0, self.size)

    def lines(self, start: int) -> Iterator[tuple[int, bytes, bool]]:
        """``(offset, line without its newline, complete)`` from ``start`` to the end read."""
        offset, pending, end = start, b"", self.size
        position = start
        while position < end:
            chunk = self.read_at(position, min(_CHUNK, end - position))
            if not chunk:
                break
            position += len(chunk)
            self.bytes_read += len(chunk)
            pending += chunk
            cut = 0
            while (newline := pending.find(b"\n", cut)) >= 0:
                yield offset, pending[cut:newline], True
                offset += newline + 1 - cut
                cut = newline + 1
            pending = pending[cut:]
        if pending:
            yield offset, pending, False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass
class Build:
    """What one pass over a session accumulates."""

    header: Entry | None = None
    slim: list[Entry] = field(default_factory=list)
    #: The first real prompt found so far, and the first non-empty slash command (its fallback).
    prompt: str | None = None
    fallback: str = ""
    texts: list[TextRow] = field(default_factory=list)
    indexed_to: int = 0
    resumable: bool = True
    #: False when the session could not be stored (a value JSON or SQLite cannot hold).
    storable: bool = True
    #: A resumed pass: how many entries the row held, its packed reduced entries and usage facts
    #: as stored (``slim`` then holds the entries read in this pass only), the facts decoded, and
    #: how many segments the packed values hold (``catalog_rows.pack_more``).
    stored_entries: int = 0
    stored_slim: bytes = b""
    stored_facts: bytes = b""
    stored_keys: list[CopyKey | None] = field(default_factory=list)
    stored_spent: dict[int, RecordFields] = field(default_factory=dict)
    stored_segments: int = 0
    #: ``[source, sourcePath]`` of each import marker line (``IMPORT_MARKER``), as the importers'
    #: scan reads them; ``None``: not known (a line the pass could not take as an entry holds
    #: the marker, or the session was loaded whole), the importers scan the file themselves.
    imports: list[list[str]] | None = field(default_factory=list)

    def title(self) -> str:
        header = self.header or {}
        title = header.get("title")
        if isinstance(title, str) and title:
            return title
        prompt = self.prompt if self.prompt is not None else self.fallback
        return " ".join(prompt.split())[:80]

    def add(self, entry: Entry) -> None:
        self.slim.append(slim_entry(entry))
        found = classify(entry)
        # ``summary.first_prompt``'s rule, one entry at a time.
        if found.kind == EntryKind.USER and self.prompt is None:
            text = message_text(found.fields)
            if text.strip():
                if not is_slash_command(text):
                    self.prompt = text
                elif not self.fallback:
                    self.fallback = text
        searchable = entry_text(entry)
        entry_id = entry.get("id")
        if searchable is None or not isinstance(entry_id, str):
            return
        timestamp = entry.get("timestamp")
        tools, model = "", ""
        fields = found.fields
        if found.kind == EntryKind.ASSISTANT:
            content = fields.get("content")
            names = [
                str(block.get("name"))
                for block in (content if isinstance(content, list) else ())
                if isinstance(block, dict) and block.get("type") == "toolCall"
            ]
            tools = " ".join(names)
            model = str(fields.get("model") or "")
        elif found.kind == EntryKind.TOOL_RESULT:
            tools = str(fields.get("toolName") or "")
        self.texts.append(
            TextRow(
                entry_id,
                searchable[0],
                timestamp if isinstance(timestamp, str) else None,
                tools,
                model,
                searchable[1],
            )
        )

    def note_import(self, entry: Entry) -> None:
        """Note ``entry``'s import marker as ``importers.session_file.find_imports`` reads one."""
        if self.imports is not None and (origin := import_origin(entry)) is not None:
            self.imports.append(list(origin))


def read_pass(path: Path, source: Source, start: int, build: Build) -> Build | None:
    """The pass: every line after ``start`` decoded, reduced and its text kept (as
    ``parse_session`` reads them: the header first, behind an omp 18 title slot if any);
    ``None`` when ``source`` is no session."""
    slot = None
    for offset, raw, complete in source.lines(start):
        line = raw[len(BOM) :] if offset == 0 and raw.startswith(BOM) else raw
        if complete:
            build.indexed_to = offset + len(raw) + 1
        else:
            build.resumable = False
        marked = IMPORT_MARKER in line
        if build.header is not None:
            try:
                value = decode_line(line)
            except ValueError:
                if marked:
                    build.imports = None
                continue  # blank or malformed: skipped, as every reader skips it
            if type(value) is dict:
                build.add(value)
                if marked:
                    build.note_import(value)
            elif marked:
                build.imports = None
            continue
        if marked:
            build.imports = None
        if offset == 0 and complete and (slot := parse_slot_line(line)) is not None:
            continue
        try:
            value = decode_line(line)
        except ValueError:
            value = None
        if not is_session_header(value):
            # Blank lines or garbage before the header: the whole-file reader's rules decide.
            return read_whole(path, source)
        if slot is not None:
            fold_into_header(value, slot)
        build.header = value
        if value.get("version") != CURRENT_VERSION:
            return read_whole(path, source)
    if build.header is None:
        return None
    return build


def read_whole(path: Path, source: Source) -> Build | None:
    """A file of an older format version, or with something odd before its header: loaded
    whole as every reader loads it (migrated); ``None`` when that refuses it."""
    try:
        loaded = parse_session(path, source.all_bytes(), None)
    except SessionError:
        return None
    build = Build(header=loaded.header, indexed_to=source.size, resumable=False, imports=None)
    for entry in loaded.entries:
        build.add(entry)
    return build
