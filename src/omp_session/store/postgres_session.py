"""One session in PostgreSQL: the :class:`~omp_session.store.Storage` of a row of omp's table.

One writer per session, on any number of machines (``docs/postgres.md``):

* a writer holds a session-level advisory lock keyed by the path, on a connection of its own, for
  as long as the session is open (a second writer gets ``SessionLockedError``; the server drops
  the lock when the writer's process or connection dies);
* every append and rewrite is also conditional on the stored size being the one this writer last
  saw, so a writer that lost its lock with its connection, or an omp process that takes no lock,
  can never be overwritten silently: ``SessionChangedError`` instead.

Every write is one committed statement (autocommit, ``synchronous_commit`` on): when ``append``
returns, the lines are in the database. When the connection drops during a write, the outcome is
unknown; the writer reconnects, takes its lock again and looks: the write either landed (it is
acknowledged), or the row is as it was (the write is retried once), or someone else changed it
(``SessionChangedError``).

Internal module (the per-session half of :class:`~omp_session.store.postgres.PostgresStorage`);
not part of the public API.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omp_session.errors import (
    PersistenceError,
    ReadOnlySessionError,
    SessionChangedError,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
)
from omp_session.format.title_slot import SLOT_BYTES, parse_slot_line, split_slot
from omp_session.store import EncodesEveryLine
from omp_session.store.blobs import BlobSink
from omp_session.store.postgres_sql import (
    LOCK_HOLDER,
    TRY_LOCK,
    UNLOCK,
    UNLOCK_ALL,
    Row,
    SessionRows,
    advisory_key,
    connection_lost,
    stored_content,
    title_columns,
)

if TYPE_CHECKING:
    import psycopg


class PostgresSessionStorage(EncodesEveryLine):
    """The row ``path`` of a :class:`PostgresStorage`. One manager owns it; not thread-safe."""

    def __init__(
        self,
        store: SessionRows,
        path: Path | str,
        blobs: BlobSink,
        *,
        read_only: bool = False,
        known_size: int | None = None,
    ) -> None:
        self.path: Path | None = Path(path)
        self.blobs = blobs
        self.read_only = read_only
        self._store = store
        self._key = os.fspath(path)
        self._connection: psycopg.Connection[Row] | None = None
        self._locked = False
        #: The stored size as this writer last saw or made it (``None``: there is no row).
        self._known: int | None = known_size
        #: The ``mtime_ms`` a whole write stores (push: the file's own); ``None``: now.
        self.mtime_ms: int | None = None
        #: Whether ``_known`` was learned under the lock (appends learn it before their first write).
        self._tail_checked = known_size is not None
        self._read_size: int | None = None
        self._read_digest = ""
        #: Whether the stored content is known to end with a newline (or be empty).
        self._newline_known = False

    # -- reading -------------------------------------------------------------------------------

    def _row(self) -> Row | None:
        return self._store.run(lambda c: c.execute(self._store.sql.read, (self._key,)).fetchone())

    def exists(self) -> bool:
        return self._store.session_exists(Path(self._key))

    def read_if_exists(self) -> bytes | None:
        """The stored bytes (title columns laid over a slot), or ``None`` when there is no row."""
        row = self._row()
        if row is None:
            self._known = None
            return None
        data = stored_content(row)
        self._known = self._read_size = len(data)  # the overlay keeps the length
        self._read_digest = hashlib.md5(row[0].encode("utf-8"), usedforsecurity=False).hexdigest()
        # Read under our lock, the size is exact: the first append checks it, not re-learns it.
        self._tail_checked = self._locked
        self._newline_known = data.endswith(b"\n") or not data
        return data

    def read(self) -> bytes:
        data = self.read_if_exists()
        if data is None:
            raise SessionNotFoundError(self._key)
        return data

    def read_from(self, offset: int) -> bytes:
        if offset < 256:  # the title slot may be overlaid: read it as a whole
            return self.read()[offset:]
        query = self._store.sql.read_from
        row = self._store.run(lambda c: c.execute(query, (offset + 1, self._key)).fetchone())
        return bytes(row[0]) if row is not None else b""

    def replaced_since_read(self) -> bool:
        """Whether the bytes read last are no longer the start of the row (a rewrite by the writer,
        even one that made it longer): compared by a digest the server computes."""
        if self._read_size is None:
            return True
        values = (self._read_size, self._key)
        row = self._store.run(lambda c: c.execute(self._store.sql.prefix_digest, values).fetchone())
        return row is None or int(row[0]) < self._read_size or row[1] != self._read_digest

    def _stored_size(self) -> int | None:
        row = self._store.run(lambda c: c.execute(self._store.sql.size, (self._key,)).fetchone())
        return int(row[0]) if row is not None else None

    # -- the writer's connection and lock ------------------------------------------------------

    def lock(self) -> None:
        """Take the session's advisory lock (``SessionLockedError`` when another writer has it)."""
        self._ensure_writable()
        self._writer()

    def _writer(self) -> psycopg.Connection[Row]:
        """The writer's own connection, holding the lock; a lost one is replaced and the lock is
        taken again, and the stored size must still be the one we know (else nothing is safe)."""
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        relocking = self._locked
        self._locked = False
        connection = self._store.connect()
        try:
            key = advisory_key(self._store.table, self._key)
            granted = connection.execute(TRY_LOCK, (key,)).fetchone()
            if granted is None or not granted[0]:
                raise SessionLockedError(self._key, _holder_pid(connection, key))
            if relocking and self._tail_checked:
                self._expect_size(connection, self._known)
        except BaseException as exc:
            connection.close()
            if isinstance(exc, Exception) and connection_lost(exc):
                raise PersistenceError(self._key, exc) from exc
            raise
        self._connection, self._locked = connection, True
        return connection

    def _expect_size(self, connection: psycopg.Connection[Row], expected: int | None) -> None:
        row = connection.execute(self._store.sql.size, (self._key,)).fetchone()
        actual = int(row[0]) if row is not None else None
        if actual != expected:
            raise SessionChangedError(self._key, _change(expected, actual))

    def _drop_connection(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            with contextlib.suppress(Exception):  # already broken: nothing to release
                connection.close()

    def _ensure_writable(self) -> None:
        if self.read_only:
            raise ReadOnlySessionError(self._key)

    # -- writing -------------------------------------------------------------------------------

    def _write(self, attempt: Callable[[psycopg.Connection[Row]], None], landed: Callable[[], bool]) -> None:
        """Run ``attempt`` on the writer's connection. If the connection is lost, reconnect: if
        ``landed()`` the write committed before the loss; otherwise retry it once."""
        self._ensure_writable()
        try:
            attempt(self._writer())
            return
        except SessionError:
            raise
        except Exception as exc:
            if not connection_lost(exc):
                raise PersistenceError(self._key, exc) from exc
            self._drop_connection()
            first = exc
        try:
            connection = self._writer_after_loss()
            if landed():
                return
            attempt(connection)
        except SessionError:
            raise
        except Exception as exc:
            self._drop_connection()
            raise PersistenceError(self._key, exc) from first

    def _writer_after_loss(self) -> psycopg.Connection[Row]:
        # The lost write may or may not have committed: take the lock again without the size check
        # (``landed`` decides), the caller's attempt re-checks the size itself.
        checked, self._tail_checked = self._tail_checked, False
        try:
            return self._writer()
        finally:
            self._tail_checked = checked

    def append(self, data: bytes) -> None:
        text = _text(self._key, data)
        if not self._tail_checked:
            self._learn_size()
        known = self._known
        if known is None:
            self._insert(text, data)
            return
        if known > 0 and not self._ends_with_newline():
            # A torn last line (written by a crashed writer) is never glued to our entry.
            data = b"\n" + data
            text = "\n" + text

        def attempt(connection: psycopg.Connection[Row]) -> None:
            values = (text, self._store.clock.now_ms(), self._key, known)
            if connection.execute(self._store.sql.append_if_size, values).fetchone() is None:
                raise SessionChangedError(self._key, _change(known, self._stored_size()))

        self._write(attempt, lambda: self._tail_is(known, data))
        self._known = known + len(data)
        self._newline_known = True

    def _ends_with_newline(self) -> bool:
        if self._newline_known:
            return True
        row = self._store.run(lambda c: c.execute(self._store.sql.tail_byte, (self._key,)).fetchone())
        self._newline_known = row is not None and row[0] == "\n"
        return self._newline_known

    def _learn_size(self) -> None:
        """Before the first append: the size of what is stored now, under the lock."""
        self._known = _size_on(self._writer(), self._store.sql.size, self._key)
        self._tail_checked = True
        self._newline_known = False

    def _tail_is(self, known: int, data: bytes) -> bool:
        query = self._store.sql.size_and_tail
        row = self._store.run(lambda c: c.execute(query, (known + 1, self._key)).fetchone())
        if row is None:
            return False
        if int(row[0]) == known:
            return False  # not landed: retry
        if int(row[0]) == known + len(data) and bytes(row[1]) == data:
            return True
        raise SessionChangedError(self._key, _change(known, int(row[0])))

    def _insert(self, text: str, data: bytes) -> None:
        title = title_columns(data)

        def attempt(connection: psycopg.Connection[Row]) -> None:
            values = (self._key, text, self._stamp(), *title)
            if connection.execute(self._store.sql.insert_if_missing, values).fetchone() is None:
                raise SessionChangedError(self._key, "a session appeared at this path")

        self._write(attempt, lambda: self._holds(data))
        self._known, self._tail_checked = len(data), True
        self._newline_known = data.endswith(b"\n")

    def _holds(self, data: bytes) -> bool:
        row = self._row()
        if row is None:
            return False
        if stored_content(row) == data:
            return True
        raise SessionChangedError(self._key, "a session appeared at this path")

    def _stamp(self) -> int:
        return self.mtime_ms if self.mtime_ms is not None else self._store.clock.now_ms()

    def rewrite(self, chunks: Iterable[bytes], *, backup_suffix: str | None = None) -> None:
        data = b"".join(chunks)
        text = _text(self._key, data)
        known = self._known
        if known is None:
            self._insert(text, data)
            return
        title = title_columns(data)

        def attempt(connection: psycopg.Connection[Row]) -> None:
            with connection.transaction():
                if backup_suffix is not None:
                    self._copy_to_backup(connection, backup_suffix)
                values = (text, self._stamp(), *title, self._key, known)
                if connection.execute(self._store.sql.replace_if_size, values).fetchone() is None:
                    actual = _size_on(connection, self._store.sql.size, self._key)
                    raise SessionChangedError(self._key, _change(known, actual))

        def landed() -> bool:
            row = self._row()
            if row is not None and stored_content(row) == data:
                return True
            if (len(row[0].encode()) if row is not None else None) == known:
                return False
            raise SessionChangedError(self._key, "changed while the connection was lost")

        self._write(attempt, landed)
        self._known, self._tail_checked = len(data), True
        self._newline_known = data.endswith(b"\n")

    def _copy_to_backup(self, connection: psycopg.Connection[Row], suffix: str) -> None:
        """Keep the old row as ``<path><suffix>`` (``.1``, ``.2``, ... when taken), like files."""
        for counter in range(1000):
            target = self._key + suffix + (f".{counter}" if counter else "")
            values = (target, self._key)
            if connection.execute(self._store.sql.copy_row, values).fetchone() is not None:
                return
        raise PersistenceError(self._key, FileExistsError("no free backup name"))

    def overwrite_title_slot(self, slot_line: bytes) -> None:
        """A rename of an omp 18 session: set the title columns from ``slot_line`` and leave the
        body alone, as omp's ``updateSessionTitle`` does (reads lay the columns over the body's
        slot). Refuses, as files do, unless the row is the size we know and starts with a slot."""
        slot = parse_slot_line(slot_line.removesuffix(b"\n"))
        if slot is None or len(slot_line) != SLOT_BYTES:
            raise ValueError("not a 256-byte title slot line")
        known = self._known
        statements = self._store.sql

        def attempt(connection: psycopg.Connection[Row]) -> None:
            with connection.transaction():
                row = connection.execute(statements.head_for_update, (SLOT_BYTES, self._key)).fetchone()
                size = int(row[0]) if row is not None else None
                if size != known:
                    raise SessionChangedError(self._key, _change(known, size))
                assert row is not None
                head = bytes(row[1])
                if split_slot(head)[1] != SLOT_BYTES:
                    raise SessionChangedError(
                        self._key, "the first line is not a title slot of the same size"
                    )
                values = (slot.title, slot.source, slot.updated_at, self._store.clock.now_ms(), self._key)
                connection.execute(statements.update_title, values)

        self._write(attempt, lambda: False)  # setting the same columns again is harmless

    def sibling(self, path: Path | None) -> PostgresSessionStorage:
        if path is None:
            raise ValueError("PostgreSQL storage needs a path")
        return PostgresSessionStorage(self._store, path, self.blobs)

    def move(self, target: Path) -> None:
        """Give the row the path ``target``; its lock moves with it."""
        self._ensure_writable()
        new_key = os.fspath(target)
        connection = self._writer()
        if self._store.session_exists(target):
            raise PersistenceError(target, FileExistsError(f"{target} already exists"))
        new_lock = advisory_key(self._store.table, new_key)
        old_lock = advisory_key(self._store.table, self._key)
        granted = connection.execute(TRY_LOCK, (new_lock,)).fetchone()
        if granted is None or not granted[0]:
            raise SessionLockedError(target, _holder_pid(connection, new_lock))
        try:
            if self._known is not None:
                values = (new_key, self._store.clock.now_ms(), self._key)
                if connection.execute(self._store.sql.move, values).fetchone() is None:
                    raise SessionChangedError(self._key, "row was deleted")
        except BaseException:
            connection.execute(UNLOCK, (new_lock,))
            raise
        connection.execute(UNLOCK, (old_lock,))
        self._key, self.path = new_key, Path(target)

    def flush(self) -> None:
        return None  # every write was committed before it returned

    def close(self) -> None:
        """Release the lock, then close the writer's connection. The unlock is a statement the
        server has executed when it returns: a connection's close is not waited for, so another
        writer opening right after us could still find the lock held."""
        connection = self._connection
        if self._locked and connection is not None and not connection.closed:
            with contextlib.suppress(Exception):  # a broken connection has no lock left to release
                connection.execute(UNLOCK_ALL)
        self._locked = False
        self._drop_connection()


def _text(key: str, data: bytes) -> str:
    """``data`` as the text PostgreSQL stores: UTF-8 without NUL (a TEXT column cannot hold
    anything else, and omp stores the same strings)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PersistenceError(key, ValueError(f"not UTF-8, cannot be stored in PostgreSQL: {exc}")) from None
    if "\x00" in text:
        raise PersistenceError(key, ValueError("a NUL byte cannot be stored in PostgreSQL text"))
    return text


def _size_on(connection: psycopg.Connection[Row], query: str, key: str) -> int | None:
    row = connection.execute(query, (key,)).fetchone()
    return int(row[0]) if row is not None else None


def _change(expected: int | None, actual: int | None) -> str:
    if actual is None:
        return "row was deleted"
    if expected is None:
        return "a session appeared at this path"
    return f"size {expected} → {actual}"


def _holder_pid(connection: psycopg.Connection[Row], key: int) -> int | None:
    """The client process id the lock holder put in its application name (any host)."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    values: Any = (unsigned >> 32, unsigned & 0xFFFFFFFF)
    try:
        row = connection.execute(LOCK_HOLDER, values).fetchone()
    except Exception:
        return None
    found = re.search(r"pid (\d+)", row[0]) if row is not None and row[0] else None
    return int(found.group(1)) if found else None


__all__ = ["PostgresSessionStorage"]
