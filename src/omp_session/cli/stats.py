"""``omp-session stats``: tokens, cost, models, messages and tool calls.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from omp_session.cli._common import (
    CliError,
    console,
    emit_json,
    json_option,
    session_argument,
    skipped,
    state,
)
from omp_session.tools.stats import SessionStats, StatsReport, Totals, collect_stats
from omp_session.tools.summary import one_line

__all__ = ["stats"]

_COLUMNS = ("Entries", "Msgs", "Input", "Output", "Cache read", "Cache write", "Cost")


def _count(value: float) -> str:
    """``1,234``; infinite or NaN usage (a damaged file can hold ``1e400``) as ``∞``/``?``."""
    try:
        return f"{int(value):,}"
    except OverflowError:
        return "∞" if value > 0 else "-∞"
    except ValueError:
        return "?"


def _cells(totals: Totals) -> list[str]:
    usage = totals.usage
    numbers = (usage.input, usage.output, usage.cacheRead, usage.cacheWrite)
    try:
        cost = f"${float(usage.cost):,.4f}"
    except OverflowError:  # an integer cost beyond a float's range
        cost = "$∞"
    return [f"{totals.entries:,}", f"{totals.messages:,}", *(_count(n) for n in numbers), cost]


def _table(first_column: str) -> Table:
    table = Table(box=None, pad_edge=False, collapse_padding=True, header_style="bold", show_edge=False)
    # Numbers are never cut; the name column gives way on a narrow terminal.
    table.add_column(first_column, no_wrap=True, overflow="ellipsis", max_width=48)
    for name in _COLUMNS:
        table.add_column(name, justify="right", no_wrap=True, min_width=9 if name == "Cost" else len(name))
    return table


def _counts(title: str, counter: Counter[str]) -> Text:
    text = Text(f"{title}: ", style="bold")
    return text.append(", ".join(f"{name} {count:,}" for name, count in counter.most_common()) or "none")


def _one_session(session: SessionStats) -> Table:
    table = _table("Branch (leaf)")
    for branch in session.branches:
        table.add_row(branch.leaf_id + (" (current)" if branch.is_current else ""), *_cells(branch.totals))
    table.add_row(Text("all branches", style="bold"), *_cells(session.totals), end_section=True)
    return table


def _many_sessions(report: StatsReport) -> Table:
    table = _table("Session")
    for session in report.sessions:
        name = session.session_id[:16] + (f" {one_line(session.title)}" if session.title else "")
        table.add_row(name, *_cells(session.totals))
    table.add_row(Text("total", style="bold"), *_cells(report.total))
    return table


def _print(report: StatsReport) -> None:
    out = console()
    if len(report.sessions) == 1:
        session = report.sessions[0]
        out.print(Text(f"Session {session.session_id}", style="bold"))
        out.print(Text(session.path, style="dim"), soft_wrap=True)
        out.print(_one_session(session))
    else:
        out.print(_many_sessions(report))
        if report.copied_entries:
            out.print(
                Text(f"{report.copied_entries:,} entries copied by forks are counted once.", style="dim")
            )
    out.print(_counts("Models", report.total.models))
    out.print(_counts("Tool calls", report.total.tool_calls))


@click.command(
    epilog="\b\nExamples:\n  omp-session stats 15d0c6a0\n  omp-session stats --all --json\n"
    "  omp-session stats --cwd ~/src/app",
)
@session_argument(nargs=-1)
@click.option("--all", "all_projects", is_flag=True, help="Every session of every project.")
@click.option("--cwd", metavar="DIR", help="Every session of the project in DIR.")
@json_option
@click.pass_context
def stats(
    ctx: click.Context, session: tuple[str, ...], all_projects: bool, cwd: str | None, as_json: bool
) -> None:
    """Token usage, cost, models, messages and tool calls of one or more sessions.

    One SESSION: per branch (each leaf's path) and for all branches. Several (or --all, or
    --cwd, or none: the current directory's project): per session and in total, where entries a
    fork copied from its parent are counted once.
    """
    cli = state(ctx)
    if sum(bool(x) for x in (session, all_projects, cwd is not None)) > 1:
        raise click.UsageError("give SESSIONs, --all or --cwd, not several")
    paths: list[Path] = (
        [cli.resolve(name) for name in session]
        if session
        else cli.session_files(all_projects=all_projects, cwd=cwd)
    )
    report = collect_stats(paths)
    if session and report.skipped:  # a file named on the command line must be readable
        raise CliError(" ".join(report.skipped[0][1].split()))
    for path, reason in report.skipped:
        skipped(path, reason)
    if as_json:
        emit_json(report.to_dict())
        return
    if not report.sessions:
        raise CliError(
            f"no readable sessions (looked in {cli.root if all_projects else cli.project_dir(cwd)})"
        )
    _print(report)
