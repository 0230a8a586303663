"""``omp-session push`` and ``pull``: copy sessions between the sessions root and a database.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from omp_session.cli._common import EXIT_PROBLEMS, console, emit_json, json_option, state
from omp_session.tools import sync as library

EPILOG = """\b
Examples:
  omp-session --store postgresql://db.example/omp push        your files into the database
  omp-session --store postgresql://db.example/omp pull        the database's sessions into files
  omp-session --dir ./backup --store postgresql://... pull    ... under another root

\b
A session already identical at the target is skipped; one whose target is an older copy of it
is brought up to date; one that differs otherwise is never overwritten and is reported.
Exit status 1 when anything was skipped.
"""


def _run(
    work: Callable[[library.Progress], library.SyncReport], verb: str, as_json: bool
) -> library.SyncReport:
    with Progress(
        TextColumn(f"{verb} {{task.description}}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("sessions", total=None)

        def advance(number: int, total: int, path: Path) -> None:
            bar.update(task, completed=number, total=total, description=path.name)

        report = work(advance)
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


@click.command(epilog=EPILOG)
@json_option
@click.pass_context
def push(ctx: click.Context, as_json: bool) -> None:
    """Copy every session file under the sessions root (--dir) into the --store database."""
    cli = state(ctx)
    database = cli.require_database("push")
    report = _run(lambda progress: library.push(cli.root, database, progress), "pushed", as_json)
    if report.skipped:
        ctx.exit(EXIT_PROBLEMS)


@click.command(epilog=EPILOG)
@json_option
@click.pass_context
def pull(ctx: click.Context, as_json: bool) -> None:
    """Copy every session of the --store database under the sessions root (--dir) into files."""
    cli = state(ctx)
    database = cli.require_database("pull")
    report = _run(lambda progress: library.pull(cli.root, database, progress), "pulled", as_json)
    if report.skipped:
        ctx.exit(EXIT_PROBLEMS)


__all__ = ["pull", "push"]
