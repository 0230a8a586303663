"""Issue 25's table, the database rows: each test is one row, and each failed on the code before it.

Against the real PostgreSQL server of ``tests/postgres/conftest.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result

from omp_session.cli import main
from omp_session.store.postgres import PostgresStorage
from omp_session.tools.sync import local_session_files
from omp_session.web.run_default import SAMPLES
from tests.pg_server import ThrowawayServer

Sql = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def samples_root(tmp_path: Path) -> Path:
    root = tmp_path / "host-a" / "sessions"
    shutil.copytree(SAMPLES / "sessions", root)
    return root


def cli(server: ThrowawayServer, table: str, *args: str, dsn: str | None = None) -> Result:
    return CliRunner().invoke(main, ["--store", dsn or server.dsn, "--table", table, *args])


def table_exists(sql: Sql, table: str) -> bool:
    row = sql.execute("SELECT to_regclass(%s)", (table,)).fetchone()
    return row is not None and row[0] is not None


def distinct_old_mtimes(root: Path) -> dict[Path, int]:
    """Give every session file a different mtime, years ago, in whole milliseconds."""
    stamps: dict[Path, int] = {}
    for number, path in enumerate(local_session_files(root)):
        ns = (1_600_000_000_000 + number * 86_400_000 + 123) * 1_000_000
        os.utime(path, ns=(ns, ns))
        stamps[path] = ns
    return stamps


# -- row 5: --table NAME on a read command created the table --------------------------------------


@pytest.mark.parametrize("command", [["list", "--all"], ["search", "--all", "x"], ["stats", "--all"]])
def test_a_read_command_never_creates_the_table(
    postgres_server: ThrowawayServer, sql: Sql, tmp_path: Path, command: list[str]
) -> None:
    table = "nope_" + os.urandom(4).hex()
    result = cli(postgres_server, table, "--dir", str(tmp_path), *command)
    assert result.exit_code == 2, result.output
    assert f"no table {table}" in result.output
    assert not table_exists(sql, table)


def test_a_writing_command_still_creates_the_table(
    postgres_server: ThrowawayServer, sql: Sql, samples_root: Path
) -> None:
    table = "made_" + os.urandom(4).hex()
    result = cli(postgres_server, table, "--dir", str(samples_root), "push")
    assert result.exit_code == 0, result.output
    assert table_exists(sql, table)


# -- row 6: a refused connection said "write failed" for a read, with a mangled URL ---------------


@pytest.mark.parametrize(("command", "operation"), [(["list", "--all"], "read"), (["push"], "write")])
def test_connection_errors_say_read_or_write_and_hide_the_password(
    tmp_path: Path, command: list[str], operation: str
) -> None:
    dsn = "postgresql://alice:s3cret-pw@127.0.0.1:1/omp"
    result = CliRunner().invoke(main, ["--store", dsn, "--dir", str(tmp_path), *command])
    assert result.exit_code == 2, result.output
    assert "s3cret-pw" not in result.output
    assert "postgresql://alice@127.0.0.1:1/omp" in result.output  # not "postgresql:/127..."
    assert f"{operation} failed" in result.output
    other = "write" if operation == "read" else "read"
    assert f"{other} failed" not in result.output
    assert "Traceback" not in result.output


# -- row 7: push stamped every row with the push time ---------------------------------------------


def test_push_keeps_each_files_mtime_and_pull_restores_it(
    postgres_server: ThrowawayServer, pg_store: PostgresStorage, table_name: str, samples_root: Path
) -> None:
    stamps = distinct_old_mtimes(samples_root)
    assert cli(postgres_server, table_name, "--dir", str(samples_root), "push").exit_code == 0
    for path, ns in stamps.items():
        stored = pg_store.stat_session(path)
        assert stored is not None and round(stored.mtime * 1000) == ns // 1_000_000
    listed = json.loads(
        cli(postgres_server, table_name, "--dir", str(samples_root), "list", "--all", "--json").output
    )
    # Each row's modified time is its file's, not the push's (the list itself is ordered by the
    # conversations' last activity, which a push cannot change either).
    modified = {row["path"]: row["modified"] for row in listed}
    for path, ns in stamps.items():
        if str(path) in modified:
            shown = datetime.fromisoformat(modified[str(path)].replace("Z", "+00:00"))
            assert round(shown.timestamp() * 1000) == ns // 1_000_000, path
    activity = [row["lastActivity"] for row in listed]
    assert activity == sorted(activity, reverse=True)

    shutil.rmtree(samples_root)
    pulled = cli(postgres_server, table_name, "--dir", str(samples_root), "pull")
    assert pulled.exit_code == 0, pulled.output
    for path, ns in stamps.items():
        assert path.stat().st_mtime_ns // 1_000_000 == ns // 1_000_000


# -- row 8: pull into another --dir copied nothing and said nothing --------------------------------


def test_pull_into_another_directory_refuses_with_a_hint(
    postgres_server: ThrowawayServer, table_name: str, samples_root: Path, tmp_path: Path
) -> None:
    assert cli(postgres_server, table_name, "--dir", str(samples_root), "push").exit_code == 0
    backup = tmp_path / "srv" / "backup"
    refused = cli(postgres_server, table_name, "--dir", str(backup), "pull")
    assert refused.exit_code == 2, refused.output
    assert "--as-root" in refused.output and str(samples_root) in refused.output
    assert not backup.exists()


def test_pull_and_push_re_root_explicitly_and_print_the_mapping(
    postgres_server: ThrowawayServer,
    pg_store: PostgresStorage,
    table_name: str,
    samples_root: Path,
    tmp_path: Path,
) -> None:
    original = {p.relative_to(samples_root): p.read_bytes() for p in local_session_files(samples_root)}
    assert cli(postgres_server, table_name, "--dir", str(samples_root), "push").exit_code == 0
    backup = tmp_path / "srv" / "backup"
    pulled = cli(postgres_server, table_name, "--dir", str(backup), "pull", "--as-root", str(samples_root))
    assert pulled.exit_code == 0, pulled.output
    assert f"{samples_root} -> {backup}" in pulled.output
    assert f"pulled: {len(original)} copied" in pulled.output
    assert {p.relative_to(backup): p.read_bytes() for p in local_session_files(backup)} == original

    elsewhere = "/home/somebody/.omp/agent/sessions"
    pushed = cli(postgres_server, table_name, "--dir", str(backup), "push", "--as-root", elsewhere)
    assert pushed.exit_code == 0, pushed.output
    assert f"{backup} -> {elsewhere}" in pushed.output
    for relative, data in original.items():
        assert pg_store.read_session(Path(elsewhere) / relative) == data


# -- row 9: list --all showed only the rows under this host's root --------------------------------


def test_list_all_on_a_database_lists_every_row_grouped_by_host_path(
    postgres_server: ThrowawayServer, table_name: str, samples_root: Path, tmp_path: Path
) -> None:
    assert cli(postgres_server, table_name, "--dir", str(samples_root), "push").exit_code == 0
    other_host = tmp_path / "host-b" / "sessions"
    shutil.copytree(samples_root, other_host)
    assert cli(postgres_server, table_name, "--dir", str(other_host), "push").exit_code == 0
    count = len(local_session_files(samples_root))
    here = tmp_path / "host-c" / "sessions"  # this machine's root holds nothing
    listed = cli(postgres_server, table_name, "--dir", str(here), "list", "--all", "--json")
    assert listed.exit_code == 0, listed.output
    paths = {row["path"] for row in json.loads(listed.output)}
    assert len(paths) >= 2 * count - 2  # every valid session of both hosts (samples hold 1-2 damaged ones)
    assert any(p.startswith(str(samples_root)) for p in paths)
    assert any(p.startswith(str(other_host)) for p in paths)
    text = cli(postgres_server, table_name, "--dir", str(here), "list", "--all")
    assert text.exit_code == 0, text.output
    assert str(samples_root) in text.output and str(other_host) in text.output  # a heading per host path
