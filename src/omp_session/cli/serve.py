"""``omp-session serve``: the read-only web viewer (see docs/viewer.md).

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from omp_session.cli._common import CliError, state
from omp_session.cli.secrets import print_report, redaction_options, with_redaction_options
from omp_session.store.paths import blobs_dir as configured_blobs_dir

__all__ = ["EPILOG", "serve"]

EPILOG = """\b
Examples:
  omp-session serve                          your sessions at http://127.0.0.1:8765/
  omp-session serve --open                   ... and open a browser tab
  omp-session serve --dir samples/sessions   any directory laid out like omp's sessions root
  omp-session serve --port 0                 any free port (the URL is printed)
  omp-session --store postgresql://host/db serve   the sessions of a database
  omp-session serve --redact --anonymize-paths      redacted copies, to show on a screen share
"""


def _blobs_for(root: Path) -> Path:
    sibling = root.parent / "blobs"  # omp keeps blobs/ beside sessions/
    return sibling if sibling.is_dir() else configured_blobs_dir()


@click.command(epilog=EPILOG)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Sessions root to show (default: the global --dir, else omp's sessions root).",
)
@click.option(
    "--blobs",
    "blobs",
    type=click.Path(file_okay=False, path_type=Path),
    help="Blob store for images (default: blobs/ beside the sessions root, else omp's).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; keep it local.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser tab.")
@click.option(
    "--agents/--no-agents",
    default=True,
    show_default=True,
    help="Also show Claude Code, Codex and pi sessions (~/.claude, ~/.codex, ~/.pi), converted on the fly.",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Serve redacted copies of the sessions (secrets masked, opaque payloads dropped), with a banner.",
)
@with_redaction_options
@click.pass_context
def serve(
    ctx: click.Context,
    directory: Path | None,
    blobs: Path | None,
    host: str,
    port: int,
    open_browser: bool,
    agents: bool,
    redact: bool,
    anonymize_paths: bool,
    no_omp_config: bool,
) -> None:
    """Browse sessions in a web browser: a local viewer with the session tree.

    Other agents' sessions are shown read-only beside omp's; the one write is the "Import into
    omp" button of such a session (a guarded POST). The server binds to 127.0.0.1 unless --host
    says otherwise.
    """
    from omp_session.importers import SOURCES
    from omp_session.importers.stores import make_store
    from omp_session.web.server import serve as run_server  # the web stack loads only for this command

    root = directory if directory is not None else state(ctx).root
    if state(ctx).database is None and not root.is_dir():
        raise CliError(f"{root}: no such directory")
    if port == 0:
        port = _free_port(host)
    elif not _can_bind(host, port):  # say so in one line, before the URL and not as a uvicorn traceback
        raise CliError(f"port {port} on {host} is already in use; pick another with --port (0: any free one)")
    blobs_dir = blobs if blobs is not None else _blobs_for(root)
    if anonymize_paths and not redact:
        raise CliError("--anonymize-paths goes with --redact")
    if redact:
        if state(ctx).database is not None:
            raise CliError("serve --redact reads session files; it does not serve a database")
        _serve_redacted(root, blobs_dir, host, port, open_browser, anonymize_paths, no_omp_config, run_server)
        return
    database = state(ctx).database
    if database is not None:  # the banner below names only the paths (issue 30): say where they live
        click.echo(f"sessions from {database.describe()} (paths under {root})", err=True)
    run_server(
        root,
        blobs_dir,
        host=host,
        port=port,
        open_browser=open_browser,
        announce=lambda line: click.echo(line, err=True),
        foreign_stores=[make_store(source) for source in SOURCES] if agents else [],
        storage=database,
    )


def _serve_redacted(
    root: Path,
    blobs_dir: Path,
    host: str,
    port: int,
    open_browser: bool,
    anonymize_paths: bool,
    no_omp_config: bool,
    run_server: Callable[..., None],
) -> None:
    """Serve redacted copies of every session under ``root`` (made once, in a private temporary
    directory removed on exit); other agents' sessions are not shown."""
    import tempfile

    from omp_session.tools.session_redaction import redact_tree

    options = redaction_options(anonymize_paths=anonymize_paths, no_omp_config=no_omp_config)
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="omp-session-redacted-") as scratch:
        target = Path(scratch) / "sessions"
        target.mkdir()
        report, count = redact_tree(root, target, options, warnings)
        print_report(report, list(dict.fromkeys(warnings)))
        lines = [f"{count} session{'s' if count != 1 else ''}", *report.summary_lines()]
        run_server(
            target,
            blobs_dir,
            host=host,
            port=port,
            open_browser=open_browser,
            announce=lambda line: click.echo(line, err=True),
            foreign_stores=[],
            banner_lines=lines,
        )


def _can_bind(host: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
