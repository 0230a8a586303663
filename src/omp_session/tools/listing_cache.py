"""The on-disk metadata cache of session listings: ``<agent dir>/cache/session-list.sqlite3``.

One row per session file holding its ``SessionInfo``, keyed by the file's path and trusted only
while the file's size, mtime, ctime and inode are all unchanged (any write changes one of them). The
``all_messages_text`` of each lives in a second table, read only when an info's text is first used:
a warm listing of thousands of sessions then loads a few hundred bytes per session, not every
conversation.

It is only a cache: every failure (a locked, corrupt or unwritable database) makes the listing
compute from the files instead, and a corrupt database is replaced.

Internal module (used by :mod:`omp_session.tools.listing`); not part of the public API.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from omp_session.store.listing.info import FileKey, SessionInfo
from omp_session.store.listing.summary import read_file, summarize_bytes
from omp_session.store.paths import agent_dir
from omp_session.tools.catalog_schema import CATALOG_DROP, CATALOG_SCHEMA

__all__ = ["SCHEMA_VERSION", "FileKey", "ListingCache", "cache_path", "read_file"]

# 3: files starting with an omp 18 title slot are sessions (the slot folded into the header).
# 4: the texts in their own table.
# 5: the store catalog's tables (``catalog.py``): per-session entry facts and the full-text index.
# 6: a first prompt skips an agent's environment context (issue 30 #5).
# 7: an imported session is dated by its conversation, not by its import (issue 27 #5).
# 8: each session's usage facts precomputed (``catalog_files.facts``).
# 9: the catalog's usage groups, copy-key digests and header columns (summed in SQL).
# 10: the sessions sharing a copy key as pairs; each session's summarised statistics kept.
# 11: slim entries and facts compressed, entries named by owner, covering indexes, import markers.
# 12: a grown session's reduced entries and facts packed after the row's (segments), not again.
# 13: the combined statistics of a many-session ``stats`` kept (``catalog_stats_totals``).
SCHEMA_VERSION = 13
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS infos (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER, info BLOB
);
CREATE TABLE IF NOT EXISTS texts (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER, text TEXT
);
"""
    + CATALOG_SCHEMA
)
_DROP = (
    "DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS texts; DROP TABLE IF EXISTS infos;" + CATALOG_DROP
)


def cache_path() -> Path:
    """The catalog database: the listing's summaries and the store catalog (``catalog.py``)."""
    return agent_dir() / "cache" / "session-list.sqlite3"


class ListingCache:
    """A connection to the cache; every method swallows database errors (then: no cache)."""

    def __init__(self, path: Path | None = None, *, enabled: bool = True) -> None:
        self.path = path if path is not None else cache_path()
        self._db: sqlite3.Connection | None = None
        if not enabled:
            return
        try:
            self._db = self._connect()
        except (sqlite3.Error, OSError):
            self._db = self._replace_damaged()

    @classmethod
    def disabled(cls) -> ListingCache:
        """No cache at all: every listing summarises every file (nothing is written)."""
        return cls(enabled=False)

    @classmethod
    def in_memory(cls) -> ListingCache:
        """A cache that lives in this process only (for readers that must not write, like the
        viewer). Usable from any thread, one at a time."""
        cache = cls(enabled=False)
        cache.path = Path(":memory:")
        cache._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        cache._db.executescript(_SCHEMA)
        return cache

    @classmethod
    def shared_or_in_memory(cls) -> ListingCache:
        """The agent dir's database, shared with every other command; an in-memory one when that
        cannot be opened or written (a read-only agent dir). Usable from any thread, one at a time."""
        cache = cls()
        return cache if cache._db is not None else cls.in_memory()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A writer waits this long for another (two commands indexing at once); readers never
        # wait in WAL mode.
        db = sqlite3.connect(self.path, timeout=2.0, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA synchronous=OFF")  # a cache: losing the last writes costs a re-read
            # fetchall: the statement is finished (VACUUM refuses to run beside an active one).
            version = db.execute("PRAGMA user_version").fetchall()[0][0]
            if version != SCHEMA_VERSION:
                db.executescript(_DROP + _SCHEMA)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                # The dropped tables' pages are given back: the file shrinks to the empty
                # schema's size instead of keeping the old catalog's (cheap: nothing is left).
                with contextlib.suppress(sqlite3.Error):
                    db.execute("VACUUM")
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # (in WAL mode)
                with contextlib.suppress(sqlite3.Error):
                    db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        except BaseException:
            db.close()
            raise
        return db

    def _replace_damaged(self) -> sqlite3.Connection | None:
        # A file that is not a database (or a broken one): start a new cache, or go without.
        if self.path == Path(":memory:"):
            return None
        with contextlib.suppress(OSError):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        try:
            return self._connect()
        except (sqlite3.Error, OSError):
            return None

    @property
    def database(self) -> sqlite3.Connection | None:
        """The open database (``None``: no cache this time), for the catalog's own tables."""
        return self._db

    def failed(self, exc: sqlite3.Error) -> None:
        """A statement on :attr:`database` failed: busy means go on without the cache; anything
        else means a damaged database, which is replaced by an empty one."""
        self._failed(exc)

    @contextlib.contextmanager
    def transaction(self) -> Any:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` on :attr:`database` (rolled back on an error)."""
        with self._transaction() as db:
            yield db

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def infos(self, directory: str) -> dict[str, tuple[FileKey, SessionInfo | None]]:
        """Cached summaries of the files directly or indirectly below ``directory``, by path, each
        with the file version it describes (``None``: that version is not a session)."""
        if self._db is None:
            return {}
        prefix = directory.rstrip(os.sep) + os.sep
        try:
            rows = self._db.execute(
                "SELECT path, size, mtime_ns, ctime_ns, ino, info FROM infos WHERE path >= ? AND path < ?",
                (prefix, prefix + "\U0010ffff"),
            ).fetchall()
        except sqlite3.Error as exc:
            self._failed(exc)
            return {}
        found: dict[str, tuple[FileKey, SessionInfo | None]] = {}
        make_key = tuple.__new__  # (FileKey's own __new__ is Python code; this runs per row)
        for path, size, mtime_ns, ctime_ns, ino, blob in rows:
            key = make_key(FileKey, (size, mtime_ns, ctime_ns, ino))
            try:
                info = self._decode_info(blob, path, key) if blob is not None else None
            except (orjson.JSONDecodeError, TypeError, KeyError, ValueError):
                continue  # unreadable row (another version wrote it): summarise the file again
            found[path] = (key, info)
        return found

    def _decode_info(self, blob: bytes, path: str, key: FileKey) -> SessionInfo:
        stored = orjson.loads(blob)
        if len(stored) != len(_STORED_FIELDS):  # the schema version makes the names right
            raise KeyError("fields")
        from_stamp, utc = datetime.fromtimestamp, timezone.utc
        stored["modified"] = from_stamp(stored["modified"], utc)
        if (created := stored["created"]) is not None:
            stored["created"] = from_stamp(created, utc)
        if (last_activity := stored["last_activity"]) is not None:
            stored["last_activity"] = from_stamp(last_activity, utc)
        return SessionInfo.from_cache(stored, lambda: self.text(path, key))

    def text(self, path: str, key: FileKey) -> str:
        """The ``all_messages_text`` of this version of ``path``: from the cache, else (first use, or
        the file changed since it was listed) from the file as it is now, then cached; ``""`` when
        it cannot be read."""
        if self._db is not None or self.path == Path(":memory:"):
            return self._text(path, key)
        # Asked after the cache was closed (a summary outlives its listing): the database is
        # opened for this one text and closed again, never left open behind the caller's back.
        with contextlib.suppress(sqlite3.Error, OSError):
            self._db = self._connect()
        try:
            return self._text(path, key)
        finally:
            self.close()

    def _text(self, path: str, key: FileKey) -> str:
        if self._db is not None:
            try:
                row = self._db.execute(
                    "SELECT text FROM texts WHERE path = ? AND size = ? AND mtime_ns = ? AND ctime_ns = ?"
                    " AND ino = ?",
                    (path, *key),
                ).fetchone()
            except sqlite3.Error:
                row = None
            if row is not None and isinstance(row[0], str):
                return row[0]
        if key.ino == -1:  # a database row (stored with its text): no file to read
            return ""
        read = read_file(path)
        if read is None:
            return ""
        data, stat = read
        info = summarize_bytes(path, data, stat.st_mtime, stat.st_size)
        text = info.all_messages_text if info is not None else ""
        self._store_texts([(path, *FileKey.of(stat), text)])
        return text

    def store_infos(self, items: Iterable[tuple[FileKey, SessionInfo | None, str]]) -> None:
        """Insert or replace summaries (one transaction; skipped if the database is busy). The
        texts of files are not written: most listings never use them, and :meth:`text` reads one
        from its file on first use; those of database rows (inode -1) are."""
        rows, texts = [], []
        for key, info, path in items:
            try:
                path.encode()  # SQLite text is strict UTF-8 too
                rows.append((path, *key, _encode_info(info) if info is not None else None))
                if key.ino == -1 and info is not None:
                    info.all_messages_text.encode()
                    texts.append((path, *key, info.all_messages_text))
            except (UnicodeEncodeError, orjson.JSONEncodeError):
                # A lone surrogate (in a name, or JSON text omp wrote, issue 11 item 5) cannot be
                # stored as UTF-8: that file is simply read afresh each time.
                continue
        if self._db is None or not rows:
            return
        try:
            with self._transaction() as db:
                db.executemany("INSERT OR REPLACE INTO infos VALUES (?,?,?,?,?,?)", rows)
                db.executemany("INSERT OR REPLACE INTO texts VALUES (?,?,?,?,?,?)", texts)
        except sqlite3.Error as exc:
            self._failed(exc)

    def _store_texts(self, texts: list[tuple[str, int, int, int, int, str]]) -> None:
        try:
            for text in texts:
                text[-1].encode()  # (a lone surrogate: not cached, read again next time)
        except UnicodeEncodeError:
            return
        if self._db is None:
            return
        # Best effort: a text read on use may race with a listing on another thread (the viewer's
        # in-memory cache); one not written is read from its file again next time.
        with contextlib.suppress(sqlite3.Error), self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO texts VALUES (?,?,?,?,?,?)", texts)

    def _failed(self, exc: sqlite3.Error) -> None:
        # Busy or locked (another process writes): go on without the cache this time. Anything
        # else means a damaged database: replace it.
        if not isinstance(exc, sqlite3.OperationalError):
            self.close()
            self._db = self._replace_damaged()

    @contextlib.contextmanager
    def _transaction(self) -> Any:
        assert self._db is not None
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


_DATES = ("created", "modified", "last_activity")
#: What an info row holds: every field but the text (kept in ``texts``).
_STORED_FIELDS = frozenset(field.name for field in fields(SessionInfo)) - {"all_messages_text"}


def _encode_info(info: SessionInfo) -> bytes:
    stored = {name: getattr(info, name) for name in _STORED_FIELDS}
    for name in _DATES:
        moment = stored[name]
        stored[name] = moment.timestamp() if moment is not None else None
    return orjson.dumps(stored)
