"""Updating a Claude import from where it stopped, without reading the transcript again (issue 15).

A lossless import records in its ``foreign_session_import`` entry how far it read (``resume``:
the byte offset after the last complete line, its line number, a hash of the bytes just before it,
and the little state the conversion carries from record to record). An update checks that the
transcript still starts with what was imported (its size and that hash) and converts only the
lines after the offset. What the conversion needs from the part already imported (the entry a
parent uuid resolved to, a tool call's name, whether an id is taken) is looked up in the omp
session written earlier, which holds every source record verbatim: a byte search, then one line
parsed, and only for the few uuids and tool ids the new records refer to.

Every lookup answers what the whole conversion would have answered, except that an entry already
written is never changed: a response still being written when the import ran (split over
records) continues as a new message instead of growing the one written (docs/importers.md).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.store.regular import regular_file

#: How many bytes before the resume offset are hashed to recognise a transcript rewritten since.
TAIL_HASH_BYTES = 4096


def tail_hash(path: str | os.PathLike[str], offset: int) -> str | None:
    """SHA-256 of the ``TAIL_HASH_BYTES`` before ``offset`` (``None`` when the file is shorter)."""
    start = max(0, offset - TAIL_HASH_BYTES)
    try:
        with regular_file(path) as handle:
            handle.seek(start)
            data = handle.read(offset - start)
    except (OSError, CorruptSessionError):
        return None
    return hashlib.sha256(data).hexdigest() if len(data) == offset - start else None


def _embedded_uuids(entry: dict[str, Any]) -> list[Any]:
    """The uuids of the source records an entry carries (kept records, sources, compaction parts)."""
    records: list[Any] = []
    data = entry.get("data")
    if entry.get("customType") == "claude_record" and isinstance(data, dict):
        records.append(data.get("record"))
    for source in entry.get("sourceRecords") or ():
        if isinstance(source, dict):
            records.append(source.get("record"))
    details = entry.get("details")
    if entry.get("type") == "compaction" and isinstance(details, dict):
        records.extend(part.get("record") for part in details.values() if isinstance(part, dict))
    return [record.get("uuid") for record in records if isinstance(record, dict)]


@dataclass
class ImportedSession:
    """Read-only lookups in an omp session written by an earlier import (memory-mapped)."""

    path: Path
    _view: mmap.mmap | None = field(default=None, init=False, repr=False)
    _ids: set[bytes] | None = field(default=None, init=False, repr=False)

    def __enter__(self) -> ImportedSession:
        with regular_file(self.path) as handle:
            if os.fstat(handle.fileno()).st_size:
                self._view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return self

    def __exit__(self, *_: object) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None

    def _lines_with(self, needle: bytes) -> Any:
        """``(start, end, entry)`` of each line holding ``needle``, the newest first."""
        view = self._view
        if view is None:
            return
        end = len(view)
        while (found := view.rfind(needle, 0, end)) >= 0:
            start = view.rfind(b"\n", 0, found) + 1
            stop = view.find(b"\n", found)
            stop = len(view) if stop < 0 else stop
            end = start
            try:
                entry = orjson.loads(view[start:stop])
            except orjson.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                yield start, stop, entry

    def _next_entry(self, stop: int) -> tuple[int, dict[str, Any]] | None:
        view = self._view
        if view is None or stop + 1 >= len(view):
            return None
        following = view.find(b"\n", stop + 1)
        following = len(view) if following < 0 else following
        try:
            entry = orjson.loads(view[stop + 1 : following])
        except orjson.JSONDecodeError:
            return None
        return (following, entry) if isinstance(entry, dict) else None

    def tail(self, uuid: str) -> str | None:
        """The id of the last entry a source record (by uuid) became: what its children hang from."""
        for _, stop, entry in self._lines_with(b'"uuid":' + orjson.dumps(uuid)):
            if uuid not in _embedded_uuids(entry) or not isinstance(entry.get("id"), str):
                continue
            tail: str = entry["id"]
            prefix = f"claude-{uuid}-"
            if tail.startswith(prefix):  # the record's later messages follow it in the file
                while (following := self._next_entry(stop)) is not None:
                    stop, entry = following
                    entry_id = entry.get("id")
                    if not (isinstance(entry_id, str) and entry_id.startswith(prefix)):
                        break
                    tail = entry_id
            return tail
        return None

    def tool_name(self, call_id: str) -> str | None:
        """The name of an earlier tool call (for a result that answers it after the update)."""
        for _, _, entry in self._lines_with(b'"id":' + orjson.dumps(call_id) + b',"name":'):
            message = entry.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("id") == call_id:
                    name = block.get("name")
                    return name if isinstance(name, str) else None
        return None

    def has_id(self, entry_id: str) -> bool:
        """Whether an entry id of this importer (``claude-…``) is in use in the session.

        The ids are collected once, by a byte search for ``"id":"claude-``: an update checks
        every id it gives, and one pass costs less than a search of the file for each."""
        if self._ids is None:
            self._ids = self._claude_ids()
        return entry_id.encode() in self._ids

    def _claude_ids(self) -> set[bytes]:
        ids: set[bytes] = set()
        view = self._view
        if view is None:
            return ids
        needle = b'"id":"claude-'
        position = view.find(needle)
        while position >= 0:
            start = position + len(needle) - len(b"claude-")
            end = view.find(b'"', start)
            if end < 0:
                break
            ids.add(view[start:end])
            position = view.find(needle, end)
        return ids


class ToolNames(dict[str, str]):
    """Tool call id → name, falling back to the earlier import for calls made before the update."""

    def __init__(self, session: ImportedSession | None = None) -> None:
        super().__init__()
        self.session = session

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        name = self.session.tool_name(key) if self.session is not None else None
        if name is None:
            return default
        self[key] = name
        return name


class UsedIds(set[str]):
    """Entry ids given so far, counting those of the earlier import."""

    def __init__(self, session: ImportedSession | None = None) -> None:
        super().__init__()
        self.session = session

    def __contains__(self, entry_id: object) -> bool:
        if super().__contains__(entry_id):
            return True
        return isinstance(entry_id, str) and self.session is not None and self.session.has_id(entry_id)


__all__ = ["TAIL_HASH_BYTES", "ImportedSession", "ToolNames", "UsedIds", "tail_hash"]
