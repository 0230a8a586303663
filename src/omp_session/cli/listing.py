"""``omp-session list``: sessions newest first, as a table or JSON.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from omp_session.cli._common import console, emit_json, human_size, json_option, state
from omp_session.tools.listing import SessionInfo, list_all_sessions, list_every_stored_session, list_sessions
from omp_session.tools.summary import one_line
from omp_session.tools.sync import host_root

__all__ = ["list_command"]


def _row_json(info: SessionInfo) -> dict[str, Any]:
    data = info.to_dict()
    data.pop("allMessagesText", None)  # the whole conversation: too big for a listing
    data["size"] = info.size
    return data


def _table(infos: list[SessionInfo], show_cwd: bool) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False, expand=True)
    # Fixed columns keep their width; the title and cwd share what is left of the terminal.
    table.add_column("Modified", no_wrap=True, min_width=16)
    table.add_column("ID", no_wrap=True, style="cyan", min_width=8)
    table.add_column("Title / first message", ratio=3, no_wrap=True, overflow="ellipsis")
    table.add_column("Msgs", justify="right", no_wrap=True, min_width=4)
    table.add_column("Size", justify="right", no_wrap=True, min_width=8)
    if show_cwd:
        table.add_column("Cwd", ratio=2, no_wrap=True, overflow="ellipsis")
    for info in infos:
        modified = datetime.fromtimestamp(info.modified.timestamp()).strftime("%Y-%m-%d %H:%M")
        shown = info.first_prompt or info.first_message  # a leading /mode is not what the session is about
        title = Text(one_line(info.title), style="bold") if info.title else Text(one_line(shown))
        row: list[Any] = [modified, info.id[:8], title, str(info.message_count), human_size(info.size)]
        if show_cwd:
            row.append(info.cwd)
        table.add_row(*row)
    return table


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
    """List sessions, newest first: modified, id, title or first message, messages, size, cwd."""
    if cwd is not None and all_projects:
        raise click.UsageError("give --cwd or --all, not both")
    cli = state(ctx)
    if all_projects and cli.database is not None:
        # A shared store's point: every row, whatever machine or home filled it (issue 25).
        found = list_every_stored_session(cli.database)
    else:
        found = list_all_sessions(cli.root) if all_projects else list_sessions(cli.project_dir(cwd))
    for path, reason in getattr(found, "skipped", []):
        click.echo(f"omp-session: skipped {path}: {reason}", err=True)
    skipped = len(getattr(found, "skipped", []))
    if skipped:
        click.echo(f"omp-session: {skipped} file{'s' if skipped != 1 else ''} skipped", err=True)
    infos = found[:limit] if limit is not None else found
    if as_json:
        emit_json([_row_json(info) for info in infos])
        return
    if not infos:
        where = "any project" if all_projects else f"{cwd or os.getcwd()} (try --all)"
        click.echo(f"No sessions for {where} under {cli.root}.", err=True)
        return
    if all_projects and cli.database is not None:
        _grouped_by_host_path(infos)
        return
    console().print(_table(infos, show_cwd=True))


def _grouped_by_host_path(infos: list[SessionInfo]) -> None:
    """One table per sessions root the rows are under (a machine, a home), the root as heading;
    the roots in the order of their newest session."""
    groups: dict[Path, list[SessionInfo]] = {}
    for info in infos:
        groups.setdefault(host_root(Path(info.path)), []).append(info)
    out = console()
    for number, (root, rows) in enumerate(groups.items()):
        if number:
            out.print()
        out.print(Text(f"{root} ({len(rows)} session{'s' if len(rows) != 1 else ''})", style="bold"))
        out.print(_table(rows, show_cwd=True))
