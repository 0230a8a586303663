"""``omp-session export``: a branch as Markdown, a self-contained HTML page, or a new session file.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from pathlib import Path

import click

from omp_session.cli._common import leaf_option, session_argument, state
from omp_session.export.files import write_atomically
from omp_session.export.jsonl import export_jsonl
from omp_session.export.markdown import export_markdown
from omp_session.format.codec import DISPLAY_ERRORS

__all__ = ["export"]


def _html(path: Path, leaf_id: str | None) -> str:
    # Imported here: the HTML exporter needs the [web] extra; without it the command group says so.
    from omp_session.export.html import export_html

    return export_html(path, leaf_id)


@click.command(
    epilog="\b\nExamples:\n  omp-session export 15d0c6a0 --format md > session.md\n"
    "  omp-session export 15d0 -f html -o session.html\n"
    "  omp-session export 15d0 -f jsonl --leaf a0000003",
)
@session_argument()
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["md", "html", "jsonl"]),
    default="md",
    show_default=True,
    help="md: Markdown; html: one self-contained page; jsonl: a new session file.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here (md/html: default stdout; jsonl: default a new file beside the source).",
)
@leaf_option
@click.option("--events", is_flag=True, help="md: include model, thinking and other state changes.")
@click.pass_context
def export(
    ctx: click.Context, session: str, fmt: str, output: Path | None, leaf_id: str | None, events: bool
) -> None:
    """Export the current branch of SESSION (or the branch to --leaf).

    jsonl writes a new valid session file (new id, parentSession = the source) that omp can
    resume; it never overwrites an existing file and prints the new path.
    """
    path = state(ctx).resolve(session)
    if fmt == "jsonl":
        click.echo(export_jsonl(path, output, leaf_id))
        return
    text = export_markdown(path, leaf_id, events=events) if fmt == "md" else _html(path, leaf_id)
    if output is None:
        click.echo(text, nl=False)
        return
    write_atomically(output, text.encode("utf-8", DISPLAY_ERRORS))
    click.echo(f"wrote {output}", err=True)
