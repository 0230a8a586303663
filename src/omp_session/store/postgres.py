"""A store of sessions in PostgreSQL that omp 18 can share (``docs/postgres.md``).

``PostgresStorage(dsn, table="omp_session_files")`` keeps each session file as one row of omp's
``SqlSessionStorage`` table: ``path`` (the session file's path string), ``content`` (the file's
bytes, UTF-8 text), ``mtime_ms``, and the title columns. A row holds exactly the bytes the file
would hold (after the title columns are laid over an omp 18 title slot, as omp reads it).

Needs the ``postgres`` extra (``pip install 'omp-session[postgres]'``, psycopg 3).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, TypeVar

from omp_session.errors import (
    CorruptSessionError,
    PersistenceError,
    SessionError,
    SessionNotFoundError,
    StoreReadError,
)
from omp_session.format.entries import is_assistant_line
from omp_session.format.header import is_blank, is_slot_only
from omp_session.format.title_slot import TitleSlot
from omp_session.format.transform import KeepReplay, drop_replay
from omp_session.store import DurabilityPolicy, OpenedFile, StoredSession
from omp_session.store.blobs import BlobSink, MemoryBlobStore
from omp_session.store.loading import parse_session
from omp_session.store.postgres_sql import (
    DEFAULT_TABLE,
    Clock,
    Row,
    Statements,
    _psycopg,
    connection_lost,
    stored_content,
    title_columns,
)

if TYPE_CHECKING:
    import psycopg

    from omp_session.store.postgres_session import PostgresSessionStorage

T = TypeVar("T")
#: What a statement does, for the error a failure raises (``PersistenceError`` or ``StoreReadError``).
Operation = Literal["read", "write"]


def _one_line(exc: BaseException) -> str:
    """A driver error as one line (libpq's messages span several)."""
    return " ".join(str(exc).split())


class PostgresStorage:
    """Sessions as rows of ``table`` in the PostgreSQL database at ``dsn`` (a libpq connection
    string or ``postgresql://`` URL), connected at once. The table is created if missing, as omp does; pass
    ``create_table=False`` when it is owned by a migration, or when only reading: then nothing is
    created or altered, and a missing table raises :class:`StoreReadError` ("no table ...").
    Thread-safe; use ``close()`` (or ``with``) to release the store's connection. Each writing
    session holds its own connection for its advisory lock (``PostgresSessionStorage``).

    Failures name the store by its URL without the password; a failed read raises
    :class:`StoreReadError`, a failed write :class:`PersistenceError`."""

    def __init__(self, dsn: str, table: str = DEFAULT_TABLE, *, create_table: bool = True) -> None:
        self.dsn = dsn
        self.sql = Statements.for_table(table)
        self.table = table
        self.clock = Clock()
        self._create_table = create_table
        self._connection: psycopg.Connection[Row] | None = None
        self._lock = threading.RLock()
        self._ready = False
        # Connect (and create the table) now, as omp's create() does.
        self.run(lambda connection: None, "write" if create_table else "read")

    # -- connections ---------------------------------------------------------------------------

    def failure(self, operation: Operation, cause: BaseException | str) -> SessionError:
        """The error for a failed ``operation`` on this store."""
        if operation == "write":
            error = cause if isinstance(cause, BaseException) else OSError(cause)
            return PersistenceError(self.describe(), error)
        return StoreReadError(self.describe(), cause)

    def connect(self, operation: Operation = "write") -> psycopg.Connection[Row]:
        """A new autocommit connection: every statement is committed before it returns, and
        ``synchronous_commit`` is on, so a commit is on the server's disk when acknowledged.
        ``operation``: what it is for, which decides the error a failure raises."""
        pg = _psycopg()
        try:
            connection: psycopg.Connection[Row] = pg.connect(
                self.dsn,
                autocommit=True,
                client_encoding="UTF8",
                application_name=f"omp-session pid {os.getpid()} on {socket.gethostname()}"[:63],
                connect_timeout=10,
            )
        except pg.Error as exc:
            raise self.failure(operation, _one_line(exc)) from exc
        try:
            connection.execute("SET synchronous_commit TO on")
            self._prepare(connection)
        except BaseException as exc:
            connection.close()
            if isinstance(exc, pg.Error):
                raise self.failure(operation, _one_line(exc)) from exc
            raise
        return connection

    def _prepare(self, connection: psycopg.Connection[Row]) -> None:
        if self._ready:
            return
        encoding = connection.execute("SHOW server_encoding").fetchone()
        if encoding is None or encoding[0] != "UTF8":
            raise PersistenceError(
                self.describe(), ValueError(f"the database encoding must be UTF8, not {encoding}")
            )
        if self._create_table:
            connection.execute(self.sql.create_table)
            for statement in self.sql.add_title_columns:
                connection.execute(statement)
        else:  # a reader creates nothing (issue 25: `--table nope list` made table nope)
            found = connection.execute("SELECT to_regclass(%s)", (self.table,)).fetchone()
            if found is None or found[0] is None:
                raise StoreReadError(
                    self.describe(),
                    f"no table {self.table} (a command that only reads never creates one; push does)",
                )
        self._ready = True

    def run(self, action: Callable[[psycopg.Connection[Row]], T], operation: Operation = "read") -> T:
        """``action`` on the store's shared connection; a lost connection is replaced and the
        action retried once (only read-only or idempotent actions go through here)."""
        with self._lock:
            for attempt in (1, 2):
                connection = self._connection
                if connection is None or connection.closed:
                    connection = self._connection = self.connect(operation)
                try:
                    return action(connection)
                except Exception as exc:
                    if not connection_lost(exc):
                        raise
                    self._connection = None
                    connection.close()
                    if attempt == 2:
                        raise self.failure(operation, _one_line(exc)) from exc
            raise AssertionError("unreachable")

    def describe(self) -> str:
        """The database's URL without the password, and the table (for error messages):
        ``postgresql://user@host:port/db#table``."""
        pg = _psycopg()
        try:
            info = pg.conninfo.conninfo_to_dict(self.dsn)
        except pg.ProgrammingError:
            return f"postgresql:#{self.table}"
        host = info.get("host") or "localhost"
        user = f"{info['user']}@" if info.get("user") else ""
        database = info.get("dbname") or ""
        return f"postgresql://{user}{host}:{info.get('port') or 5432}/{database}#{self.table}"

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> PostgresStorage:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PostgresStorage {self.describe()}>"

    # -- the SessionStorage protocol -----------------------------------------------------------

    def new_storage(
        self, path: Path, blobs: BlobSink, *, durability: DurabilityPolicy = "os"
    ) -> PostgresSessionStorage:
        """Storage for one session (``durability`` is moot: every write is a commit)."""
        from omp_session.store.postgres_session import PostgresSessionStorage

        return PostgresSessionStorage(self, path, blobs)

    def open_session(
        self,
        path: Path,
        blobs: BlobSink,
        *,
        read_only: bool,
        durability: DurabilityPolicy = "os",
        use_index: bool = True,
        keep_replay: KeepReplay = drop_replay,
    ) -> OpenedFile:
        """Lock (unless ``read_only``), then read the row: nobody can append in between. A missing
        or blank row gives ``loaded=None`` (read-only: an error), as for files."""
        from omp_session.store.postgres_session import PostgresSessionStorage

        storage = PostgresSessionStorage(self, path, blobs, read_only=read_only)
        try:
            if not read_only:
                storage.lock()
            data = storage.read_if_exists()
            if data is None or is_blank(data) or (len(data) < 65536 and is_slot_only(data)):
                # omp 18 starts afresh on a slot-only file too, as for files (opening.py).
                if read_only:
                    raise SessionNotFoundError(path) if data is None else CorruptSessionError(path, "empty")
                return OpenedFile(path, storage)
            loaded = parse_session(path, data, blobs, keep_replay)
        except BaseException:
            storage.close()
            raise
        return OpenedFile(path, storage, loaded, data.rfind(b"\n") + 1)

    def read_session(self, path: Path) -> bytes:
        row = self.run(lambda c: c.execute(self.sql.read, (os.fspath(path),)).fetchone())
        if row is None:
            raise SessionNotFoundError(path)
        return stored_content(row)

    def session_exists(self, path: Path) -> bool:
        return self.run(lambda c: c.execute(self.sql.exists, (os.fspath(path),)).fetchone()) is not None

    def stat_session(self, path: Path) -> StoredSession | None:
        row = self.run(lambda c: c.execute(self.sql.stat, (os.fspath(path),)).fetchone())
        return StoredSession(path, int(row[0]), int(row[1]) / 1000) if row is not None else None

    def read_head(self, path: Path, limit: int) -> bytes:
        row = self.run(lambda c: c.execute(self.sql.head, (limit, os.fspath(path))).fetchone())
        return bytes(row[0]) if row is not None else b""

    def list_sessions(self, directory: Path) -> list[StoredSession]:
        prefix = os.fspath(directory).rstrip("/") + "/"
        return [
            StoredSession(Path(path), size, mtime_ms / 1000)
            for path, size, mtime_ms in self._rows_under(prefix)
            if "/" not in path[len(prefix) :]
        ]

    def list_directories(self, root: Path) -> list[Path]:
        prefix = os.fspath(root).rstrip("/") + "/"
        names = {path[len(prefix) :].split("/", 1)[0] for path, _, _ in self._rows_under(prefix)}
        return sorted(Path(prefix + name) for name in names if not name.endswith(".jsonl"))

    def _rows_under(self, prefix: str) -> list[Row]:
        return self.run(lambda c: c.execute(self.sql.list_under, (prefix,)).fetchall())

    # -- whole rows (push, pull, titles) -------------------------------------------------------

    def all_sessions(self) -> list[StoredSession]:
        """Every ``*.jsonl`` row of the table."""
        return [StoredSession(Path(p), s, m / 1000) for p, s, m in self._rows_under("")]

    def write_session(
        self, path: Path, data: bytes, *, expected_size: int | None, mtime_ms: int | None = None
    ) -> None:
        """Store ``data`` at ``path`` in one statement, only if the stored size is ``expected_size``
        (``None``: only if there is no row). ``SessionChangedError`` otherwise. ``mtime_ms``: the
        row's modified time (push gives the file's own; default now)."""
        from omp_session.store.postgres_session import PostgresSessionStorage

        storage = PostgresSessionStorage(self, path, MemoryBlobStore(), known_size=expected_size)
        storage.mtime_ms = mtime_ms
        try:
            storage.lock()
            storage.rewrite([data])
        finally:
            storage.close()

    def update_title(self, path: Path, slot: TitleSlot) -> None:
        """Set the title columns without rewriting the body (omp's ``updateSessionTitle``); the
        slot of the stored body is read with the new title laid over it."""
        values = (slot.title, slot.source, slot.updated_at, self.clock.now_ms(), os.fspath(path))
        if self.run(lambda c: c.execute(self.sql.update_title, values).fetchone(), "write") is None:
            raise SessionNotFoundError(path)

    def has_assistant_turn(self, path: Path) -> bool:
        """The full-line scan over the row's content (title columns laid over a slot)."""
        try:
            data = self.read_session(path)
        except SessionNotFoundError:
            return False
        return any(is_assistant_line(line.rstrip(b"\r")) for line in data.split(b"\n"))

    def delete_session(self, path: Path, *, backups: bool = False) -> None:
        """Delete the row (a database keeps no artifacts beside it and no ``.bak`` rows)."""
        self.run(lambda c: c.execute(self.sql.delete, (os.fspath(path),)), "write")


__all__ = ["PostgresStorage", "connection_lost", "stored_content", "title_columns"]
