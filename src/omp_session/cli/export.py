"""``omp-session export``: a branch as Markdown, a self-contained HTML page, or a new session file.

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from omp_session.cli._common import CliError, leaf_option, session_argument, state
from omp_session.cli._progress import progress_bar
from omp_session.cli.secrets import print_report, redaction_options, with_redaction_options
from omp_session.export.files import write_atomically
from omp_session.export.jsonl import export_jsonl
from omp_session.export.markdown import export_markdown
from omp_session.format.codec import DISPLAY_ERRORS
from omp_session.store import SessionStorage
from omp_session.tools.session_redaction import RedactionOptions, make_redactor, redacted_copy, session_cwds

__all__ = ["export"]


def _text(
    fmt: str,
    path: Path,
    leaf_id: str | None,
    events: bool,
    storage: SessionStorage | None,
    blobs_of: Path | None = None,
) -> str:
    """The Markdown or HTML export of ``path``, with the progress bar (``blobs_of``: the session
    whose blobs an HTML export of a redacted copy inlines)."""
    with progress_bar("exporting") as advance:

        def progress(done: int, total: int) -> None:
            advance(done, total, "entries")

        if fmt == "md":
            return export_markdown(path, leaf_id, events=events, progress=progress, storage=storage)
        # Imported here: the HTML exporter needs the [web] extra; without it the command group says so.
        from omp_session.export.html import blobs_dir_for, export_html

        # A big session's entries are rendered by up to four processes (the command has no threads
        # of its own to copy; the bar's refresh thread only draws in this one).
        return export_html(
            path,
            leaf_id,
            blobs_dir=blobs_dir_for(blobs_of) if blobs_of is not None else None,
            progress=progress,
            workers=min(os.cpu_count() or 1, 4),
            storage=storage,
        )


def _deliver(text: str, output: Path | None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    write_atomically(output, text.encode("utf-8", DISPLAY_ERRORS))
    click.echo(f"wrote {output}", err=True)


@click.command(
    epilog="\b\nExamples:\n  omp-session export 15d0c6a0 --format md > session.md\n"
    "  omp-session export 15d0 -f html -o session.html\n"
    "  omp-session export 15d0 -f jsonl --leaf a0000003\n"
    "  omp-session export 15d0 -f html --redact --anonymize-paths -o share.html",
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
@click.option(
    "--redact",
    is_flag=True,
    help="Mask secrets (omp's secrets.yml, omp's and our patterns) and drop opaque payloads "
    "(docs/sharing.md).",
)
@with_redaction_options
@click.pass_context
def export(
    ctx: click.Context,
    session: str,
    fmt: str,
    output: Path | None,
    leaf_id: str | None,
    events: bool,
    redact: bool,
    anonymize_paths: bool,
    no_omp_config: bool,
) -> None:
    """Export the current branch of SESSION (or the branch to --leaf).

    jsonl writes a new valid session file (new id, parentSession = the source) that omp can
    resume; it never overwrites an existing file and prints the new path.
    """
    cli = state(ctx)
    path = cli.resolve(session)
    if anonymize_paths and not redact:
        raise CliError("--anonymize-paths goes with --redact")
    if redact:
        _export_redacted(
            path,
            fmt,
            output,
            leaf_id,
            events,
            redaction_options(anonymize_paths=anonymize_paths, no_omp_config=no_omp_config),
        )
        return
    if fmt == "jsonl":
        click.echo(export_jsonl(path, output, leaf_id, storage=cli.storage))
        return
    _deliver(_text(fmt, path, leaf_id, events, cli.storage), output)


def _export_redacted(
    path: Path, fmt: str, output: Path | None, leaf_id: str | None, events: bool, options: RedactionOptions
) -> None:
    """Export the redacted copy of ``path`` (every format reads that one copy, so every output goes
    through the one engine), then say what was masked."""
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="omp-session-redact-") as scratch:
        copy, report = redacted_copy(path, Path(scratch), options, warnings)
        if fmt == "jsonl":
            parent = os.path.abspath(path)
            if options.anonymize_paths:
                parent = make_redactor(options, session_cwds(path.read_bytes())).redact_text(parent)
            # (the redacted copy is a file, wherever the session lives)
            click.echo(
                export_jsonl(copy, output, leaf_id, stands_for=path, parent_session=parent, storage=None)
            )
        else:
            _deliver(_text(fmt, copy, leaf_id, events, None, blobs_of=path), output)
    print_report(report, list(dict.fromkeys(warnings)))
