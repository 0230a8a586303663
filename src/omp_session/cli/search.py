"""``omp-session search``: full-text search across sessions, aware of branches.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click
from rich.progress import Progress
from rich.text import Text

from omp_session.cli._common import (
    console,
    emit_json,
    is_terminal,
    json_option,
    require_root,
    skipped,
    state,
)
from omp_session.tools.search import SearchHit, compile_query, search_sessions

__all__ = ["PROGRESS_MIN_FILES", "search"]

#: Below this many files the scan is quick and a progress bar would only flicker.
PROGRESS_MIN_FILES = 20


def _hits(paths: list[Path], query: str, regex: bool, case_sensitive: bool) -> Iterator[SearchHit]:
    pattern = compile_query(query, regex=regex, case_sensitive=case_sensitive)
    errors: list[tuple[str, str]] = []
    if len(paths) >= PROGRESS_MIN_FILES and is_terminal(sys.stderr):
        with Progress(console=console(stderr=True), transient=True) as progress:
            task = progress.add_task("searching", total=len(paths))
            yield from search_sessions(
                paths, pattern, progress=lambda *_: progress.advance(task), errors=errors
            )
    else:
        yield from search_sessions(paths, pattern, errors=errors)
    for path, reason in errors:
        skipped(path, reason)


def _line(hit: SearchHit) -> Text:
    where = "current" if hit.on_current_branch else f"abandoned → {hit.branch_leaf_id}"
    text = Text("  ")
    text.append(hit.entry_id, style="cyan").append(f" {hit.role}", style="bold")
    text.append(f" [{where}]", style="dim" if hit.on_current_branch else "yellow")
    text.append("  ")
    snippet = Text(hit.snippet)
    snippet.stylize("bold reverse", hit.match_start, hit.match_end)
    return text.append_text(snippet)


@click.command(
    epilog='\b\nExamples:\n  omp-session search "merge sort"\n'
    "  omp-session search 'fix(ed)? the (build|tests)' --regex --all\n"
    "  omp-session search TODO --cwd ~/src/app --json",
)
@click.argument("query")
@click.option("--regex", "-e", is_flag=True, help="QUERY is a Python regular expression.")
@click.option("--case-sensitive", "-s", is_flag=True, help="Match case (default: ignore case).")
@click.option("--all", "all_projects", is_flag=True, help="Search every project (default: the current one).")
@click.option("--cwd", metavar="DIR", help="Search the sessions of the project in DIR.")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="Stop after N hits.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    regex: bool,
    case_sensitive: bool,
    all_projects: bool,
    cwd: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Search the text of every message: user, assistant, thinking, tool calls and results,
    commands, files and summaries.

    Each hit names the session and entry, and says whether the entry is on the current branch
    or on an abandoned one (and which branch tip it leads to).
    """
    if all_projects and cwd is not None:
        raise click.UsageError("give --all or --cwd, not both")
    if not query.strip():
        raise click.UsageError("give a QUERY with something to look for (an empty one matches everything)")
    compile_query(query, regex=regex, case_sensitive=case_sensitive)  # a bad pattern is reported first
    cli = state(ctx)
    require_root(cli.root)
    paths = cli.session_files(all_projects=all_projects, cwd=cwd)
    found: list[SearchHit] = []
    for hit in _hits(paths, query, regex, case_sensitive):
        found.append(hit)
        if limit is not None and len(found) >= limit:
            break
    if as_json:
        emit_json([hit.to_dict() for hit in found])
        return
    out = console()
    current_path = None
    for hit in found:
        if hit.path != current_path:
            current_path = hit.path
            out.print(Text(f"{hit.session_id}  {hit.path}", style="bold"), no_wrap=True, overflow="ellipsis")
        out.print(_line(hit), no_wrap=True, overflow="ellipsis")
    click.echo(f"{len(found)} hit{'s' if len(found) != 1 else ''} in {len(paths)} session files", err=True)
    if not all_projects and not found:
        where = cwd if cwd is not None else "this directory"
        click.echo(f"(only the sessions of {where} were searched; --all searches every project)", err=True)
