"""``python -m bench.postgres [--dsn URL] [--quick]``: the PostgreSQL store against a real server.

Measures append latency and throughput, and how the cost of one append grows with the size of the
session (omp's table keeps a session in one ``content`` value, so an append rewrites that value),
as ratios to floors measured in the same run on the same server: a round trip (``SELECT 1``) and
a committed one-row write. Without ``--dsn`` a throwaway server is started (``tests/pg_server.py``)
and removed at the end. Writes ``bench/POSTGRES.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from bench.measure import machine
from bench.report import Row, seconds, table
from omp_session import SessionManager
from omp_session.format.codec import encode_line
from omp_session.store.blobs import MemoryBlobStore
from omp_session.store.file import FileStorage
from omp_session.store.postgres import PostgresStorage

RESULTS = Path(__file__).resolve().parent / "POSTGRES.md"
SIZES = {"1 MB": 1_000_000, "10 MB": 10_000_000, "50 MB": 50_000_000}
TEXT = "The quick brown fox jumps over the lazy dog; " * 20  # ~900 bytes of message text


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _times(action: Callable[[], Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def _message(number: int) -> dict[str, Any]:
    return {"role": "user", "content": f"{number} {TEXT}", "timestamp": number}


def session_bytes(size: int) -> bytes:
    """A valid session of about ``size`` bytes: a header and a chain of ~1 KB user messages."""
    lines = [
        encode_line(
            {
                "type": "session",
                "version": 3,
                "id": "bench",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/b",
            }
        )
    ]
    total, parent, number = len(lines[0]), None, 0
    while total < size:
        entry_id = f"{number:08x}"
        line = encode_line(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:01.000Z",
                "message": _message(number),
            }
        )
        lines.append(line)
        total += len(line)
        parent, number = entry_id, number + 1
    return b"".join(lines)


@contextmanager
def server(dsn: str | None) -> Iterator[str]:
    if dsn is not None:
        yield dsn
        return
    from tests.pg_server import throwaway_server

    with throwaway_server() as started:
        yield started.dsn


def floors(dsn: str, runs: int) -> dict[str, list[float]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE TEMP TABLE floor (n int)")
        connection.execute("INSERT INTO floor VALUES (0)")
        round_trip = _times(lambda: connection.execute("SELECT 1").fetchone(), runs)
        # A temp table is not WAL-logged: a real one measures the commit flush too.
        table_name = f"floor_{uuid.uuid4().hex[:8]}"
        connection.execute(f"CREATE TABLE {table_name} (n int)")
        connection.execute(f"INSERT INTO {table_name} VALUES (0)")
        commit = _times(lambda: connection.execute(f"UPDATE {table_name} SET n = n + 1"), runs)
        connection.execute(f"DROP TABLE {table_name}")
    with tempfile.TemporaryDirectory() as scratch:
        storage = FileStorage(Path(scratch) / "f.jsonl", MemoryBlobStore(), policy="fsync")
        line = encode_line({"type": "message", "message": _message(0)})
        file_fsync = _times(lambda: storage.append(line), runs)
        storage.close()
    return {"round trip": round_trip, "commit": commit, "file append + fsync": file_fsync}


def small_session_appends(store: PostgresStorage, runs: int) -> tuple[list[float], float]:
    """Per-append latency in a fresh session, and sequential throughput (appends per second)."""
    with SessionManager.create("/bench", f"/bench/{uuid.uuid4().hex}", storage=store) as session:
        session.append_message({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 0})
        numbers = iter(range(1, 10**9))
        samples = _times(lambda: session.append_message(_message(next(numbers))), runs)
        start = time.perf_counter()
        for _ in range(runs):
            session.append_message(_message(next(numbers)))
        throughput = runs / (time.perf_counter() - start)
    return samples, throughput


def sized_appends(store: PostgresStorage, dsn: str, size: int, runs: int) -> dict[str, list[float]]:
    """Append latency in a session of ``size`` bytes: through the manager (size-checked, locked)
    and as omp appends (one unconditional ``content || line``), plus the open (a full read)."""
    path = Path(f"/bench/{uuid.uuid4().hex}/session.jsonl")
    store.write_session(path, session_bytes(size), expected_size=None)
    opened: list[float] = []
    start = time.perf_counter()
    session = SessionManager.open(path, storage=store)
    opened.append(time.perf_counter() - start)
    numbers = iter(range(10**6, 10**9))
    ours = _times(lambda: session.append_message(_message(next(numbers))), runs)
    session.close()
    line = encode_line({"type": "custom", "customType": "bench", "data": TEXT}).decode()
    statement = f"UPDATE {store.table} SET content = content || %s, mtime_ms = %s WHERE path = %s"
    with psycopg.connect(dsn, autocommit=True) as connection:
        omp_style = _times(lambda: connection.execute(statement, (line, 0, str(path))), runs)
        stored = connection.execute(
            f"SELECT octet_length(content), pg_column_size(content) FROM {store.table} WHERE path = %s",
            (str(path),),
        ).fetchone()
    store.delete_session(path)
    assert stored is not None
    return {"ours": ours, "omp": omp_style, "open": opened, "stored": [float(stored[0]), float(stored[1])]}


def proposals(dsn: str, size: int, runs: int) -> dict[str, list[float]]:
    """The two fixes docs/postgres.md weighs, at ``size``: omp's table with ``content`` stored
    uncompressed (``SET STORAGE EXTERNAL``), and an entry-per-row side table (one INSERT)."""
    suffix = uuid.uuid4().hex[:8]
    content = session_bytes(size).decode()
    line = encode_line({"type": "custom", "customType": "bench", "data": TEXT}).decode()
    with psycopg.connect(dsn, autocommit=True) as connection:
        external = f"external_{suffix}"
        connection.execute(
            f"CREATE TABLE {external} (path TEXT PRIMARY KEY, content TEXT NOT NULL, mtime_ms BIGINT)"
        )
        connection.execute(f"ALTER TABLE {external} ALTER content SET STORAGE EXTERNAL")
        connection.execute(f"INSERT INTO {external} VALUES ('s', %s, 0)", (content,))
        append = f"UPDATE {external} SET content = content || %s WHERE path = 's'"
        uncompressed = _times(lambda: connection.execute(append, (line,)), runs)
        lines = f"lines_{suffix}"
        connection.execute(
            f"CREATE TABLE {lines} (path TEXT, seq BIGINT, line TEXT, PRIMARY KEY (path, seq))"
        )
        numbers = iter(range(10**9))
        insert = f"INSERT INTO {lines} VALUES ('s', %s, %s)"
        side_table = _times(lambda: connection.execute(insert, (next(numbers), line)), runs)
        connection.execute(f"DROP TABLE {external}, {lines}")
    return {"external": uncompressed, "side table": side_table}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.postgres")
    parser.add_argument("--dsn", help="an existing server (default: start a throwaway one)")
    parser.add_argument("--quick", action="store_true", help="fewer runs, sessions up to 10 MB")
    options = parser.parse_args(argv)
    runs = 50 if options.quick else 300
    sized_runs = 5 if options.quick else 15
    sizes = {k: v for k, v in SIZES.items() if not options.quick or v <= 10_000_000}
    rows: list[Row] = []
    with server(options.dsn) as dsn:
        _log("floors")
        measured = floors(dsn, runs)
        floor_pairs = [("round trip", measured["round trip"]), ("commit", measured["commit"])]
        for name, samples in measured.items():
            rows.append(Row(f"floor: {name}", seconds(statistics.median(samples)), f"n={len(samples)}"))
        with PostgresStorage(dsn, f"bench_{uuid.uuid4().hex[:8]}") as store:
            _log("appends to a new session")
            samples, throughput = small_session_appends(store, runs)
            rows.append(Row.timing("append, new session (1 KB entries)", samples, floors=floor_pairs))
            rows.append(Row(f"  throughput, one writer: {throughput:,.0f} appends/s", "", ""))
            for label, size in sizes.items():
                _log(f"appends to a {label} session")
                result = sized_appends(store, dsn, size, sized_runs)
                stored = result["stored"]
                rows.append(
                    Row.timing(
                        f"append, {label} session (ours: locked, size-checked)",
                        result["ours"],
                        floors=floor_pairs,
                    )
                )
                rows.append(
                    Row.timing(
                        f"  append, {label} session, as omp appends", result["omp"], floors=floor_pairs
                    )
                )
                rows.append(
                    Row(
                        f"  open {label} session (full read)",
                        seconds(result["open"][0]),
                        f"{stored[0] / 1e6:.1f} MB stored in {stored[1] / 1e6:.2f} MB (TOAST-compressed)",
                    )
                )
            label, size = list(sizes.items())[-1]
            _log(f"proposed fixes at {label}")
            fixes = proposals(dsn, size, sized_runs)
            rows.append(
                Row.timing(
                    f"proposal: append, {label}, content SET STORAGE EXTERNAL",
                    fixes["external"],
                    floors=floor_pairs,
                )
            )
            rows.append(
                Row.timing(
                    f"proposal: append, {label}, one row per entry (side table)",
                    fixes["side table"],
                    floors=floor_pairs,
                )
            )
    report = table(rows)
    print(report)
    info = {key: value for key, value in machine().items() if key != "Files"}
    lines = [
        "<!-- generated by `python -m bench.postgres`; rerun to refresh -->",
        "# PostgreSQL store: measured",
        "",
        f"Last run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"`python -m bench.postgres{' --quick' if options.quick else ''}`, PostgreSQL on the same machine "
        "(127.0.0.1, a throwaway cluster with default settings).",
        "",
        *(f"- **{key}**: {value}" for key, value in info.items()),
        "",
        report,
        "",
        "Ratios are to floors measured in the same run: *round trip* is `SELECT 1` on an open "
        "connection, *commit* a one-row `UPDATE` committed (WAL flushed, `synchronous_commit` on).",
        "",
    ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    _log(f"wrote {os.path.relpath(RESULTS)}")


if __name__ == "__main__":
    main()
