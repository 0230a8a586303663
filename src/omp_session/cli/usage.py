"""``omp-session usage``: tokens and cost by day, month, session, model or project (issue 13 #6)."""

from __future__ import annotations

from datetime import date

import click
from rich.table import Table

from omp_session.cli._common import console, emit_json, require_root, skipped, state
from omp_session.tools.usage_report import VIEWS, UsageReport, UsageRow, usage_report


def _date(_ctx: click.Context, _param: click.Parameter, value: str | None) -> date | None:
    if value is None:
        return None
    text = value.replace("-", "")
    try:
        return date(int(text[:4]), int(text[4:6]), int(text[6:8])) if len(text) == 8 else _bad(value)
    except ValueError:
        return _bad(value)


def _bad(value: str) -> date:
    raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD or YYYYMMDD)")


_HEADINGS = {  # the first column of each view
    "daily": "Date",
    "monthly": "Month",
    "session": "Session",
    "model": "Model",
    "project": "Project",
}


def _tokens(value: float) -> str:
    return f"{int(value):,}"


def _cells(row: UsageRow) -> list[str]:
    usage = row.usage
    return [
        _tokens(usage.input),
        _tokens(usage.output),
        _tokens(usage.cacheRead),
        _tokens(usage.cacheWrite),
        _tokens(row.tokens),
        f"${usage.cost:,.2f}" if usage.cost >= 0.1 else f"${usage.cost:.4f}",
    ]


def _print(report: UsageReport) -> None:
    out = console()
    table = Table(box=None, pad_edge=False, header_style="bold")
    with_models = report.view in ("daily", "monthly") and out.width >= 96  # --json/--csv always have them
    keys = [row.key for row in report.rows]
    key_width = min(max(map(len, [*keys, "Total"])), 8 if report.view == "session" else 40)
    table.add_column(_HEADINGS[report.view], no_wrap=True, overflow="ellipsis", min_width=key_width)
    if report.view == "session":
        table.add_column("Title", overflow="ellipsis", no_wrap=True, max_width=max(out.width - 70, 10))
    if with_models:
        table.add_column("Models", overflow="ellipsis", no_wrap=True, max_width=24)
    numbers = [_cells(row) for row in [*report.rows, report.total]]
    for position, name in enumerate(("Input", "Output", "Cache R", "Cache W", "Tokens", "Cost")):
        widest = max(len(cells[position]) for cells in numbers)  # numbers are never cut
        table.add_column(name, justify="right", no_wrap=True, min_width=widest)
    for row in [*report.rows, None, report.total]:
        if row is None:
            table.add_section()
            continue
        lead = [row.key if row is not report.total else "Total"]
        if report.view == "session":
            lead = [lead[0][:8], row.label]  # the short id, as 'list' shows it
        if with_models:
            short = sorted({name.rsplit("/", 1)[-1] for name in row.models})  # provider left out
            lead.append(", ".join(short) if row is not report.total else "")
        table.add_row(*lead, *_cells(row), style="bold" if row is report.total else None)
    out.print(table)


@click.command(
    epilog="\b\nExamples:\n  omp-session usage\n  omp-session usage monthly --all\n"
    "  omp-session usage model --since 2025-06-01 --until 2025-06-30 --csv\n"
    "  omp-session usage session --cwd ~/src/app --json",
)
@click.argument("view", type=click.Choice(VIEWS), default="daily")
@click.option("--all", "all_projects", is_flag=True, help="Every project (default: the current directory's).")
@click.option("--cwd", metavar="DIR", help="The sessions of the project in DIR.")
@click.option("--since", callback=_date, metavar="DATE", help="Only entries on or after DATE (UTC).")
@click.option("--until", callback=_date, metavar="DATE", help="Only entries on or before DATE (UTC).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.pass_context
def usage(
    ctx: click.Context,
    view: str,
    all_projects: bool,
    cwd: str | None,
    since: date | None,
    until: date | None,
    as_json: bool,
    as_csv: bool,
) -> None:
    """Tokens and cost by VIEW: daily (default), monthly, session, model or project.

    Every branch counts (abandoned work was paid for too); entries a fork copied from another
    listed session count once. Days are UTC days of the entries' timestamps.
    """
    if all_projects and cwd is not None:
        raise click.UsageError("give --all or --cwd, not both")
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    if since is not None and until is not None and since > until:
        raise click.UsageError("--since is after --until")
    cli = state(ctx)
    require_root(cli.root)
    report = usage_report(
        cli.session_files(all_projects=all_projects, cwd=cwd), view, since=since, until=until
    )
    for path, reason in report.skipped:
        skipped(path, reason)
    if as_json:
        emit_json(report.to_dict())
    elif as_csv:
        click.echo(report.to_csv(), nl=False)
    elif not report.rows:
        click.echo(
            "No usage in these sessions" + ("" if all_projects else " (--all: every project)"), err=True
        )
    else:
        _print(report)


__all__ = ["usage"]
