"""The SQL of the PostgreSQL store: omp 18's ``omp_session_files`` table, statement for statement.

The table and its columns are those of omp 18.2.3's ``SqlSessionStorage`` for PostgreSQL
(``sql-session-storage.ts``), so omp and omp-session can share one table. Our appends and
rewrites add one condition omp's appends do not have: the stored size must be the one this writer
last saw (see ``docs/postgres.md``, "One writer per session").

Internal module (used by :class:`~omp_session.store.postgres.PostgresStorage`); not part of the
public API.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from omp_session.errors import SessionError
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, encode_slot, split_slot

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")
Row = tuple[Any, ...]

DEFAULT_TABLE = "omp_session_files"
#: omp inlines the table name into its statements and accepts only this shape (no quoting).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


TRY_LOCK = "SELECT pg_try_advisory_lock(%s)"
UNLOCK = "SELECT pg_advisory_unlock(%s)"
UNLOCK_ALL = "SELECT pg_advisory_unlock_all()"
#: The application name of the client holding an advisory lock (the key as two 32-bit halves).
LOCK_HOLDER = (
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s "
    "AND l.objid::bigint = %s AND l.objsubid = 1"
)


def validate_table(table: str) -> str:
    if not _IDENTIFIER.fullmatch(table):
        raise ValueError(f"table name must match {_IDENTIFIER.pattern} (got {table!r})")
    return table


def advisory_key(table: str, path: str) -> int:
    """The 64-bit advisory lock key of one session: a hash of table and path (signed, as
    ``pg_try_advisory_lock(bigint)`` takes it). A collision only makes a writer wait its turn."""
    digest = hashlib.sha256(f"omp-session\0{table}\0{path}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@dataclass(frozen=True)
class Statements:
    """Every statement, with the (validated) table name inlined."""

    create_table: str
    add_title_columns: tuple[str, ...]
    read: str
    size: str
    exists: str
    stat: str
    head: str
    tail_byte: str
    size_and_tail: str
    head_for_update: str
    prefix_digest: str
    read_from: str
    insert_if_missing: str
    append_if_size: str
    replace_if_size: str
    copy_row: str
    update_title: str
    move: str
    delete: str
    list_under: str

    @classmethod
    def for_table(cls, table: str) -> Statements:
        t = validate_table(table)
        return cls(
            # The DDL omp runs for PostgreSQL, and its migration for tables older than titles.
            create_table=(
                f"CREATE TABLE IF NOT EXISTS {t} (path TEXT PRIMARY KEY, content TEXT NOT NULL, "
                "mtime_ms BIGINT NOT NULL, title TEXT, title_source TEXT, title_updated_at TEXT)"
            ),
            add_title_columns=tuple(
                f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {column} TEXT"
                for column in ("title", "title_source", "title_updated_at")
            ),
            read=f"SELECT content, title, title_source, title_updated_at FROM {t} WHERE path = %s",
            # octet_length reads the stored size without de-TOASTing the value.
            size=f"SELECT octet_length(content) FROM {t} WHERE path = %s",
            exists=f"SELECT 1 FROM {t} WHERE path = %s",
            stat=f"SELECT octet_length(content), mtime_ms FROM {t} WHERE path = %s",
            head=f"SELECT substring(convert_to(content, 'UTF8') from 1 for %s) FROM {t} WHERE path = %s",
            tail_byte=f"SELECT right(content, 1) FROM {t} WHERE path = %s",
            head_for_update=(
                "SELECT octet_length(content), substring(convert_to(content, 'UTF8') from 1 for %s) "
                f"FROM {t} WHERE path = %s FOR UPDATE"
            ),
            size_and_tail=(
                "SELECT octet_length(content), substring(convert_to(content, 'UTF8') from %s) "
                f"FROM {t} WHERE path = %s"
            ),
            prefix_digest=(
                "SELECT octet_length(content), "
                f"md5(substring(convert_to(content, 'UTF8') from 1 for %s)) FROM {t} WHERE path = %s"
            ),
            read_from=(f"SELECT substring(convert_to(content, 'UTF8') from %s) FROM {t} WHERE path = %s"),
            insert_if_missing=(
                f"INSERT INTO {t} (path, content, mtime_ms, title, title_source, title_updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (path) DO NOTHING RETURNING path"
            ),
            append_if_size=(
                f"UPDATE {t} SET content = content || %s, mtime_ms = %s "
                "WHERE path = %s AND octet_length(content) = %s RETURNING path"
            ),
            replace_if_size=(
                f"UPDATE {t} SET content = %s, mtime_ms = %s, title = %s, title_source = %s, "
                "title_updated_at = %s WHERE path = %s AND octet_length(content) = %s RETURNING path"
            ),
            copy_row=(
                f"INSERT INTO {t} (path, content, mtime_ms, title, title_source, title_updated_at) "
                f"SELECT %s, content, mtime_ms, title, title_source, title_updated_at FROM {t} "
                "WHERE path = %s ON CONFLICT (path) DO NOTHING RETURNING path"
            ),
            update_title=(
                f"UPDATE {t} SET title = %s, title_source = %s, title_updated_at = %s, mtime_ms = %s "
                "WHERE path = %s RETURNING path"
            ),
            move=f"UPDATE {t} SET path = %s, mtime_ms = %s WHERE path = %s RETURNING path",
            delete=f"DELETE FROM {t} WHERE path = %s",
            list_under=(
                f"SELECT path, octet_length(content), mtime_ms FROM {t} "
                "WHERE starts_with(path, %s) AND path LIKE '%%.jsonl'"
            ),
        )


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise SessionError("PostgreSQL storage needs psycopg 3: pip install 'omp-session[postgres]'") from exc
    return psycopg


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (the statement may or may not have committed)."""
    psycopg = _psycopg()
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


def stored_content(row: Row) -> bytes:
    """A row's content as the file's bytes: a newer title from the columns is laid over an omp 18
    title slot, as omp's indexed stores do on read (omp18-differences §1; omp overlays without
    checking, we only overlay a body that starts with a slot, so a 13.19 header is never hit)."""
    content: bytes = row[0].encode("utf-8")
    title, source, updated_at = row[1], row[2], row[3]
    slot, end = split_slot(content)
    if updated_at is None or slot is None or end != SLOT_BYTES:  # only over a full-size slot
        return content
    columns = TitleSlot(title or "", updated_at, source)
    if columns == slot:  # the body's own slot is current: keep its bytes (unknown keys included)
        return content
    return encode_slot(columns) + content[SLOT_BYTES:]


def title_columns(content: bytes) -> tuple[str | None, str | None, str | None]:
    """``title, title_source, title_updated_at`` for a full body, from its slot (as omp's
    ``writeFull`` derives them), or all ``None`` for a body without one."""
    slot, _end = split_slot(content)
    return (slot.title, slot.source, slot.updated_at) if slot is not None else (None, None, None)


class Clock:
    """Strictly increasing ``mtime_ms`` values (omp allocates them the same way)."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            self._last = max(time.time_ns() // 1_000_000, self._last + 1)
            return self._last


class SessionRows(Protocol):
    """What one session's storage (``postgres_session.py``) needs of the store that holds its row
    (``PostgresStorage``): its statements, table, clock and connections."""

    sql: Statements
    table: str
    clock: Clock

    def connect(self) -> psycopg.Connection[Row]:
        """A new autocommit connection of its own (a writer's, for its advisory lock)."""
        ...

    def run(self, action: Callable[[psycopg.Connection[Row]], T]) -> T:
        """``action`` on the store's shared connection (retried once on a lost connection)."""
        ...

    def session_exists(self, path: Path) -> bool: ...


__all__ = [
    "DEFAULT_TABLE",
    "LOCK_HOLDER",
    "TRY_LOCK",
    "UNLOCK",
    "UNLOCK_ALL",
    "Clock",
    "Row",
    "SessionRows",
    "Statements",
    "advisory_key",
    "connection_lost",
    "stored_content",
    "title_columns",
    "validate_table",
]
