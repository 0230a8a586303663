"""The store catalog: a derived, incremental index of every session of a store, in SQLite.

It lives in the listing cache's database (``<agent dir>/cache/session-list.sqlite3``, tables in
``catalog_schema.py``) and holds, per session, the storage state it was read at, the header, the
usage title, the entries reduced to what the reports count (:func:`slim_entry`), and the text of
each entry for full-text search (FTS5, trigram tokenizer: substring matching).

**Never stale.** Every call first compares each session's storage state (one ``stat`` per file,
one ``stat_session`` per database row) with the one it was read at and re-reads the sessions that
changed, in one streaming pass each (one line decoded at a time; memory is bounded by the longest
line and the session's reduced entries). A session that only grew (same inode, longer, the first
and the last 4 KiB before the old end unchanged) is read from where the catalog stopped.

**Never precious.** A catalog of another schema version, a damaged one, or none at all is
rebuilt without a word; an unwritable or busy one makes the call read the sessions itself
(:attr:`Catalog.uncatalogued`). Deleting the database loses nothing.

**Side effects:** writes only the catalog database (or nothing, with ``ListingCache.disabled()``);
never a session.

Internal module (used by the reports, search, resolution and the viewer); not part of the public API.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

import orjson

from omp_session.errors import SessionError
from omp_session.format.codec import BOM, decode_line
from omp_session.format.entries import CURRENT_VERSION, IMPORT_MARKER_BYTES, import_origin
from omp_session.format.header import is_session_header
from omp_session.format.title_slot import fold_into_header, parse_slot_line
from omp_session.store import SessionStorage
from omp_session.store.loading import parse_session
from omp_session.store.regular import open_regular
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.entry_text import EntryText, entry_text
from omp_session.tools.listing_cache import FileKey, ListingCache
from omp_session.tools.summary import is_slash_command, message_text
from omp_session.tools.usage_facts import (
    BUCKET_MS,
    CopyKey,
    GroupRow,
    RecordFields,
    entry_facts,
    group_rows,
    header_facts,
)

Entry = dict[str, Any]

__all__ = [
    "REFRESH_PROGRESS",
    "Catalog",
    "CatalogSession",
    "FactsSession",
    "RankedHit",
    "TextRow",
    "UsageSession",
    "slim_entry",
]

#: How much of the file is read at a time, and how much of each end of the indexed extent is
#: digested to tell "it only grew" from "it was rewritten".
_CHUNK = 1 << 20
_DIGEST_SPAN = 4096
#: Text rows are written to the database in batches of this many (a large session is never held
#: in memory as text).
_BATCH = 2000
#: Held while a refresh runs (one per process at a time: see ``Catalog.refresh``).
_REFRESHING = threading.RLock()
_MESSAGE_KEYS = ("role", "model", "provider", "usage", "toolName", "stopReason")
_ENTRY_KEYS = ("type", "id", "parentId", "timestamp", "usage")
#: At most this many sessions are named in a text query (SQLite's limit of parameters is higher).
_FEW_PATHS = 500
#: A catalog object looks for the rows of sessions gone from the store at its first refresh and
#: then at most this often (seconds): a stat per row is too much for every refresh of a command.
_PRUNE_EVERY_S = 60.0
#: What decoding a damaged blob of a row raises (a disk error, a crashed or foreign writer): the
#: catalog is derived data, so such a row is dropped and its session read again from the store,
#: as if the catalog had never held it (never a traceback).
DAMAGED_ROW: tuple[type[Exception], ...] = (zlib.error, ValueError, TypeError, KeyError, IndexError)
#: What packing a session's row raises: a value JSON or SQLite text cannot hold, or the row's
#: packed values damaged (the session is then read afresh next time).
_UNSTORABLE: tuple[type[Exception], ...] = (orjson.JSONEncodeError, UnicodeEncodeError, *DAMAGED_ROW)


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


class CatalogSession(NamedTuple):
    """One session as the catalog holds it (a ``stats.ReadSession``): its path, header, reduced
    entries (:func:`slim_entry`, file order) and the title reports show (header title, else the
    first real prompt, whitespace squeezed, 80 characters)."""

    path: Path
    header: Entry
    entries: Sequence[Entry]
    title: str


class FactsSession(NamedTuple):
    """One session's usage facts (:func:`~omp_session.tools.usage_facts.entry_facts`): its path,
    header, title, each entry's copy key and the record fields of the entries that spent."""

    path: Path
    header: Entry
    title: str
    keys: Sequence[CopyKey | None]
    spent: dict[int, RecordFields]


class UsageSession(NamedTuple):
    """What the usage reports need of a catalogued session besides its spend: the header's id,
    cwd (else ``NO_PROJECT``), timestamp and ``parentSession``, the title, and whether its spend
    is counted by the copy-once rule rather than summed in SQL whichever sessions are listed with
    it (``catalog_sessions.separate``)."""

    path: str
    session_id: str
    project: str
    started: str
    parent: str | None
    title: str
    separate: bool
    #: ``catalog_sessions.owner``: how ``Catalog.shared_keys`` names the session.
    owner: int


class TextRow(NamedTuple):
    """One entry's searchable text, with what the search filters look at."""

    entry_id: str
    role: str
    timestamp: str | None
    tools: str
    model: str
    text: str


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class _Source:
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


class _Row(NamedTuple):
    key: FileKey
    indexed_to: int
    resumable: bool


#: What marks an import's bookkeeping entry in a session file (the importers' scan finds them by
#: the same bytes).
IMPORT_MARKER = IMPORT_MARKER_BYTES


@dataclass
class _Build:
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
    #: how many segments the packed values hold (:func:`_pack_more`).
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


#: ``report(done, total, name)`` while a refresh reads the sessions that changed (the command
#: line draws a progress bar with it; nothing is reported when nothing changed).
REFRESH_PROGRESS: ContextVar[Callable[[int, int, str], None] | None] = ContextVar(
    "omp_session_catalog_progress", default=None
)


class Catalog:
    """The catalog of one store (files by default, else ``storage``).

    ``cache`` is the database to use (default: the one at ``listing_cache.cache_path()``, opened
    and closed by this object)."""

    def __init__(self, cache: ListingCache | None = None, *, storage: SessionStorage | None = None) -> None:
        self._own_cache = cache is None
        self.cache = cache if cache is not None else ListingCache()
        self.store = storage
        #: Paths whose catalog rows could not be brought up to date this time (busy or unwritable
        #: database, a value SQLite cannot store): callers read those sessions themselves.
        self.uncatalogued: set[str] = set()
        #: ``(path, reason)`` of sessions that are not sessions or could not be read.
        self.skipped: list[tuple[str, str]] = []
        #: Bytes of sessions read as lines by this object's refreshes, and how many sessions.
        self.bytes_read = 0
        self.sessions_read = 0
        #: When this object last looked for rows of sessions gone from the store (``_prune``):
        #: one command refreshes several times, and a long-lived viewer's catalog every request.
        self._pruned_at: float | None = None

    def close(self) -> None:
        if self._own_cache:
            self.cache.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- keeping it fresh ---------------------------------------------------------------------------

    def _key(self, path: Path | str) -> FileKey | None:
        if self.store is not None:
            stat = self.store.stat_session(Path(path))
            return FileKey(stat.size, round(stat.mtime * 1e9), -1, -1) if stat is not None else None
        try:
            return FileKey.of(os.stat(path))
        except OSError:
            return None

    def _open(self, path: Path) -> _Source | None:
        if self.store is not None:
            key = self._key(path)
            try:
                data = self.store.read_session(path)
            except SessionError:
                return None
            return _Source(
                FileKey(len(data), key.mtime_ns, -1, -1) if key else FileKey(len(data), 0, -1, -1), data=data
            )
        try:
            fd = open_regular(path)
        except (OSError, SessionError):
            return None
        try:
            return _Source(FileKey.of(os.fstat(fd)), fd=fd)
        except OSError:
            os.close(fd)
            return None

    def _rows(self, db: sqlite3.Connection) -> dict[str, _Row]:
        # The digests are read only for the rows of sessions that changed (``_resume_point``):
        # this runs before every answer, over every row.
        rows = db.execute(
            "SELECT path, size, mtime_ns, ctime_ns, ino, indexed_to, resumable FROM catalog_files"
        ).fetchall()
        make_key, make_row = tuple.__new__, tuple.__new__
        return {
            path: make_row(_Row, (make_key(FileKey, (size, mtime, ctime, ino)), to, bool(resumable)))
            for path, size, mtime, ctime, ino, to, resumable in rows
        }

    def _digests(self, path: str) -> tuple[bytes | None, bytes | None]:
        db = self.cache.database
        if db is None:
            return None, None
        try:
            found = db.execute("SELECT head, tail FROM catalog_files WHERE path = ?", (path,)).fetchone()
        except sqlite3.Error:
            return None, None
        return (found[0], found[1]) if found is not None else (None, None)

    def refresh(self, paths: Iterable[Path | str]) -> list[Path]:
        """Bring the rows of ``paths`` up to date (re-reading what changed); returns the paths that
        are sessions the catalog now describes. Sessions it could not store are in
        :attr:`uncatalogued`, unreadable or invalid ones in :attr:`skipped`."""
        wanted = [path if isinstance(path, Path) else Path(path) for path in paths]
        with _REFRESHING:  # threads of one process (the viewer's) never index a session twice
            return self._refresh(wanted)

    def _refresh(self, wanted: list[Path]) -> list[Path]:
        db = self.cache.database
        if db is None:
            self.uncatalogued.update(os.fspath(path) for path in wanted)
            return []
        try:
            rows = self._rows(db)
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            self.uncatalogued.update(os.fspath(path) for path in wanted)
            return []
        current: list[Path] = []
        stale: set[Path] = set()
        for path in wanted:
            text_path = os.fspath(path)
            row = rows.get(text_path)
            key = self._key(path if self.store is not None else text_path)
            if key is None:
                self.skipped.append((text_path, "cannot be read"))
                if row is not None:
                    self._forget(text_path)  # deleted: its rows go too
                continue
            if row is None or row.key != key:
                stale.add(path)
            current.append(path)
        now = time.monotonic()
        if self._pruned_at is None or now - self._pruned_at >= _PRUNE_EVERY_S:
            self._pruned_at = now
            self._prune(rows, {os.fspath(path) for path in wanted})
        report = REFRESH_PROGRESS.get()
        done, failed = 0, set()
        for path in current:
            if path in stale:
                if report is not None:
                    report(done, len(stale), path.name)
                if self._index(path, rows.get(os.fspath(path))) is None:
                    failed.add(path)
                done += 1
        if report is not None and stale:
            report(done, len(stale), "")
        return [path for path in current if path not in failed]

    def _prune(self, rows: Mapping[str, _Row], wanted: Collection[str]) -> None:
        """Remove the rows of sessions that are gone from the store (deleted, or moved to another
        path), so that the catalog does not keep them forever nor count them in what it holds.
        Only rows of this kind of storage are looked at (a file row's inode is >= 0, a database
        row's -1): a file store's command never drops the rows of a database store's sessions,
        which are no files. One ``lstat`` per file row not asked for; one listing per directory
        of a database store."""
        by_store = self.store is not None
        others = [path for path, row in rows.items() if path not in wanted and (row.key.ino < 0) == by_store]
        if not others:
            return
        gone: list[str] = []
        if self.store is None:
            for path in others:
                try:
                    os.lstat(path)
                except FileNotFoundError:
                    gone.append(path)
                except OSError:
                    continue  # unreadable for now (permissions, a stale mount): kept
        else:
            directories: dict[str, list[str]] = {}
            for path in others:
                directories.setdefault(os.path.dirname(path), []).append(path)
            for directory, paths in directories.items():
                try:
                    present = {os.fspath(found.path) for found in self.store.list_sessions(Path(directory))}
                except (SessionError, OSError):
                    continue
                gone += [path for path in paths if path not in present]
        for path in gone:
            self._forget(path)

    def _resume_point(self, path: str, source: _Source, row: _Row | None) -> int:
        """Where to continue reading: the old end when the session only grew, else 0."""
        if row is None or not row.resumable:
            return 0
        old = row.key
        if old.ino != source.key.ino or source.size <= old.size or row.indexed_to != old.size:
            return 0
        head, tail = self._digests(path)
        if head is None or tail is None:
            return 0
        head_span = min(_DIGEST_SPAN, old.size)
        tail_start = max(old.size - _DIGEST_SPAN, 0)
        if _digest(source.read_at(0, head_span)) != head:
            return 0
        if _digest(source.read_at(tail_start, old.size - tail_start)) != tail:
            return 0
        return old.size

    def _index(self, path: Path, row: _Row | None) -> bool | None:
        """Re-read one session into the catalog; ``None`` when it is no session or unreadable."""
        text_path = os.fspath(path)
        source = self._open(path)
        if source is None:
            self.skipped.append((text_path, "cannot be read"))
            return None
        try:
            start = self._resume_point(text_path, source, row)
            build = self._resumed(text_path) if start else None
            if build is None:
                start, build = 0, _Build()
            build = self._read(path, source, start, build)
            self.bytes_read += source.bytes_read
            self.sessions_read += 1
            if build is None:
                self._forget(text_path)
                self.skipped.append((text_path, "not a session"))
                return None
            if not self._store(text_path, source, build, resumed=row if start else None):
                self.uncatalogued.add(text_path)
            return True
        finally:
            source.close()

    def _resumed(self, path: str) -> _Build | None:
        db = self.cache.database
        if db is None:
            return None
        try:
            found = db.execute(
                "SELECT header, prompt, slim, imports, facts FROM catalog_files WHERE path = ?", (path,)
            ).fetchone()
        except sqlite3.Error:
            return None
        if found is None or found[0] is None or found[2] is None or found[4] is None:
            return None
        try:
            prompt, fallback = orjson.loads(found[1])
            # The reduced entries stay packed: the new ones are packed after them (_pack_more),
            # so an append costs what it added, not what the session holds.
            keys, spent, segments = _unpack_facts(found[4])
            return _Build(
                header=orjson.loads(found[0]),
                prompt=prompt,
                fallback=fallback,
                stored_entries=len(keys),
                stored_slim=found[2],
                stored_facts=found[4],
                stored_keys=keys,
                stored_spent=spent,
                stored_segments=segments,
                imports=orjson.loads(found[3]) if found[3] is not None else None,
            )
        except DAMAGED_ROW:
            return None  # the session is read from its start

    def _read(self, path: Path, source: _Source, start: int, build: _Build) -> _Build | None:
        """The pass: every line after ``start`` decoded, reduced and its text kept (as
        ``parse_session`` reads them: the header first, behind an omp 18 title slot if any)."""
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
                        _note_import(build, value)
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
                return self._legacy(path, source)
            if slot is not None:
                fold_into_header(value, slot)
            build.header = value
            if value.get("version") != CURRENT_VERSION:
                return self._legacy(path, source)
        if build.header is None:
            return None
        return build

    def _legacy(self, path: Path, source: _Source) -> _Build | None:
        """A file of an older format version, or with something odd before its header: loaded
        whole as every reader loads it (migrated); ``None`` when that refuses it."""
        try:
            loaded = parse_session(path, source.all_bytes(), None)
        except SessionError:
            return None
        build = _Build(header=loaded.header, indexed_to=source.size, resumable=False, imports=None)
        for entry in loaded.entries:
            build.add(entry)
        return build

    def _drop_damaged(self, paths: Sequence[str]) -> None:
        """Rows whose blobs could not be decoded (:data:`DAMAGED_ROW`): dropped, so the next refresh
        reads their sessions again; this time the callers read them themselves."""
        for path in paths:
            self._forget(path)
            self.uncatalogued.add(path)

    def _forget(self, path: str) -> None:
        db = self.cache.database
        if db is None:
            return
        with contextlib.suppress(sqlite3.Error), self.cache.transaction() as tx:
            _delete_texts(tx, path)
            _delete_usage(tx, path)
            tx.execute("DELETE FROM catalog_files WHERE path = ?", (path,))

    def _store(self, path: str, source: _Source, build: _Build, *, resumed: _Row | None) -> bool:
        """Write the pass's results; ``resumed``: the row it continued (its new lines are added,
        unless another process has changed the row since, when nothing is written)."""
        db = self.cache.database
        if db is None:
            return False
        end = build.indexed_to
        try:
            header = orjson.dumps(build.header)
            base = build.stored_entries
            added_keys, added = entry_facts(build.slim)
            added_spent = {base + at: fields for at, fields in added.items()}
            keys = build.stored_keys + added_keys
            spent = {**build.stored_spent, **added_spent}
            if build.stored_segments >= _MAX_SEGMENTS:  # many appends: packed afresh, in one
                slim = _pack(orjson.dumps(_unpack_list(build.stored_slim) + build.slim))
                facts = _pack(_facts_json(keys, spent))
            else:
                slim = _pack_more(build.stored_slim, orjson.dumps(build.slim))
                facts = _pack_more(build.stored_facts, _facts_json(added_keys, added_spent))
            imports = orjson.dumps(build.imports).decode() if build.imports is not None else None
            prompt = orjson.dumps([build.prompt, build.fallback])
            path.encode()
        except _UNSTORABLE:
            self._forget(path)
            return False
        owner = _digest64(path)
        held = [key for key in keys if key is not None]
        new_keys = {_digest64("\x00".join(key)) for key in added_keys if key is not None}
        groups = group_rows(spent.values())
        columns = header_facts(build.header or {})
        # What makes a session's spend unfit for SQL sums by itself (sharing a copy key with
        # another session is recorded in catalog_pairs: whether it matters depends on the sessions
        # a report lists).
        separate = columns[3] is not None or len(set(held)) != len(held) or not _summable(groups)
        head = _digest(source.read_at(0, min(_DIGEST_SPAN, end)))
        tail = _digest(source.read_at(max(end - _DIGEST_SPAN, 0), end - max(end - _DIGEST_SPAN, 0)))
        try:
            with self.cache.transaction() as tx:
                if resumed is None:
                    _delete_texts(tx, path)
                else:
                    now = tx.execute(
                        "SELECT size, mtime_ns, ctime_ns, ino FROM catalog_files WHERE path = ?", (path,)
                    ).fetchone()
                    if now is None or tuple(now) != tuple(resumed.key):
                        return tuple(now or ()) == tuple(source.key)  # (another process stored it)
                for start in range(0, len(build.texts), _BATCH):
                    _insert_texts(tx, path, build.texts[start : start + _BATCH])
                if resumed is None:
                    _delete_keys(tx, owner)
                touched = _usage_buckets(tx, path)
                tx.execute("DELETE FROM catalog_usage WHERE path = ?", (path,))
                _share_keys(tx, owner, new_keys)
                if not separate:
                    tx.executemany(
                        "INSERT INTO catalog_usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        [(path, *group) for group in groups],
                    )
                    touched |= {group[0] for group in groups}
                _retotal(tx, touched)
                tx.execute(
                    "INSERT OR REPLACE INTO catalog_sessions VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                    (
                        path,
                        owner,
                        *columns,
                        build.title(),
                        int(separate),
                        _digest64(repr((*source.key, end))),
                    ),
                )
                tx.execute(
                    "INSERT OR REPLACE INTO catalog_files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        path,
                        *source.key,
                        end,
                        int(build.resumable),
                        head,
                        tail,
                        header.decode(),
                        build.title(),
                        prompt,
                        slim,
                        facts,
                        imports,
                    ),
                )
        except UnicodeEncodeError:
            self._forget(path)  # a lone surrogate in the text: this session is read in full
            return False
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            return False
        return True

    # -- reading it ----------------------------------------------------------------------------------

    def sessions(self, paths: Iterable[Path | str]) -> list[CatalogSession]:
        """The catalog's view of each session of ``paths`` (refreshed first), in the order given;
        sessions it does not hold this time are left out and named in :attr:`uncatalogued`."""
        fresh = self.refresh(paths)
        db = self.cache.database
        if db is None or not fresh:
            return []
        wanted = {os.fspath(path) for path in fresh} - self.uncatalogued
        found: dict[str, CatalogSession] = {}
        damaged: list[str] = []
        try:
            for text_path, header, title, slim in db.execute(
                "SELECT path, header, title, slim FROM catalog_files WHERE slim IS NOT NULL"
            ):
                if text_path in wanted:
                    try:
                        found[text_path] = CatalogSession(
                            Path(text_path), orjson.loads(header), _unpack_list(slim), title
                        )
                    except DAMAGED_ROW:
                        damaged.append(text_path)
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            self.uncatalogued.update(wanted)
            return []
        self._drop_damaged(damaged)
        self.uncatalogued.update(wanted - found.keys())
        return [found[os.fspath(path)] for path in fresh if os.fspath(path) in found]

    def usage_index(self, paths: Iterable[Path | str]) -> tuple[dict[str, UsageSession], int] | None:
        """What the reports need of each session of ``paths`` the catalog holds (refreshed first;
        the others are named in :attr:`uncatalogued`), by path, and how many sessions the catalog
        holds in all whose spend it sums (not ``separate``); ``None`` when it cannot be read."""
        fresh = self.refresh(paths)
        db = self.cache.database
        if db is None:
            return None
        wanted = {os.fspath(path) for path in fresh} - self.uncatalogued
        found: dict[str, UsageSession] = {}
        held = 0
        try:
            for row in db.execute(
                "SELECT path, session_id, project, started, parent, title, separate, owner"
                " FROM catalog_sessions"
            ):
                path, session_id, project, started, parent, title, separate, owner = row
                held += not separate
                if path in wanted:
                    found[path] = UsageSession(
                        path, session_id, project, started, parent, title, bool(separate), owner
                    )
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            return None
        self.uncatalogued.update(wanted - found.keys())
        return found, held

    def kept_stats(self, paths: Collection[str]) -> dict[str, tuple[int, bytes | None]] | None:
        """``{path: (stamp, stats)}`` of the catalogued sessions of ``paths`` (no refresh): the
        summarised statistics ``keep_stats`` kept for the row's ``stamp``, else ``None``."""
        db = self.cache.database
        if db is None:
            return None
        wanted = paths if isinstance(paths, set | frozenset | dict) else set(paths)
        try:
            # Many paths (a store-wide ``stats``): one scan of the small table, filtered here,
            # costs less than looking each up through ``json_each``.
            rows: Iterable[tuple[str, int, bytes | None]] = (
                db.execute("SELECT path, stamp, stats FROM catalog_sessions")
                if len(wanted) > _FEW_PATHS
                else db.execute(
                    "SELECT path, stamp, stats FROM catalog_sessions"
                    " WHERE path IN (SELECT value FROM json_each(?))",
                    (orjson.dumps(sorted(wanted)).decode(),),
                )
            )
            return {path: (stamp, stats) for path, stamp, stats in rows if path in wanted}
        except sqlite3.Error:
            return None

    def keep_stats(self, kept: Sequence[tuple[str, int, bytes]]) -> None:
        """Keep ``(path, stamp, stats)``: each for the row of ``path`` if it is still the one of
        ``stamp`` (else it was read again since, and what was computed is not kept)."""
        if self.cache.database is None or not kept:
            return
        with contextlib.suppress(sqlite3.Error), self.cache.transaction() as tx:
            tx.executemany(
                "UPDATE catalog_sessions SET stats = ? WHERE path = ? AND stamp = ?",
                [(stats, path, stamp) for path, stamp, stats in kept],
            )

    def shared_keys(self) -> list[tuple[int, int]] | None:
        """``(owner, owner)`` of every two catalogued sessions that share an entry's copy key
        (both ways); ``None`` when the catalog cannot be read."""
        db = self.cache.database
        if db is None:
            return None
        try:
            return db.execute("SELECT a, b FROM catalog_pairs").fetchall()
        except sqlite3.Error:
            return None

    def usage_groups(
        self,
        paths: Collection[str],
        *,
        by: str,
        by_bucket: bool,
        exclude: bool = False,
        day_offset_s: int = 0,
    ) -> list[tuple[Any, ...]] | None:
        """The stored usage groups (``catalog_usage``) of ``paths`` (with ``exclude``: of every
        session but those),
        summed in SQL by model and kind of cost, and by ``by`` (``"time"``: quarter hour,
        ``"day"``: the day of the zone ``day_offset_s`` seconds east of UTC, as a day number,
        ``"session"``: session id, ``"project"``, ``"path"``), with the quarter hour too when
        ``by_bucket`` (not for ``"time"`` and ``"day"``): ``([bucket,] [key,] model, recorded,
        input, output, cacheRead, cacheWrite, cost, turns, first_ms, last_ms)``; ``None`` when
        the catalog cannot be read or a sum overflows."""
        db = self.cache.database
        if db is None:
            return None
        # The day number floored (SQLite's integer division truncates toward zero).
        second = f"(u.bucket * {BUCKET_MS // 1000} + {int(day_offset_s)})"
        day = f"({second} / 86400 - ({second} % 86400 < 0))"
        column = {
            "time": "u.bucket",
            "day": day,
            "session": "s.session_id",
            "project": "s.project",
            "path": "u.path",
        }[by]
        keys = [
            *(["u.bucket"] if by_bucket and by not in ("time", "day") else []),
            column,
            "u.model",
            "u.recorded",
        ]
        joined = " JOIN catalog_sessions s ON s.path = u.path" if column.startswith("s.") else ""
        if exclude and not paths and by in ("time", "day"):
            return self._store_totals(db, column)
        where, params = "", []
        if paths or not exclude:
            where = f" WHERE u.path {'NOT IN' if exclude else 'IN'} (SELECT value FROM json_each(?))"
            params.append(orjson.dumps(sorted(paths)).decode())
        sql = (
            f"SELECT {', '.join(keys)}, sum(u.input), sum(u.output), sum(u.cache_read),"
            f" sum(u.cache_write), sum(u.cost), sum(u.turns), min(u.first_ms), max(u.last_ms)"
            f" FROM catalog_usage u{joined}{where} GROUP BY {', '.join(keys)}"
        )
        try:
            return db.execute(sql, params).fetchall()
        except sqlite3.Error:
            return None

    def _store_totals(self, db: sqlite3.Connection, column: str) -> list[tuple[Any, ...]] | None:
        """:meth:`usage_groups` of every session (by quarter hour or day): from the totals kept per
        quarter hour (``catalog_usage_totals``), not from every session's groups."""
        columns = "input, output, cache_read, cache_write, cost, turns, first_ms, last_ms"
        sql = (
            f"SELECT u.bucket, u.model, u.recorded, {columns} FROM catalog_usage_totals u"
            if column == "u.bucket"
            else f"SELECT {column}, u.model, u.recorded, {_SUMS} FROM catalog_usage_totals u GROUP BY 1, 2, 3"
        )
        try:
            found = db.execute(sql).fetchall()
        except sqlite3.Error:
            return None
        if any(row[1] is None for row in found):
            return None  # a quarter hour SQLite could not sum (see _retotal)
        return found

    def usage_facts(self, paths: Iterable[Path | str], *, refresh: bool = True) -> dict[str, FactsSession]:
        """The usage facts of the sessions of ``paths`` the catalog holds (refreshed first unless
        ``refresh`` is false), by path; the others are named in :attr:`uncatalogued`. No entry is
        decoded."""
        fresh = self.refresh(paths) if refresh else list(paths)
        db = self.cache.database
        if db is None or not fresh:
            return {}
        wanted = {os.fspath(path) for path in fresh} - self.uncatalogued
        found: dict[str, FactsSession] = {}
        damaged: list[str] = []
        try:
            for text_path, header, title, facts in db.execute(
                "SELECT path, header, title, facts FROM catalog_files"
                " WHERE path IN (SELECT value FROM json_each(?)) AND facts IS NOT NULL",
                (orjson.dumps(sorted(wanted)).decode(),),
            ):
                if text_path in wanted:
                    try:
                        keys, spent, _segments = _unpack_facts(facts)
                        found[text_path] = FactsSession(
                            Path(text_path), orjson.loads(header), title, keys, spent
                        )
                    except DAMAGED_ROW:
                        damaged.append(text_path)
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            self.uncatalogued.update(wanted)
            return {}
        self._drop_damaged(damaged)
        self.uncatalogued.update(wanted - found.keys())
        return found

    def text_candidates(self, paths: Iterable[Path | str], needles: Sequence[str]) -> list[Path]:
        """Of ``paths`` (refreshed first), those that may hold an entry containing every one of
        ``needles`` (ASCII, case-insensitively, each at least 3 characters) and those the catalog
        does not hold; the order is kept."""
        wanted = [Path(path) for path in paths]
        fresh = self.refresh(wanted)
        db = self.cache.database
        held = {os.fspath(path) for path in fresh} - self.uncatalogued
        if db is None:
            return wanted
        query = " AND ".join(_phrase(needle) for needle in needles)
        try:
            matching = {
                row[0]
                for row in db.execute(
                    "SELECT DISTINCT s.path FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
                    " JOIN catalog_sessions s ON s.owner = e.owner WHERE catalog_text MATCH ?",
                    (query,),
                )
            }
        except sqlite3.Error:
            return wanted
        return [path for path in wanted if os.fspath(path) not in held or os.fspath(path) in matching]

    def known_ids(self, paths: Iterable[Path]) -> dict[str, tuple[str, float]]:
        """``{path: (session id, mtime in seconds)}`` of the sessions of ``paths`` whose catalog row
        is up to date, without reading or re-indexing anything (one ``stat`` each): what resolving
        an id prefix needs. Only rows of sessions read line by line from a header on their first
        line count (``resumable``); the others are left to the caller's own reading."""
        rows = self._unchanged(
            "SELECT path, size, mtime_ns, ctime_ns, ino, json_extract(header, '$.id')"
            " FROM catalog_files WHERE resumable = 1 AND header IS NOT NULL",
            paths,
        )
        return {path: (value, mtime) for path, (value, mtime) in rows.items() if isinstance(value, str)}

    def known_imports(self, paths: Iterable[Path]) -> dict[str, tuple[list[tuple[str, str]], float]]:
        """``{path: ([(source, sourcePath), ...], mtime in seconds)}``: the import markers
        (``IMPORT_MARKER`` lines) of the session files of ``paths`` whose catalog row is up to
        date and knows them, without reading or re-indexing anything (one ``stat`` each): what
        the importers' "already imported?" check needs. The others are left to the caller's scan."""
        if self.store is not None:
            return {}
        rows = self._unchanged(
            "SELECT path, size, mtime_ns, ctime_ns, ino, imports FROM catalog_files"
            " WHERE imports IS NOT NULL",
            paths,
        )
        found: dict[str, tuple[list[tuple[str, str]], float]] = {}
        for path, (imports, mtime) in rows.items():
            try:
                marks = [(str(source), str(origin)) for source, origin in orjson.loads(imports)]
            except DAMAGED_ROW:
                continue  # a damaged row: the caller scans the file
            found[path] = (marks, mtime)
        return found

    def _unchanged(self, query: str, paths: Iterable[Path]) -> dict[str, tuple[Any, float]]:
        """``{path: (value, mtime in seconds)}`` for the rows ``query`` selects (``path, size,
        mtime_ns, ctime_ns, ino, value``) of the sessions of ``paths`` unchanged since the catalog
        read them (one ``stat`` each, or a ``stat_session`` of a database store); nothing is read
        or re-indexed."""
        db = self.cache.database
        if db is None:
            return {}
        try:
            rows = {
                path: (tuple.__new__(FileKey, (size, mtime, ctime, ino)), value)
                for path, size, mtime, ctime, ino, value in db.execute(query)
            }
        except sqlite3.Error:
            return {}
        found: dict[str, tuple[Any, float]] = {}
        for path in paths:
            text_path = os.fspath(path)
            row = rows.get(text_path)
            if row is None:
                continue
            if self.store is not None:
                stored = self.store.stat_session(path)
                if stored is None:
                    continue
                key, mtime = FileKey(stored.size, round(stored.mtime * 1e9), -1, -1), stored.mtime
            else:
                try:
                    stat = os.stat(path)
                except OSError:
                    continue
                key, mtime = FileKey.of(stat), stat.st_mtime
            if key == row[0]:
                found[text_path] = (row[1], mtime)
        return found

    def held(self, path: str) -> CatalogSession | None:
        """The catalog's row of ``path`` as it is (no refresh), or ``None``."""
        db = self.cache.database
        if db is None or path in self.uncatalogued:
            return None
        try:
            row = db.execute(
                "SELECT header, title, slim FROM catalog_files WHERE path = ? AND slim IS NOT NULL", (path,)
            ).fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        try:
            return CatalogSession(Path(path), orjson.loads(row[0]), _unpack_list(row[2]), row[1])
        except DAMAGED_ROW:
            self._drop_damaged([path])
            return None

    def entry_texts(self, paths: Sequence[Path], needles: Sequence[str]) -> dict[str, list[EntryText]] | None:
        """The searchable texts of the entries of ``paths`` (catalogued sessions only, file
        order) that contain every one of ``needles`` (all entries without needles); ``None``
        when the catalog cannot be read."""
        db = self.cache.database
        if db is None:
            return None
        wanted = {os.fspath(path) for path in paths} - self.uncatalogued
        found: dict[str, list[EntryText]] = {}
        select = (
            "SELECT s.path, e.entry_id, e.role, e.timestamp, t.text"
            " FROM catalog_entries e JOIN catalog_text t ON t.rowid = e.rowid"
            " JOIN catalog_sessions s ON s.owner = e.owner"
        )
        try:
            if needles:
                query = " AND ".join(_phrase(needle) for needle in needles)
                # A few sessions (the viewer's page of hits): only their rows are read, not the
                # text of every entry of the store that holds the needles.
                few = sorted({_digest64(path) for path in wanted}) if len(wanted) <= _FEW_PATHS else []
                within = f" AND e.owner IN ({','.join('?' * len(few))})" if few else ""
                rows: Iterable[Any] = db.execute(
                    f"{select} WHERE catalog_text MATCH ?{within} ORDER BY e.rowid", (query, *few)
                ).fetchall()
            else:
                rows = (
                    row
                    for path in sorted(wanted)
                    for row in db.execute(f"{select} WHERE e.owner = ? ORDER BY e.rowid", (_digest64(path),))
                )
            for path, entry_id, role, timestamp, text in rows:
                if path in wanted:
                    found.setdefault(path, []).append(EntryText(entry_id, role, timestamp, text))
        except sqlite3.Error:
            return None
        return found

    def many_matches(self, needles: Sequence[str], at_least: int) -> bool | None:
        """Whether at least ``at_least`` entries of the catalog hold every one of ``needles``
        (counted up to that many only: cheap for a common word too); ``None`` when the catalog
        cannot be read."""
        db = self.cache.database
        if db is None or not needles:
            return None if db is None else True
        query = " AND ".join(_phrase(needle) for needle in needles)
        try:
            (count,) = db.execute(
                "SELECT count(*) FROM (SELECT rowid FROM catalog_text WHERE catalog_text MATCH ? LIMIT ?)",
                (query, at_least),
            ).fetchone()
        except sqlite3.Error:
            return None
        return bool(count >= at_least)

    def session_texts(self, path: str, needles: Sequence[str]) -> list[EntryText] | None:
        """:meth:`entry_texts` of one session: its entries' texts that contain every one of
        ``needles``, in file order (``[]`` for a session the catalog does not hold); ``None``
        when the catalog cannot be read. The full-text index is read only within the rowids of
        the session's entries, so a word most entries hold costs what this session holds of it,
        not what the whole store does."""
        db = self.cache.database
        if db is None:
            return None
        if path in self.uncatalogued:
            return []
        select = (
            "SELECT e.entry_id, e.role, e.timestamp, t.text"
            " FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
        )
        try:
            owner = _digest64(path)
            low, high = db.execute(
                "SELECT min(rowid), max(rowid) FROM catalog_entries WHERE owner = ?", (owner,)
            ).fetchone()
            if low is None:
                return []
            if needles:
                query = " AND ".join(_phrase(needle) for needle in needles)
                rows = db.execute(
                    f"{select} WHERE catalog_text MATCH ? AND t.rowid BETWEEN ? AND ? AND e.owner = ?"
                    " ORDER BY t.rowid",
                    (query, low, high, owner),
                )
            else:
                rows = db.execute(f"{select} WHERE e.owner = ? ORDER BY e.rowid", (owner,))
            return [EntryText(*row) for row in rows]
        except sqlite3.Error:
            return None

    def sessions_matching(
        self, paths: Sequence[Path], needles: Sequence[str], pattern: re.Pattern[str]
    ) -> set[str] | None:
        """Of the catalogued sessions of ``paths``, those with an entry whose text (one of those
        :meth:`entry_texts` gives) ``pattern`` finds: the rows are read as they come, no entry
        text is built, and a session without needles is left at its first match (a list of the
        sessions that match, for the viewer's search). ``None`` when the catalog cannot be read."""
        db = self.cache.database
        if db is None:
            return None
        wanted = {os.fspath(path) for path in paths} - self.uncatalogued
        found: set[str] = set()
        joined = "FROM catalog_entries e JOIN catalog_text t ON t.rowid = e.rowid"
        try:
            if needles:
                # Only the rowids of the matching entries are scanned; an entry's text is read
                # for a session not matched yet only (a word most entries hold costs a text or so
                # per session, not every matching entry's text).
                query = " AND ".join(_phrase(needle) for needle in needles)
                owners = {_digest64(path): path for path in wanted}
                matches = db.execute(
                    "SELECT e.owner, t.rowid FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
                    " WHERE catalog_text MATCH ?",
                    (query,),
                )
                for owner, rowid in matches:
                    path = owners.get(owner)
                    if path is None or path in found:
                        continue
                    text = db.execute("SELECT text FROM catalog_text WHERE rowid = ?", (rowid,)).fetchone()
                    if text is not None and pattern.search(text[0]):
                        found.add(path)
                return found
            for path in sorted(wanted):
                rows = db.execute(
                    f"SELECT t.text {joined} WHERE e.owner = ? ORDER BY e.rowid", (_digest64(path),)
                )
                if any(pattern.search(text) for (text,) in rows):
                    found.add(path)
                rows.close()
        except sqlite3.Error:
            return None
        return found

    def entry_facts(self, path: str) -> dict[str, tuple[str, str]]:
        """``{entry id: (tool names, model)}`` of one catalogued session's text entries."""
        db = self.cache.database
        if db is None:
            return {}
        try:
            return {
                entry_id: (tools, model)
                for entry_id, tools, model in db.execute(
                    "SELECT entry_id, tools, model FROM catalog_entries WHERE owner = ?", (_digest64(path),)
                )
            }
        except sqlite3.Error:
            return {}

    def ranked(
        self,
        paths: Iterable[Path | str],
        query: str,
        *,
        roles: Sequence[str] = (),
        tool: str | None = None,
        model: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 50,
    ) -> list[RankedHit]:
        """Entries matching the FTS5 ``query`` (words and ``"phrases"``, each matched as a
        substring; ``AND``/``OR``/``NOT``), best first (bm25), with a snippet whose match is
        between ``\\x02`` and ``\\x03``. Filters: roles, a tool name, a model (substring), and an
        ISO timestamp range (``since`` <= timestamp < ``until``)."""
        wanted = {os.fspath(path) for path in self.refresh(paths)} - self.uncatalogued
        db = self.cache.database
        if db is None:
            return []
        where, params = ["catalog_text MATCH ?"], [query]
        if roles:
            where.append(f"e.role IN ({','.join('?' * len(roles))})")
            params.extend(roles)
        if tool:
            where.append("(' ' || e.tools || ' ') LIKE ?")
            params.append(f"% {tool} %")
        if model:
            where.append("e.model LIKE ?")
            params.append(f"%{model}%")
        if since:
            where.append("e.timestamp >= ?")
            params.append(since)
        if until:
            where.append("e.timestamp < ?")
            params.append(until)
        sql = (
            "SELECT s.path, e.entry_id, e.role, e.timestamp, e.tools, e.model,"
            " snippet(catalog_text, 0, char(2), char(3), '…', 64), bm25(catalog_text)"
            " FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
            " JOIN catalog_sessions s ON s.owner = e.owner"
            f" WHERE {' AND '.join(where)} ORDER BY bm25(catalog_text)"
        )
        hits: list[RankedHit] = []
        try:
            for row in db.execute(sql, params):
                if row[0] in wanted:
                    hits.append(RankedHit(*row))
                    if len(hits) >= limit:
                        break
        except sqlite3.Error as exc:
            raise ValueError(f"not a search query: {exc}") from None
        return hits


class RankedHit(NamedTuple):
    """One entry a ranked search found."""

    path: str
    entry_id: str
    role: str
    timestamp: str | None
    tools: str
    model: str
    #: The text around the match, the match between ``\\x02`` and ``\\x03``.
    snippet: str
    #: bm25 score: lower is better.
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entryId": self.entry_id,
            "role": self.role,
            "timestamp": self.timestamp,
            "tools": self.tools.split(),
            "model": self.model or None,
            "snippet": self.snippet.replace("\x02", "").replace("\x03", ""),
            "score": self.score,
        }


def _note_import(build: _Build, entry: Entry) -> None:
    """Note ``entry``'s import marker as ``importers.session_file.find_imports`` reads one."""
    if build.imports is not None and (origin := import_origin(entry)) is not None:
        build.imports.append(list(origin))


def _pack(data: bytes) -> bytes:
    # The reduced entries and usage facts are read whole and rarely (a session's first stats,
    # its search hits' branches), and compress about 6:1: the catalog stays small.
    return zlib.compress(data, 1)


#: A packed value of more segments than this is packed afresh in one at the next append (each
#: segment is one zlib stream to start when it is read).
_MAX_SEGMENTS = 32


def _pack_more(packed: bytes, data: bytes) -> bytes:
    """``packed`` (zlib streams, one after the other) with ``data`` packed after it: what a
    session that grew adds to its row, without packing again what the row held."""
    return packed + _pack(data)


def _segments(packed: bytes) -> Iterator[bytes]:
    """The data of each zlib stream of ``packed`` (a :data:`DAMAGED_ROW` error when damaged)."""
    rest = packed
    while True:
        stream = zlib.decompressobj()
        yield stream.decompress(rest)
        if not stream.eof:
            raise zlib.error("a truncated packed value")
        rest = stream.unused_data
        if not rest:
            return


def _unpack_list(packed: bytes) -> list[Any]:
    """The JSON arrays packed in ``packed``'s segments, one after the other."""
    found: list[Any] = []
    for data in _segments(packed):
        found += orjson.loads(data)
    return found


def _facts_json(keys: Sequence[CopyKey | None], spent: Mapping[int, RecordFields]) -> bytes:
    return orjson.dumps({"keys": keys, "spent": [[at, *fields] for at, fields in spent.items()]})


def _unpack_facts(packed: bytes) -> tuple[list[CopyKey | None], dict[int, RecordFields], int]:
    """Each entry's copy key, the record fields of those that spent (by position) and how many
    segments ``packed`` holds (each holds the facts of the entries one pass added)."""
    keys: list[CopyKey | None] = []
    spent: dict[int, RecordFields] = {}
    segments = 0
    for data in _segments(packed):
        segments += 1
        value = orjson.loads(data)
        keys += [cast("CopyKey", tuple(key)) if key is not None else None for key in value["keys"]]
        spent.update((row[0], cast("RecordFields", tuple(row[1:]))) for row in value["spent"])
    return keys, spent, segments


def _phrase(needle: str) -> str:
    return '"' + needle.replace('"', '""') + '"'


def _digest64(text: str) -> int:
    """A 64-bit digest of ``text`` (signed, as SQLite's integers are)."""
    data = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(data, "little", signed=True)


#: SQLite's integers (a larger one would not be stored, or would overflow a sum).
_INT_RANGE = range(-(2**62), 2**62)


def _summable(groups: Sequence[GroupRow]) -> bool:
    """Whether SQL sums ``groups`` as Python does: integers well inside SQLite's range, no NaN
    (SQLite stores NaN as NULL, which a sum skips)."""
    for group in groups:
        for value in group[3:9]:
            if type(value) is int:
                if value not in _INT_RANGE:
                    return False
            elif value != value:  # NaN
                return False
    return True


def _share_keys(db: sqlite3.Connection, owner: int, keys: set[int]) -> None:
    """Record ``keys`` (copy-key digests) as the session ``owner``'s, and each other session that
    holds one of them as sharing a key with it (``catalog_pairs``, both ways)."""
    if not keys:
        return
    others = [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT owner FROM catalog_keys WHERE key IN (SELECT value FROM json_each(?))"
            " AND owner != ?",
            (orjson.dumps(sorted(keys)).decode(), owner),
        )
    ]
    db.executemany("INSERT OR IGNORE INTO catalog_keys VALUES (?, ?)", [(key, owner) for key in keys])
    db.executemany(
        "INSERT OR IGNORE INTO catalog_pairs VALUES (?, ?)",
        [pair for other in others for pair in ((owner, other), (other, owner))],
    )


_SUMS = (
    "sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cost), sum(turns),"
    " min(first_ms), max(last_ms)"
)


def _usage_buckets(db: sqlite3.Connection, path: str) -> set[int | None]:
    """The quarter hours the stored usage groups of ``path`` lie in."""
    return {row[0] for row in db.execute("SELECT DISTINCT bucket FROM catalog_usage WHERE path = ?", (path,))}


def _retotal(db: sqlite3.Connection, buckets: set[int | None]) -> None:
    """Sum ``catalog_usage`` again into ``catalog_usage_totals`` for the quarter hours of
    ``buckets`` (those a session's groups left or entered): the store's totals stay the sum of
    every session's groups, each quarter hour summed as a query of all the groups sums it. A sum
    SQLite cannot make (an integer overflow) leaves a row without a model in that quarter hour,
    which makes a reader of the totals sum the groups themselves."""
    if not buckets:
        return
    dated = orjson.dumps(sorted(bucket for bucket in buckets if bucket is not None)).decode()
    chosen = ["bucket IN (SELECT value FROM json_each(?))"] + (["bucket IS NULL"] if None in buckets else [])
    where = " OR ".join(chosen)
    db.execute(f"DELETE FROM catalog_usage_totals WHERE {where}", (dated,))
    try:
        db.execute(
            f"INSERT INTO catalog_usage_totals SELECT bucket, model, recorded, {_SUMS} FROM catalog_usage"
            f" WHERE {where} GROUP BY bucket, model, recorded",
            (dated,),
        )
    except sqlite3.OperationalError:  # integer overflow
        db.executemany(
            "INSERT INTO catalog_usage_totals (bucket) VALUES (?)", [(bucket,) for bucket in buckets]
        )


def _delete_keys(db: sqlite3.Connection, owner: int) -> None:
    db.execute("DELETE FROM catalog_keys WHERE owner = ?", (owner,))
    db.execute("DELETE FROM catalog_pairs WHERE a = ? OR b = ?", (owner, owner))


def _delete_usage(db: sqlite3.Connection, path: str) -> None:
    touched = _usage_buckets(db, path)
    db.execute("DELETE FROM catalog_usage WHERE path = ?", (path,))
    _retotal(db, touched)
    db.execute("DELETE FROM catalog_sessions WHERE path = ?", (path,))
    _delete_keys(db, _digest64(path))


def _delete_texts(db: sqlite3.Connection, path: str) -> None:
    db.execute(
        "DELETE FROM catalog_text WHERE rowid IN (SELECT rowid FROM catalog_entries WHERE owner = ?)",
        (_digest64(path),),
    )
    db.execute("DELETE FROM catalog_entries WHERE owner = ?", (_digest64(path),))


def _insert_texts(db: sqlite3.Connection, path: str, rows: Sequence[TextRow]) -> None:
    # Rowids given, not assigned: two ``executemany`` per batch instead of two statements per row
    # (inside the writer's transaction, so no other writer takes the same ones).
    first = (db.execute("SELECT max(rowid) FROM catalog_entries").fetchone()[0] or 0) + 1
    owner = _digest64(path)
    db.executemany(
        "INSERT INTO catalog_entries (rowid, owner, entry_id, role, timestamp, tools, model)"
        " VALUES (?,?,?,?,?,?,?)",
        [
            (rowid, owner, row.entry_id, row.role, row.timestamp, row.tools, row.model)
            for rowid, row in enumerate(rows, first)
        ],
    )
    db.executemany(
        "INSERT INTO catalog_text (rowid, text) VALUES (?, ?)",
        [(rowid, row.text) for rowid, row in enumerate(rows, first)],
    )
