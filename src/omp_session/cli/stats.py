"""``omp-session stats``: tokens, cost, models, messages and tool calls.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.text import Text

from omp_session.cli._common import (
    CliError,
    console,
    emit_json,
    json_option,
    report_skipped,
    session_argument,
    state,
)
from omp_session.cli._table import Column, Row, money, print_table
from omp_session.tools.short_ids import unique_prefixes
from omp_session.tools.stats import SessionStats, StatsReport, Totals, collect_stats
from omp_session.tools.summary import one_line

__all__ = ["stats"]

_COLUMNS = ("Entries", "Msgs", "Input", "Output", "Cache R", "Cache W", "Cost")


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
        cost = money(float(usage.cost))
    except OverflowError:  # an integer cost beyond a float's range
        cost = "$∞"
    return [f"{totals.entries:,}", f"{totals.messages:,}", *(_count(n) for n in numbers), cost]


def _columns(first: str, *texts: Column) -> list[Column]:
    # The first column names a branch or a session by id: never cut.
    return [Column(first, keep=True), *texts, *(Column(name, numeric=True) for name in _COLUMNS)]


def _counts(title: str, counter: Counter[str]) -> Text:
    text = Text(f"{title}: ", style="bold")
    return text.append(", ".join(f"{name} {count:,}" for name, count in counter.most_common()) or "none")


def _one_session(session: SessionStats) -> None:
    rows = [
        Row([branch.leaf_id + (" (current)" if branch.is_current else ""), *_cells(branch.totals)])
        for branch in session.branches
    ]
    rows.append(Row(["all branches", *_cells(session.totals)], style="bold"))
    print_table(_columns("Branch (leaf)"), rows)
    other = session.other_branches
    if other is not None:
        plural = "es" if other.count != 1 else ""
        sizes = (
            f"{other.min_entries:,} entries, {money(other.min_cost)}"
            if other.min_entries == other.max_entries
            else f"{other.min_entries:,} to {other.max_entries:,} entries, "
            f"{money(other.min_cost)} to {money(other.max_cost)}"
        )
        console().print(
            Text(f"{other.count:,} other branch{plural} ({sizes} each): --branches lists them", style="dim"),
            soft_wrap=True,
        )


def _many_sessions(report: StatsReport) -> None:
    short = unique_prefixes(session.session_id for session in report.sessions)
    rows = [
        Row(
            [
                short.get(session.session_id, session.session_id),
                one_line(session.title or ""),
                *_cells(session.totals),
            ]
        )
        for session in report.sessions
    ]
    rows.append(Row(["total", "", *_cells(report.total)], style="bold"))
    print_table(_columns("Session", Column("Title", min_width=10, drop=1)), rows)


def _print(report: StatsReport) -> None:
    out = console()
    if len(report.sessions) == 1:
        session = report.sessions[0]
        out.print(Text(f"Session {session.session_id}", style="bold"))
        out.print(Text(session.path, style="dim"), soft_wrap=True)
        _one_session(session)
    else:
        _many_sessions(report)
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
@click.option(
    "--branches",
    "every_branch",
    is_flag=True,
    help="One row per branch (default: the current branch and a summary of the others).",
)
@json_option
@click.pass_context
def stats(
    ctx: click.Context,
    session: tuple[str, ...],
    all_projects: bool,
    cwd: str | None,
    every_branch: bool,
    as_json: bool,
) -> None:
    """Token usage, cost, models, messages and tool calls of one or more sessions.

    One SESSION: the current branch (its leaf's path), a summary of the other branches (each
    of them with --branches) and all branches together. Several (or --all, or
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
    report = collect_stats(paths, branches=every_branch, storage=cli.storage)
    if session and report.skipped:  # a file named on the command line must be readable
        raise CliError(" ".join(report.skipped[0][1].split()))
    report_skipped(report.skipped)
    if as_json:
        emit_json(report.to_dict())
        return
    if not report.sessions:
        raise CliError(
            f"no readable sessions (looked in {cli.root if all_projects else cli.project_dir(cwd)})"
        )
    _print(report)
