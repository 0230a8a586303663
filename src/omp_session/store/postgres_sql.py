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
from dataclasses import dataclass

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


__all__ = [
    "DEFAULT_TABLE",
    "LOCK_HOLDER",
    "TRY_LOCK",
    "UNLOCK",
    "UNLOCK_ALL",
    "Statements",
    "advisory_key",
    "validate_table",
]
