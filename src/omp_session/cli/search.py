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
    report_skipped,
    require_root,
    state,
)
from omp_session.tools.catalog import Catalog, RankedHit
from omp_session.tools.catalog_search import SearchFilter, search_store
from omp_session.tools.search import SearchHit, compile_query

__all__ = ["PROGRESS_MIN_FILES", "search"]

#: Below this many files the scan is quick and a progress bar would only flicker.
PROGRESS_MIN_FILES = 20


def _hits(
    paths: list[Path], query: str, regex: bool, case_sensitive: bool, catalog: Catalog
) -> Iterator[SearchHit]:
    pattern = compile_query(query, regex=regex, case_sensitive=case_sensitive)
    errors: list[tuple[str, str]] = []
    # Answered from the catalog's text index (the same hits as reading every session).
    if len(paths) >= PROGRESS_MIN_FILES and is_terminal(sys.stderr):
        with Progress(console=console(stderr=True), transient=True) as progress:
            task = progress.add_task("searching", total=len(paths))
            yield from search_store(
                paths,
                pattern,
                query,
                regex=regex,
                catalog=catalog,
                progress=lambda *_: progress.advance(task),
                errors=errors,
            )
    else:
        yield from search_store(paths, pattern, query, regex=regex, catalog=catalog, errors=errors)
    report_skipped(errors)


def _ranked_line(hit: RankedHit) -> Text:
    text = Text("  ")
    text.append(hit.entry_id, style="cyan").append(f" {hit.role}", style="bold")
    if hit.timestamp:
        text.append(f" {hit.timestamp[:16]}", style="dim")
    text.append("  ")
    for position, piece in enumerate(hit.snippet.replace("\n", " ").split("\x02")):
        found, _, rest = piece.partition("\x03")
        if position:  # every piece after the first starts with a match
            text.append(found, style="bold reverse").append(rest)
        else:
            text.append(piece)
    return text


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
@click.option(
    "--rank",
    is_flag=True,
    help='Best matches first (bm25) from the catalog\'s index: QUERY is words and "phrases"'
    " (each matched as a substring of 3+ characters), AND/OR/NOT.",
)
@click.option(
    "--role", "roles", multiple=True, metavar="ROLE", help="Only entries of ROLE (user, assistant, ...)."
)
@click.option("--tool", metavar="NAME", help="Only tool calls and results of the tool NAME.")
@click.option("--model", metavar="TEXT", help="Only assistant messages of a model containing TEXT.")
@click.option("--since", metavar="DATE", help="Only entries at or after DATE (ISO, UTC).")
@click.option("--until", metavar="DATE", help="Only entries before DATE (ISO, UTC).")
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
    rank: bool,
    roles: tuple[str, ...],
    tool: str | None,
    model: str | None,
    since: str | None,
    until: str | None,
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
    with Catalog(storage=cli.storage) as catalog:
        if rank:
            _print_ranked(catalog, paths, query, roles, tool, model, since, until, limit, as_json)
            return
        keep = SearchFilter(catalog, roles=roles, tool=tool, model=model, since=since, until=until)
        found: list[SearchHit] = []
        stopped = False
        for hit in _hits(paths, query, regex, case_sensitive, catalog):
            if keep.active and not keep.keeps(hit):
                continue
            found.append(hit)
            if limit is not None and len(found) >= limit:
                stopped = True
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
    hits = f"{len(found)} hit{'s' if len(found) != 1 else ''}"
    if stopped:  # "50 hits in 70 session files" read as all there were (issue 30)
        click.echo(
            f"the first {hits} in {len(paths)} session files: "
            f"--limit {limit} stopped the search, more may follow",
            err=True,
        )
    else:
        click.echo(f"{hits} in {len(paths)} session files", err=True)
    if not all_projects and not found:
        where = cwd if cwd is not None else "this directory"
        click.echo(f"(only the sessions of {where} were searched; --all searches every project)", err=True)


def _print_ranked(
    catalog: Catalog,
    paths: list[Path],
    query: str,
    roles: tuple[str, ...],
    tool: str | None,
    model: str | None,
    since: str | None,
    until: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    try:
        hits = catalog.ranked(
            paths, query, roles=roles, tool=tool, model=model, since=since, until=until, limit=limit or 20
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    report_skipped(
        (path, "not in the catalog this time (busy or unwritable); not searched by --rank")
        for path in sorted(catalog.uncatalogued)
    )
    if as_json:
        emit_json([hit.to_dict() for hit in hits])
        return
    out = console()
    for hit in hits:
        out.print(Text(hit.path, style="bold"), no_wrap=True, overflow="ellipsis")
        out.print(_ranked_line(hit), no_wrap=True, overflow="ellipsis")
    click.echo(f"{len(hits)} hit{'s' if len(hits) != 1 else ''} in {len(paths)} session files", err=True)
