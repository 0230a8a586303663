"""The store as three tables for analysts, through DuckDB (issue 27 item 7; extra ``[analytics]``).

* ``sessions``: one row per session (id, file, project, title, created, parent);
* ``entries``: one row per entry of every branch (session, id, parent, type, role, time, model,
  provider, the tools it called);
* ``usage``: one row per usage record, the facts every usage report counts
  (:mod:`omp_session.tools.usage_records`: copies a fork made counted once), with the model's
  merged name and the cost as the reports give it (recorded, else estimated and marked so).

:func:`export_store` writes them as Parquet files (``sessions.parquet`` ...); :func:`run_sql` runs
a query over them, from such a directory or from the store itself (read through the catalog, as
every store-wide report is). Nothing here writes a session.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omp_session.format.ids import iso_to_ms
from omp_session.store import SessionStorage
from omp_session.tools.catalog import Catalog
from omp_session.tools.pricing import default_prices
from omp_session.tools.store_reads import read_sessions
from omp_session.tools.usage_records import facts_of, oldest_first, records_of_facts
from omp_session.tools.usage_report import model_name, priced

if TYPE_CHECKING:
    import duckdb

__all__ = ["TABLES", "QueryResult", "StoreTables", "export_store", "run_sql", "store_tables"]

#: The tables, and their columns as DuckDB types (the Parquet files keep these).
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "sessions": (
        ("session_id", "VARCHAR"),
        ("path", "VARCHAR"),
        ("project", "VARCHAR"),
        ("title", "VARCHAR"),
        ("created", "TIMESTAMPTZ"),
        ("parent_session", "VARCHAR"),
        ("entries", "BIGINT"),
    ),
    "entries": (
        ("session_id", "VARCHAR"),
        ("entry_id", "VARCHAR"),
        ("parent_id", "VARCHAR"),
        ("type", "VARCHAR"),
        ("role", "VARCHAR"),
        ("timestamp", "TIMESTAMPTZ"),
        ("model", "VARCHAR"),
        ("provider", "VARCHAR"),
        ("tools", "VARCHAR[]"),
    ),
    "usage": (
        ("session_id", "VARCHAR"),
        ("project", "VARCHAR"),
        ("timestamp", "TIMESTAMPTZ"),
        ("model", "VARCHAR"),
        ("model_name", "VARCHAR"),
        ("provider", "VARCHAR"),
        ("input", "DOUBLE"),
        ("output", "DOUBLE"),
        ("cache_read", "DOUBLE"),
        ("cache_write", "DOUBLE"),
        ("cost", "DOUBLE"),
        ("cost_estimated", "BOOLEAN"),
        ("unpriced", "BOOLEAN"),
    ),
}


@dataclass
class StoreTables:
    """The rows of each table (tuples in :data:`TABLES`' column order) and the files skipped."""

    rows: dict[str, list[tuple[Any, ...]]]
    skipped: list[tuple[str, str]]


def _time(value: Any) -> datetime | None:
    ms = iso_to_ms(value) if isinstance(value, str) else None
    return datetime.fromtimestamp(ms / 1000, timezone.utc) if ms is not None else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _entry_row(session_id: str, entry: dict[str, Any]) -> tuple[Any, ...]:
    message = entry.get("message")
    message = message if isinstance(message, dict) else {}
    content = message.get("content")
    tools = (
        [
            block["name"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "toolCall"
            and isinstance(block.get("name"), str)
        ]
        if isinstance(content, list)
        else []
    )
    tool_name = message.get("toolName")
    if isinstance(tool_name, str) and not tools:
        tools = [tool_name]  # a tool result names the tool it answers
    return (
        session_id,
        _text(entry.get("id")),
        _text(entry.get("parentId")),
        _text(entry.get("type")),
        _text(message.get("role")),
        _time(entry.get("timestamp")),
        _text(message.get("model")),
        _text(message.get("provider")),
        tools,
    )


def store_tables(
    paths: Iterable[Path | str], *, catalog: Catalog | None = None, storage: SessionStorage | None = None
) -> StoreTables:
    """The three tables of the sessions at ``paths`` (files, else rows of ``storage``; read through
    the store catalog)."""
    wanted = [Path(path) for path in paths]
    used = catalog if catalog is not None else Catalog(storage=storage)
    try:
        skipped: list[tuple[str, str]] = []
        loaded = read_sessions(wanted, skipped, used, storage=used.store)
    finally:
        if catalog is None:
            used.close()
    # The usage rows from the sessions just read (read once), as collect_records counts them.
    records, _copies = records_of_facts(oldest_first([facts_of(item, item.title) for item in loaded]))
    sessions: list[tuple[Any, ...]] = []
    entries: list[tuple[Any, ...]] = []
    for session in loaded:
        header = session.header
        session_id = str(header.get("id"))
        cwd = header.get("cwd")
        sessions.append(
            (
                session_id,
                os.fspath(session.path),
                cwd if isinstance(cwd, str) else None,
                session.title,
                _time(header.get("timestamp")),
                _text(header.get("parentSession")),
                len(session.entries),
            )
        )
        entries.extend(_entry_row(session_id, entry) for entry in session.entries)
    prices = default_prices()
    usage = []
    for record in records:
        cost, estimated, unpriced = priced(record, prices)
        stamp = record.timestamp_ms
        usage.append(
            (
                record.session_id,
                record.project,
                datetime.fromtimestamp(stamp / 1000, timezone.utc) if stamp is not None else None,
                record.model,
                model_name(record),
                record.provider,
                record.input,
                record.output,
                record.cache_read,
                record.cache_write,
                cost,
                estimated,
                unpriced,
            )
        )
    return StoreTables({"sessions": sessions, "entries": entries, "usage": usage}, skipped)


def _connect() -> duckdb.DuckDBPyConnection:
    import duckdb

    return duckdb.connect(":memory:")


def _load(connection: duckdb.DuckDBPyConnection, tables: StoreTables) -> None:
    for name, columns in TABLES.items():
        definition = ", ".join(f'"{column}" {kind}' for column, kind in columns)
        connection.execute(f'CREATE TABLE "{name}" ({definition})')
        rows = tables.rows[name]
        if rows:
            marks = ", ".join("?" for _ in columns)
            connection.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)


def export_store(
    paths: Iterable[Path | str],
    out_dir: Path | str,
    *,
    catalog: Catalog | None = None,
    storage: SessionStorage | None = None,
) -> StoreTables:
    """Write ``sessions.parquet``, ``entries.parquet`` and ``usage.parquet`` of the sessions at
    ``paths`` (files, else rows of ``storage``) into ``out_dir`` (created if needed; each file
    written to a temporary name, then renamed into place)."""
    tables = store_tables(paths, catalog=catalog, storage=storage)
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    connection = _connect()
    try:
        _load(connection, tables)
        for name in TABLES:
            final = target / f"{name}.parquet"
            temporary = target / f".{name}.parquet.tmp"
            connection.execute(f"COPY \"{name}\" TO '{_quoted(temporary)}' (FORMAT parquet)")
            os.replace(temporary, final)
    finally:
        connection.close()
    return tables


def _quoted(path: Path) -> str:
    return os.fspath(path).replace("'", "''")


@dataclass
class QueryResult:
    """The column names and rows of a query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


def run_sql(
    query: str,
    *,
    parquet_dir: Path | str | None = None,
    paths: Sequence[Path | str] = (),
    storage: SessionStorage | None = None,
) -> QueryResult:
    """Run ``query`` over the tables: views of the Parquet files in ``parquet_dir`` when given,
    else the tables of the sessions at ``paths`` (files, else rows of ``storage``; read now).
    Raises ``duckdb.Error`` for a bad query (the command line prints its message)."""
    connection = _connect()
    try:
        if parquet_dir is not None:
            for name in TABLES:
                file = Path(parquet_dir) / f"{name}.parquet"
                if not file.is_file():
                    raise FileNotFoundError(
                        f"{file}: no such table file (omp-session export-store --parquet)"
                    )
                connection.execute(f"CREATE VIEW \"{name}\" AS SELECT * FROM read_parquet('{_quoted(file)}')")
        else:
            _load(connection, store_tables(paths, storage=storage))
        cursor = connection.execute(query)
        columns = [column[0] for column in cursor.description or ()]
        return QueryResult(columns, [tuple(row) for row in cursor.fetchall()])
    finally:
        connection.close()
