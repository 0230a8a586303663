"""``omp-session export-store --parquet DIR`` and ``omp-session sql QUERY``: the store as tables
for analysts, through DuckDB (issue 27 item 7; extra ``[analytics]``)."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from omp_session.cli._common import CliError, console, emit_json, report_skipped, require_root, state
from omp_session.cli._table import Column, Row, print_table

__all__ = ["export_store_command", "sql_command"]

_TABLES_HELP = (
    "Tables: sessions (session_id, path, project, title, created, parent_session, entries), "
    "entries (session_id, entry_id, parent_id, type, role, timestamp, model, provider, tools) and "
    "usage (session_id, project, timestamp, model, model_name, provider, input, output, "
    "cache_read, cache_write, cost, cost_estimated, unpriced)."
)


@click.command(
    "export-store",
    epilog="Example:\n\n  omp-session export-store --parquet ~/omp-tables --all\n\n" + _TABLES_HELP,
)
@click.option(
    "--parquet",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write sessions.parquet, entries.parquet and usage.parquet into.",
)
@click.option("--all", "all_projects", is_flag=True, help="Every project (default: the current directory's).")
@click.option("--cwd", metavar="DIR", help="The sessions of the project in DIR.")
@click.pass_context
def export_store_command(ctx: click.Context, out_dir: Path, all_projects: bool, cwd: str | None) -> None:
    """Write the sessions, their entries and their usage as Parquet files (for DuckDB, pandas,
    Polars, ...). Costs are as the usage reports give them: recorded, else estimated."""
    from omp_session.tools.analytics import export_store

    cli = state(ctx)
    require_root(cli.root)
    paths = cli.session_files(all_projects=all_projects, cwd=cwd)
    try:
        tables = export_store(paths, out_dir, storage=cli.storage)
    except OSError as exc:
        raise CliError(f"{out_dir}: cannot write ({exc.strerror or exc})") from exc
    report_skipped(tables.skipped)
    counts = ", ".join(f"{len(rows):,} {name}" for name, rows in tables.rows.items())
    click.echo(f"wrote {counts} to {out_dir}", err=True)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@click.command(
    "sql",
    epilog=(
        "Examples:\n\n"
        '  omp-session sql --all "select model_name, round(sum(cost), 2) as cost from usage'
        ' group by 1 order by 2 desc"\n\n'
        '  omp-session sql --from ~/omp-tables "select project, count(*) from sessions group by 1"\n\n'
        + _TABLES_HELP
    ),
)
@click.argument("query")
@click.option(
    "--from",
    "parquet_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Query the Parquet files export-store wrote there (default: the store, read now).",
)
@click.option("--all", "all_projects", is_flag=True, help="Every project (default: the current directory's).")
@click.option("--cwd", metavar="DIR", help="The sessions of the project in DIR.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.pass_context
def sql_command(
    ctx: click.Context,
    query: str,
    parquet_dir: Path | None,
    all_projects: bool,
    cwd: str | None,
    as_json: bool,
    as_csv: bool,
) -> None:
    """Run a DuckDB SQL QUERY over the sessions, entries and usage tables. Reads only."""
    import duckdb

    from omp_session.tools.analytics import run_sql

    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    paths: list[Path] = []
    cli = state(ctx)
    if parquet_dir is None:
        require_root(cli.root)
        paths = cli.session_files(all_projects=all_projects, cwd=cwd)
    try:
        result = run_sql(query, parquet_dir=parquet_dir, paths=paths, storage=cli.storage)
    except duckdb.Error as exc:
        raise CliError(f"sql: {str(exc).splitlines()[0]}") from exc
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from exc
    if as_json:
        emit_json([dict(zip(result.columns, row, strict=True)) for row in result.rows])
    elif as_csv:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([_cell(value) for value in row] for row in result.rows)
        click.echo(out.getvalue(), nl=False)
    elif not result.rows:
        console().print("(no rows)")
    else:
        numeric = [
            all(isinstance(row[i], int | float) for row in result.rows) for i in range(len(result.columns))
        ]
        columns = [Column(name, numeric=numeric[i]) for i, name in enumerate(result.columns)]
        print_table(columns, [Row([_cell(value) for value in row]) for row in result.rows])
