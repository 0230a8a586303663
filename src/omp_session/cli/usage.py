"""``omp-session usage``: tokens and cost by day, week, month, session, model, project or 5-hour
billing block (issue 13 #6, issue 27 #5).

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import time
from datetime import date, datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
from rich.text import Text

from omp_session.cli._common import console, emit_json, report_skipped, require_root, state
from omp_session.cli._table import Column, Row, money, print_table
from omp_session.tools.short_ids import unique_prefixes
from omp_session.tools.usage_report import (
    VIEWS,
    ReportOptions,
    UsageReport,
    UsageRow,
    start_of_week_number,
    usage_report,
)

__all__ = ["usage"]


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


def _zone(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tzinfo:
    if value is None or value.upper() == "UTC":
        return timezone.utc
    if value.lower() == "local":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else timezone.utc
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(
            f"{value!r} is not a time zone (an IANA name such as Europe/Paris, UTC or local)"
        ) from None


_HEADINGS = {  # the first column of each view
    "daily": "Date",
    "weekly": "Week of",
    "monthly": "Month",
    "session": "Session",
    "model": "Model",
    "project": "Project",
    "blocks": "Block start",
}
_NUMBERS = ("Input", "Output", "Cache R", "Cache W", "Tokens", "Hit", "Cost")


def _tokens(value: float) -> str:
    try:
        return f"{int(value):,}"
    except (OverflowError, ValueError):  # a damaged file's 1e400 or NaN
        return "∞" if value == value else "?"


def _cost(row: UsageRow) -> str:
    return money(row.cost, estimated=row.is_estimated) + ("?" if row.unpriced_turns else "")


def _numbers(row: UsageRow) -> list[str]:
    rate = row.cache_hit_rate
    return [
        _tokens(row.input),
        _tokens(row.output),
        _tokens(row.cache_read),
        _tokens(row.cache_write),
        _tokens(row.tokens),
        f"{rate:.0%}" if rate is not None else "-",
        _cost(row),
    ]


def _duration(ms: float) -> str:
    minutes = int(ms // 60_000)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _block_note(row: UsageRow, now_ms: int) -> str:
    block = row.block
    if block is None:
        return ""
    if block.gap:
        return f"(gap {_duration(block.end_ms - block.start_ms)})"
    if block.active:
        return f"ACTIVE, {_duration(block.end_ms - now_ms)} left"
    return f"{_duration(block.last_ms - block.first_ms)} used"


def _print(report: UsageReport, now_ms: int) -> None:
    view = report.view
    # Dates, weeks, blocks and session ids are never cut (a cut one names another); names narrow.
    columns = [Column(_HEADINGS[view], min_width=12, keep=view not in ("model", "project"))]
    if view == "session":
        columns.append(Column("Title", min_width=10, drop=2))
    if view == "blocks":
        columns.append(Column("Status", min_width=6, drop=3))
    if view in ("daily", "weekly", "monthly", "blocks"):
        columns.append(Column("Models", min_width=10, drop=1))
    columns.extend(Column(name, numeric=True) for name in _NUMBERS)
    short = unique_prefixes(row.key for row in report.rows) if view == "session" else {}
    rows = []
    for row in [*report.rows, report.total]:
        is_total = row is report.total
        lead = ["Total" if is_total else short.get(row.key, row.key)]
        styles: dict[int, str] = {}
        if view == "session":
            lead.append("" if is_total else row.label)
        if view == "blocks":
            lead.append("" if is_total else _block_note(row, now_ms))
        if view in ("daily", "weekly", "monthly", "blocks"):
            lead.append("" if is_total else ", ".join(sorted(row.models, key=lambda m: -row.models[m])))
        rows.append(Row([*lead, *_numbers(row)], style="bold" if is_total else None, cell_styles=styles))
    print_table(columns, rows)
    _notes(report)


def _notes(report: UsageReport) -> None:
    out = console()
    total = report.total
    if total.is_estimated:
        out.print(
            Text(
                f"~ includes {money(total.estimated_cost)} estimated from list prices of "
                f"{report.prices_date} (omp recorded no cost for those turns)",
                style="dim",
            ),
            soft_wrap=True,
        )
    if total.unpriced_turns:
        models = ", ".join(sorted(total.unpriced_models))
        out.print(
            Text(
                f"? {total.unpriced_turns:,} turns of models without a known price ({models}): "
                "their cost is not in the totals",
                style="dim",
            ),
            soft_wrap=True,
        )
    active = report.active_block
    if active is not None and active.block is not None and active.block.burn is not None:
        burn = active.block.burn
        out.print(
            Text(
                f"Active block: {_tokens(burn.tokens_per_minute)} tokens/min, "
                f"{money(burn.cost_per_hour)}/h; projected by its end: "
                f"{_tokens(burn.projected_tokens)} tokens, {money(burn.projected_cost)}",
                style="bold",
            ),
            soft_wrap=True,
        )


@click.command(
    epilog="\b\nExamples:\n  omp-session usage\n  omp-session usage monthly --all\n"
    "  omp-session usage weekly --all --timezone Europe/Paris\n"
    "  omp-session usage blocks --all\n"
    "  omp-session usage model --since 2025-06-01 --until 2025-06-30 --csv\n"
    "  omp-session usage session --cwd ~/src/app --json",
)
@click.argument("view", type=click.Choice(VIEWS), default="daily")
@click.option("--all", "all_projects", is_flag=True, help="Every project (default: the current directory's).")
@click.option("--cwd", metavar="DIR", help="The sessions of the project in DIR.")
@click.option(
    "--since", callback=_date, metavar="DATE", help="Only entries on or after DATE (in --timezone)."
)
@click.option(
    "--until", callback=_date, metavar="DATE", help="Only entries on or before DATE (in --timezone)."
)
@click.option(
    "--timezone",
    "zone",
    callback=_zone,
    metavar="ZONE",
    help="Days, weeks, months and block times in ZONE (IANA name, UTC or local; default UTC).",
)
@click.option(
    "--start-of-week",
    type=click.Choice(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]),
    default="monday",
    show_default=True,
    help="The first day of a week (weekly view).",
)
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
    zone: tzinfo,
    start_of_week: str,
    as_json: bool,
    as_csv: bool,
) -> None:
    """Tokens and cost by VIEW: daily (default), weekly, monthly, session, model, project or
    blocks (5-hour billing windows, with the active one's burn rate).

    Every branch counts (abandoned work was paid for too); entries a fork copied from another
    listed session count once. Cost is what omp recorded; where it recorded none (imported
    sessions) it is estimated from list prices and marked ~ (costEstimated in JSON).
    """
    if all_projects and cwd is not None:
        raise click.UsageError("give --all or --cwd, not both")
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    if since is not None and until is not None and since > until:
        raise click.UsageError("--since is after --until")
    cli = state(ctx)
    require_root(cli.root)
    now_ms = int(time.time() * 1000)
    options = ReportOptions(
        since=since,
        until=until,
        zone=zone,
        start_of_week=start_of_week_number(start_of_week),
        now_ms=now_ms,
    )
    paths = cli.session_files(all_projects=all_projects, cwd=cwd)
    report = usage_report(paths, view, options, storage=cli.storage)
    report_skipped(report.skipped)
    if as_json:
        emit_json(report.to_dict())
    elif as_csv:
        click.echo(report.to_csv(), nl=False)
    elif not report.rows:
        click.echo(
            "No usage in these sessions" + ("" if all_projects else " (--all: every project)"), err=True
        )
    else:
        _print(report, now_ms)
