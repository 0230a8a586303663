"""``omp-session push`` and ``pull``: copy sessions between the sessions root and a database.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import click

from omp_session.cli._common import EXIT_PROBLEMS, CliError, emit_json, json_option, state
from omp_session.cli._progress import progress_bar
from omp_session.tools import sync as library

EPILOG = """\b
Examples:
  omp-session --store postgresql://db.example/omp push        your files into the database
  omp-session --store postgresql://db.example/omp pull        the database's sessions into files
  omp-session --dir ./backup --store postgresql://... pull --as-root ~/.omp/agent/sessions
                                                              ... into another root

\b
A session already identical at the target is skipped; one whose target is an older copy of it
is brought up to date; one that differs otherwise is never overwritten and is reported.
Exit status 1 when anything was skipped.
"""


def _run(
    work: Callable[[library.Progress], library.SyncReport], verb: str, as_json: bool
) -> library.SyncReport:
    with progress_bar(verb) as advance:
        report = work(lambda number, total, path: advance(number, total, path.name))
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(
            f"{verb}: {len(report.copied)} copied, {len(report.updated)} updated, "
            f"{len(report.identical)} already identical, {len(report.skipped)} skipped"
        )
        for path, reason in report.skipped:
            click.echo(f"skipped {path}: {reason}")
    return report


def _as_root_option(help_text: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--as-root",
        "as_root",
        metavar="ROOT",
        type=click.Path(file_okay=False, path_type=Path),
        help=help_text,
    )


def _mapping(source: Path, target: Path) -> None:
    """Say how paths are re-rooted (stderr, so --json output stays JSON)."""
    click.echo(f"re-rooted: {os.path.abspath(source)} -> {os.path.abspath(target)}", err=True)


@click.command(epilog=EPILOG)
@_as_root_option("Name the rows under ROOT instead of --dir (<ROOT>/<project>/<name>.jsonl).")
@json_option
@click.pass_context
def push(ctx: click.Context, as_root: Path | None, as_json: bool) -> None:
    """Copy every session file under the sessions root (--dir) into the --store database.

    Each row is named by the file's absolute path (or re-rooted under --as-root) and keeps the
    file's modified time."""
    cli = state(ctx)
    database = cli.require_database("push")
    if as_root is not None:
        _mapping(cli.root, as_root)
    report = _run(
        lambda progress: library.push(cli.root, database, progress, as_root=as_root), "pushed", as_json
    )
    if report.skipped:
        ctx.exit(EXIT_PROBLEMS)


@click.command(epilog=EPILOG)
@_as_root_option("Copy the rows under ROOT (another machine's or home's root) into --dir.")
@json_option
@click.pass_context
def pull(ctx: click.Context, as_root: Path | None, as_json: bool) -> None:
    """Copy every session of the --store database under the sessions root (--dir) into files.

    Rows keep their absolute paths: to restore another root's rows into --dir, name it with
    --as-root. Each file gets its row's modified time."""
    cli = state(ctx)
    database = cli.require_database("pull")
    if as_root is not None:
        _mapping(as_root, cli.root)
    try:
        report = _run(
            lambda progress: library.pull(cli.root, database, progress, as_root=as_root), "pulled", as_json
        )
    except library.NoRowsUnderRootError as exc:
        raise CliError(str(exc)) from None
    if report.skipped:
        ctx.exit(EXIT_PROBLEMS)


__all__ = ["pull", "push"]
