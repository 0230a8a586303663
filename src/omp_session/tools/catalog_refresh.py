"""Keeping the store catalog fresh: its database handle, and the rows brought up to date.

Every call first compares each session's storage state (one ``stat`` per file, one
``stat_session`` per database row) with the one its row was read at, and re-reads the sessions
that changed in one pass each (``catalog_pass.py``), written by ``catalog_rows.py``. A session
that only grew (same inode, longer, the first and the last 4 KiB before the old end unchanged)
is read from where the catalog stopped. Rows of sessions gone from the store are dropped (looked
for at a catalog object's first refresh, then at most once a minute). :meth:`CatalogBase.known_ids`
and :meth:`CatalogBase.known_imports` answer from rows still fresh without re-reading anything.

The queries over the fresh rows are in ``catalog_reports.py`` (usage and statistics) and
``catalog_text.py`` (full-text search); ``catalog.Catalog`` is all of them in one object.

Internal module (used by :mod:`omp_session.tools.catalog`); not part of the public API.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from omp_session.errors import SessionError
from omp_session.store import SessionStorage
from omp_session.store.regular import open_regular
from omp_session.tools.catalog_pass import DIGEST_SPAN, Build, Source, digest, read_pass
from omp_session.tools.catalog_rows import DAMAGED_ROW, forget_session, store_session, unpack_facts
from omp_session.tools.listing_cache import FileKey, ListingCache

__all__ = ["REFRESH_PROGRESS", "CatalogBase"]

#: Held while a refresh runs (one per process at a time: see ``CatalogBase.refresh``).
_REFRESHING = threading.RLock()
#: A catalog object looks for the rows of sessions gone from the store at its first refresh and
#: then at most this often (seconds): a stat per row is too much for every refresh of a command.
_PRUNE_EVERY_S = 60.0

#: ``report(done, total, name)`` while a refresh reads the sessions that changed (the command
#: line draws a progress bar with it; nothing is reported when nothing changed).
REFRESH_PROGRESS: ContextVar[Callable[[int, int, str], None] | None] = ContextVar(
    "omp_session_catalog_progress", default=None
)


class _Row(NamedTuple):
    key: FileKey
    indexed_to: int
    resumable: bool


class CatalogBase:
    """The catalog of one store (files by default, else ``storage``), kept fresh.

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

    # -- keeping it fresh ---------------------------------------------------------------------------

    def _key(self, path: Path | str) -> FileKey | None:
        if self.store is not None:
            stat = self.store.stat_session(Path(path))
            return FileKey(stat.size, round(stat.mtime * 1e9), -1, -1) if stat is not None else None
        try:
            return FileKey.of(os.stat(path))
        except OSError:
            return None

    def _open(self, path: Path) -> Source | None:
        if self.store is not None:
            key = self._key(path)
            try:
                data = self.store.read_session(path)
            except SessionError:
                return None
            return Source(
                FileKey(len(data), key.mtime_ns, -1, -1) if key else FileKey(len(data), 0, -1, -1), data=data
            )
        try:
            fd = open_regular(path)
        except (OSError, SessionError):
            return None
        try:
            return Source(FileKey.of(os.fstat(fd)), fd=fd)
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

    def _resume_point(self, path: str, source: Source, row: _Row | None) -> int:
        """Where to continue reading: the old end when the session only grew, else 0."""
        if row is None or not row.resumable:
            return 0
        old = row.key
        if old.ino != source.key.ino or source.size <= old.size or row.indexed_to != old.size:
            return 0
        head, tail = self._digests(path)
        if head is None or tail is None:
            return 0
        head_span = min(DIGEST_SPAN, old.size)
        tail_start = max(old.size - DIGEST_SPAN, 0)
        if digest(source.read_at(0, head_span)) != head:
            return 0
        if digest(source.read_at(tail_start, old.size - tail_start)) != tail:
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
                start, build = 0, Build()
            build = read_pass(path, source, start, build)
            self.bytes_read += source.bytes_read
            self.sessions_read += 1
            if build is None:
                self._forget(text_path)
                self.skipped.append((text_path, "not a session"))
                return None
            if not store_session(
                self.cache, text_path, source, build, resumed=row.key if start and row else None
            ):
                self.uncatalogued.add(text_path)
            return True
        finally:
            source.close()

    def _resumed(self, path: str) -> Build | None:
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
            keys, spent, segments = unpack_facts(found[4])
            return Build(
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

    def _drop_damaged(self, paths: Sequence[str]) -> None:
        """Rows whose blobs could not be decoded (:data:`DAMAGED_ROW`): dropped, so the next refresh
        reads their sessions again; this time the callers read them themselves."""
        for path in paths:
            self._forget(path)
            self.uncatalogued.add(path)

    def _forget(self, path: str) -> None:
        forget_session(self.cache, path)

    # -- answers from the rows still fresh, nothing re-read ------------------------------------------

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
