"""Nothing a command only reads changes a database store's rows (issue 25 item 1): the read
commands, ``pull`` (which reads the rows) and ``push`` (which reads the files) against the real
PostgreSQL server, comparing every row's content, ``mtime_ms`` and title columns (and the pushed
files' bytes and mtimes) before and after."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from omp_session.cli import main
from omp_session.store.postgres import PostgresStorage
from tests.durability.test_read_only_matrix import DAMAGED, snapshot, unchanged_except_new_files
from tests.pg_server import ThrowawayServer

TESTS = Path(__file__).resolve().parents[1]
Rows = list[tuple[object, ...]]


def rows(sql: psycopg.Connection[tuple[object, ...]], table: str) -> Rows:
    query = (
        f"SELECT path, content, mtime_ms, title, title_source, title_updated_at FROM {table} ORDER BY path"
    )
    return sql.execute(query).fetchall()


@pytest.fixture
def filled(
    postgres_server: ThrowawayServer, pg_store: PostgresStorage, table_name: str, tmp_path: Path
) -> tuple[Path, list[Path]]:
    root = tmp_path / "sessions"
    for name, folder in (("-corpus-1319", "conformance"), ("-corpus-18", "conformance_omp18")):
        (root / name).mkdir(parents=True)
        for source in sorted((TESTS / folder / "load").glob("*.jsonl"))[::4]:
            shutil.copy2(source, root / name / source.name)
    (root / "-damaged").mkdir()
    for name, data in DAMAGED.items():
        if b"\xff" not in data and b"\x00" not in data:  # PostgreSQL text holds no invalid UTF-8
            (root / "-damaged" / f"2025-06-02T14-00-00-000Z_{name}.jsonl").write_bytes(data)
    result = CliRunner().invoke(
        main, ["--store", postgres_server.dsn, "--table", table_name, "--dir", str(root), "push"]
    )
    assert result.exit_code == 0, result.output
    return root, sorted(root.rglob("*.jsonl"))


def test_read_commands_change_no_row(
    postgres_server: ThrowawayServer,
    sql: psycopg.Connection[tuple[object, ...]],
    table_name: str,
    filled: tuple[Path, list[Path]],
    tmp_path: Path,
) -> None:
    root, paths = filled
    store = ["--store", postgres_server.dsn, "--table", table_name, "--dir", str(root)]
    before = rows(sql, table_name)
    files_before = snapshot(root)
    assert len(before) == len(paths)
    runner = CliRunner()
    whole = [
        ["list", "--all"],
        ["list", "--all", "--json"],
        ["stats", "--all"],
        ["usage", "daily", "--all"],
        ["search", "--all", "the"],
        ["check", "--all"],
    ]
    per_row = [
        ["show", "{p}"],
        ["tree", "{p}"],
        ["context", "{p}"],
        ["stats", "{p}"],
        ["check", "{p}"],
        ["export", "{p}", "-f", "md", "-o", str(tmp_path / "x.md")],
    ]
    commands = whole + [[a.format(p=p) for a in args] for p in paths[::2] for args in per_row]
    for args in commands:
        result = runner.invoke(main, [*store, *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.output)
        assert "internal error" not in result.output, (args, result.output)
        assert rows(sql, table_name) == before, args
    elsewhere = tmp_path / "restored"
    pulled = runner.invoke(main, [*store[:-1], str(elsewhere), "pull", "--as-root", str(root)])
    assert pulled.exit_code == 0, pulled.output
    assert rows(sql, table_name) == before  # pull only reads the rows
    pushed = runner.invoke(main, [*store, "push"])
    assert pushed.exit_code == 0, pushed.output
    assert rows(sql, table_name) == before  # nothing to copy: identical
    assert unchanged_except_new_files(files_before, snapshot(root), may_add=False) == []  # push reads files
