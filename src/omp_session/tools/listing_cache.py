"""The on-disk metadata cache of session listings: ``<agent dir>/cache/session-list.sqlite3``.

One row per session file with what ``SessionInfo`` needs, keyed by the file's path and trusted only
while the file's size, mtime, ctime and inode are all unchanged (any write changes one of them).
The full message text, which can be large, lives in a second table read only when asked for.

It is only a cache: every failure (a locked, corrupt or unwritable database) makes the listing
compute from the files instead, and a corrupt database is replaced.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.format.codec import has_lone_surrogate
from omp_session.store.paths import agent_dir

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER,
    valid INTEGER, id TEXT, cwd TEXT, title TEXT, parent TEXT, created_ms REAL,
    first_message TEXT, message_count INTEGER
);
CREATE TABLE IF NOT EXISTS texts (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER, text TEXT
);
"""


class FileKey(NamedTuple):
    """What identifies one version of a file's content without reading it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileKey:
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


class Row(NamedTuple):
    """The cached summary of one file (``valid=False``: not a session, skip it)."""

    valid: bool
    id: str
    cwd: str
    title: str | None
    parent: str | None
    created_ms: float | None
    first_message: str
    message_count: int | None  # None: not counted yet


def cache_path() -> Path:
    return agent_dir() / "cache" / "session-list.sqlite3"


class ListingCache:
    """A connection to the cache; every method swallows database errors (then: no cache)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else cache_path()
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._connect()
        except (sqlite3.Error, OSError):
            self._db = self._replace_damaged()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=0.05, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=OFF")  # a cache: losing the last writes costs a re-read
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                db.executescript("DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS texts;" + _SCHEMA)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                with contextlib.suppress(sqlite3.Error):
                    db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        except BaseException:
            db.close()
            raise
        return db

    def _replace_damaged(self) -> sqlite3.Connection | None:
        # A file that is not a database (or a broken one): start a new cache, or go without.
        with contextlib.suppress(OSError):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        try:
            return self._connect()
        except (sqlite3.Error, OSError):
            return None

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def rows(self, directory: str) -> dict[str, tuple[Any, ...]]:
        """Cached rows of the files directly or indirectly below ``directory``, by path, as plain
        tuples ``(size, mtime_ns, ctime_ns, ino, valid, id, cwd, title, parent, created_ms,
        first_message, message_count)`` (cheap to fetch thousands of)."""
        if self._db is None:
            return {}
        prefix = directory.rstrip(os.sep) + os.sep
        try:
            cursor = self._db.execute(
                "SELECT path, size, mtime_ns, ctime_ns, ino, valid, id, cwd, title, parent, created_ms,"
                " first_message, message_count FROM sessions WHERE path >= ? AND path < ?",
                (prefix, prefix + "\U0010ffff"),
            )
            return {row[0]: row[1:] for row in cursor.fetchall()}
        except sqlite3.Error as exc:
            self._failed(exc)
            return {}

    def store(self, items: Iterable[tuple[str, FileKey, Row]]) -> None:
        """Insert or replace rows (one transaction; skipped if the database is busy)."""
        # SQLite stores strict UTF-8: a row holding a lone surrogate (issue 11 item 5) is not
        # cached, so the listing always shows it exactly as the file has it.
        rows = [
            (path, *key, *row)
            for path, key, row in items
            if not any(isinstance(value, str) and has_lone_surrogate(value) for value in (path, *row))
        ]
        if self._db is None or not rows:
            return
        try:
            with self._transaction() as db:
                db.executemany("INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        except sqlite3.Error as exc:
            self._failed(exc)

    def text(self, path: str, key: FileKey) -> str | None:
        """The cached full message text of ``path`` if it was stored for this very file version."""
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT text FROM texts"
                " WHERE path = ? AND size = ? AND mtime_ns = ? AND ctime_ns = ? AND ino = ?",
                (path, *key),
            ).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            return None
        return row[0] if row is not None else None

    def store_details(self, path: str, key: FileKey, message_count: int, text: str) -> None:
        """Remember the counted messages and the text of one file version."""
        if self._db is None or has_lone_surrogate(path) or has_lone_surrogate(text):
            return  # not storable as strict UTF-8: recomputed each time instead
        try:
            with self._transaction() as db:
                db.execute(
                    "UPDATE sessions SET message_count = ? WHERE path = ? AND size = ? AND mtime_ns = ?"
                    " AND ctime_ns = ? AND ino = ?",
                    (message_count, path, *key),
                )
                db.execute("INSERT OR REPLACE INTO texts VALUES (?,?,?,?,?,?)", (path, *key, text))
        except sqlite3.Error as exc:
            self._failed(exc)

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
