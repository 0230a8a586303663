"""The store as DuckDB tables (issue 27 item 7): the Parquet export, SQL over it and over the store,
the documented example queries, and totals that equal the usage reports'."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from omp_session.cli import main
from omp_session.tools.analytics import TABLES, export_store, run_sql, store_tables
from omp_session.tools.listing import session_files
from omp_session.tools.usage_records import collect_records
from omp_session.tools.usage_report import ReportOptions, collected_report

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "sessions"
#: The three example queries of docs/cli.md ("Tables for analysts").
EXAMPLES = (
    "select model_name, round(sum(cost), 2) as cost, sum(input + output) as tokens"
    " from usage group by 1 order by 2 desc",
    "select date_trunc('week', timestamp) as week, count(distinct session_id) as sessions,"
    " round(sum(cost), 2) as cost from usage group by 1 order by 1",
    "select unnest(tools) as tool, count(*) as calls from entries where role = 'assistant'"
    " group by 1 order by 2 desc limit 10",
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(SAMPLES, root)
    return root


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_the_usage_table_totals_equal_the_usage_report(store: Path) -> None:
    paths = list(session_files(store))
    tables = store_tables(paths)
    report = collected_report(collect_records(paths), "daily", ReportOptions())
    total = run_sql("select sum(cost), sum(input), sum(output), count(*) from usage", paths=paths).rows[0]
    assert math.isclose(total[0], report.total.cost, rel_tol=1e-9)
    assert (total[1], total[2]) == (report.total.input, report.total.output)
    assert total[3] == len(tables.rows["usage"]) == report.total.turns
    sessions = run_sql("select count(*), sum(entries) from sessions", paths=paths).rows[0]
    entries = run_sql("select count(*) from entries", paths=paths).rows[0][0]
    assert sessions[0] == len(tables.rows["sessions"]) and sessions[1] == entries > 0


def test_the_parquet_export_reads_back_and_changes_no_session(store: Path, tmp_path: Path) -> None:
    before = _snapshot(store)
    out = tmp_path / "tables"
    tables = export_store(list(session_files(store)), out)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{name}.parquet" for name in TABLES)
    connection = duckdb.connect()
    for name, columns in TABLES.items():
        described = connection.execute(
            f"describe select * from read_parquet('{out / name}.parquet')"
        ).fetchall()
        assert [row[0] for row in described] == [column for column, _kind in columns]
        count = connection.execute(f"select count(*) from read_parquet('{out / name}.parquet')").fetchone()
        assert count is not None and count[0] == len(tables.rows[name])
    assert _snapshot(store) == before
    for query in EXAMPLES:  # the same answers from the files as from the store
        assert run_sql(query, parquet_dir=out).rows == run_sql(query, paths=list(session_files(store))).rows


def test_the_documented_examples_run_from_the_command_line(store: Path, tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    runner = CliRunner()
    for query in EXAMPLES:
        assert query in " ".join(docs.split())  # (the docs wrap long lines)
        result = runner.invoke(main, ["--dir", str(store), "sql", "--all", "--json", query])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)
    exported = runner.invoke(
        main, ["--dir", str(store), "export-store", "--parquet", str(tmp_path / "t"), "--all"]
    )
    assert exported.exit_code == 0 and "sessions" in exported.stderr
    csv_out = runner.invoke(
        main, ["sql", "--from", str(tmp_path / "t"), "--csv", "select count(*) as n from usage"]
    )
    assert csv_out.exit_code == 0 and csv_out.stdout.splitlines()[0] == "n"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sql", "--all", "select nope"], "sql: Binder Error"),
        (["sql", "--from", "/nonexistent/tables", "select 1"], "no such table file"),
    ],
)
def test_a_bad_query_or_a_missing_export_is_one_line(store: Path, args: list[str], needle: str) -> None:
    result = CliRunner().invoke(main, ["--dir", str(store), *args])
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("omp-session: error: ") and needle in lines[0]
