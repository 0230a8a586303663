"""``omp-session mcp``: the read-only MCP server on stdin/stdout (extra ``[mcp]``; see docs/agents.md).

Internal module (a command of ``omp-session``, which is the interface); not part of the public API.
"""

from __future__ import annotations

from pathlib import Path

import click

from omp_session.cli._common import require_root, state

__all__ = ["mcp_command"]


@click.command(
    "mcp",
    epilog="\b\nExamples:\n  omp-session mcp"
    "\n  omp-session --dir ~/.omp/agent/sessions mcp --active-seconds 120"
    "\n  claude mcp add omp-sessions -- omp-session mcp",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Sessions root to serve (default: the global --dir, else omp's sessions root).",
)
@click.option(
    "--active-seconds",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="A session changed this recently counts as still being written (exclude_active leaves it out).",
)
@click.pass_context
def mcp_command(ctx: click.Context, directory: Path | None, active_seconds: float) -> None:
    """Serve the sessions to an agent over MCP (stdio): list, search, read a branch, the context the
    model saw at an entry, usage. Read-only: nothing is written."""
    from omp_session.integrations.mcp_server._server import serve_stdio  # needs the [mcp] extra

    root = directory if directory is not None else state(ctx).root
    require_root(root)
    serve_stdio(root, active_seconds, state(ctx).storage)
