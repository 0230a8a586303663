"""``omp-session list``: sessions newest first, as a table or JSON.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from omp_session.cli._common import (
    console,
    emit_json,
    human_size,
    json_option,
    report_skipped,
    require_root,
    state,
)
from omp_session.cli._table import Column, Row, print_table
from omp_session.tools.listing import SessionInfo, list_all_sessions, list_every_stored_session, list_sessions
from omp_session.tools.short_ids import unique_prefixes
from omp_session.tools.summary import one_line
from omp_session.tools.sync import host_root

__all__ = ["list_command"]


def _row_json(info: SessionInfo) -> dict[str, Any]:
    data = info.to_dict(with_text=False)  # the whole conversation: too big for a listing
    data["size"] = info.size
    data["lastActivity"] = _iso(info.last_activity or info.modified)
    return data


def _iso(moment: datetime) -> str:
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _by_last_activity(infos: Sequence[SessionInfo]) -> list[SessionInfo]:
    """Most recent conversation first (an imported 2025 conversation is not "today"); the file's
    mtime breaks ties."""
    return sorted(infos, key=lambda info: (info.last_activity or info.modified, info.modified), reverse=True)


def _print_table(infos: list[SessionInfo], show_cwd: bool, ids: dict[str, str]) -> None:
    """The sessions as a table that never cuts a number or an id: the title and the cwd narrow
    (the cwd drops first), then the layout stacks (cli/_table.py)."""
    columns = [
        Column("Last activity", keep=True),
        Column("ID", keep=True, style="cyan"),
        Column("Title / first message", min_width=12),
        Column("Msgs", numeric=True),
        Column("Size", numeric=True),
    ]
    if show_cwd:
        columns.append(Column("Cwd", min_width=10, drop=1))
    rows = []
    for info in infos:
        moment = info.last_activity or info.modified
        when = datetime.fromtimestamp(moment.timestamp()).strftime("%Y-%m-%d %H:%M")
        shown = info.first_prompt or info.first_message  # a leading /mode is not what the session is about
        title = one_line(info.title) if info.title else one_line(shown)
        cells = [when, ids.get(info.id, info.id), title, f"{info.message_count:,}", human_size(info.size)]
        if show_cwd:
            cells.append(info.cwd)
        rows.append(Row(cells, cell_styles={2: "bold"} if info.title else {}))
    print_table(columns, rows)


@click.command(
    "list",
    epilog="\b\nExamples:\n  omp-session list\n  omp-session list --all --limit 20\n"
    "  omp-session list --cwd ~/src/app --json",
)
@click.option(
    "--cwd", "cwd", metavar="DIR", help="Sessions of the project in DIR (default: the current directory)."
)
@click.option("--all", "all_projects", is_flag=True, help="Sessions of every project.")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="Show at most N sessions.")
@json_option
@click.pass_context
def list_command(
    ctx: click.Context, cwd: str | None, all_projects: bool, limit: int | None, as_json: bool
) -> None:
    """List sessions, most recent activity first: last activity, id (its shortest unique prefix),
    title or first message, messages, size, cwd."""
    if cwd is not None and all_projects:
        raise click.UsageError("give --cwd or --all, not both")
    cli = state(ctx)
    if cli.database is None:
        require_root(cli.root)  # as search and the other store-wide commands (issue 30)
    if all_projects and cli.database is not None:
        # A shared store's point: every row, whatever machine or home filled it (issue 25).
        found = list_every_stored_session(cli.database)
    else:
        found = (
            list_all_sessions(cli.root, storage=cli.storage)
            if all_projects
            else list_sessions(cli.project_dir(cwd), storage=cli.storage)
        )
    report_skipped(getattr(found, "skipped", []))
    ordered = _by_last_activity(found)
    # Ids as their shortest prefix unique among every listed session (not only those shown).
    ids = unique_prefixes(info.id for info in ordered)
    infos = ordered[:limit] if limit is not None else ordered
    if as_json:
        emit_json([_row_json(info) for info in infos])
        return
    if not infos:
        where = "any project" if all_projects else f"{cwd or os.getcwd()} (try --all)"
        click.echo(f"No sessions for {where} under {cli.root}.", err=True)
        return
    if all_projects and cli.database is not None:
        _grouped_by_host_path(infos, ids)
        return
    _print_table(infos, True, ids)


def _grouped_by_host_path(infos: list[SessionInfo], ids: dict[str, str]) -> None:
    """One table per sessions root the rows are under (a machine, a home), the root as heading;
    the roots in the order of their newest session."""
    groups: dict[Path, list[SessionInfo]] = {}
    for info in infos:
        groups.setdefault(host_root(Path(info.path)), []).append(info)
    out = console()
    for number, (root, rows) in enumerate(groups.items()):
        if number:
            out.print()
        # soft_wrap: a long root stays one line (the terminal folds it), whole for copying.
        out.print(
            Text(f"{root} ({len(rows)} session{'s' if len(rows) != 1 else ''})", style="bold"), soft_wrap=True
        )
        _print_table(rows, True, ids)
