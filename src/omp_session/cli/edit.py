"""``omp-session fork`` and ``omp-session label``: the two commands that add to the store.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import click

from omp_session.cli._common import session_argument, state
from omp_session.tools.operations import fork_session, set_label

__all__ = ["fork", "label"]


@click.command(
    epilog="\b\nExamples:\n  omp-session fork 15d0c6a0 --leaf a0000003\n  omp-session fork 15d0c6a0",
)
@session_argument()
@click.option("--leaf", "leaf_id", metavar="ID", help="Last entry of the branch to copy (default: the leaf).")
@click.pass_context
def fork(ctx: click.Context, session: str, leaf_id: str | None) -> None:
    """Copy the branch ending at --leaf into a new session file; print its path.

    Like omp's /branch (createBranchedSession): the new session sits beside SESSION, has a new
    id and parentSession = SESSION's path. SESSION itself is not changed.
    """
    cli = state(ctx)
    click.echo(fork_session(cli.resolve(session), leaf_id, storage=cli.storage))


@click.command(
    epilog='\b\nExamples:\n  omp-session label 15d0c6a0 u0000001 "first try"\n'
    "  omp-session label 15d0c6a0 u0000001 --clear",
)
@session_argument()
@click.argument("entry_id", metavar="ID")
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the label of ID.")
@click.pass_context
def label(ctx: click.Context, session: str, entry_id: str, text: str | None, clear: bool) -> None:
    """Set the label of entry ID in SESSION to TEXT (or remove it with --clear).

    Appends a label entry, as omp does; ID may be a unique id prefix.
    """
    if clear == (text is not None):
        raise click.UsageError("give TEXT or --clear" if not clear else "give TEXT or --clear, not both")
    if text is not None and not text.strip():
        raise click.UsageError("TEXT is empty; use --clear to remove a label")
    cli = state(ctx)
    target, _entry = set_label(cli.resolve(session), entry_id, None if clear else text, storage=cli.storage)
    click.echo(f"cleared the label of {target}" if clear else f"labelled {target}: {text}")
