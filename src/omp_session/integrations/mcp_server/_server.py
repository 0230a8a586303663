"""The MCP tools over :class:`SessionQueries` (needs the ``mcp`` package, extra ``[mcp]``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from omp_session import __version__
from omp_session.errors import SessionError
from omp_session.integrations.mcp_server._queries import SessionQueries
from omp_session.store import SessionStorage

__all__ = ["build_server", "serve_stdio"]

_INSTRUCTIONS = (
    "Read-only access to past omp coding-agent sessions: list and search them, read one branch around"
    " an entry, see the exact context the model was given at an entry, and sum token usage and cost."
    " Lists are paged (pass nextCursor back as cursor); long texts are cut (truncated: true)."
)
_T = TypeVar("_T")


def _answer(call: Callable[[], _T]) -> _T:
    """Run one query; a bad session, entry or argument becomes the tool's error message."""
    try:
        return call()
    except (SessionError, ValueError, OSError) as error:
        raise ToolError(str(error)) from error


_READ_ONLY = mcp_types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


def build_server(queries: SessionQueries) -> MCPServer[Any]:
    """An MCP server whose six tools answer from ``queries``; nothing it does writes."""
    server: MCPServer[Any] = MCPServer(name="omp-session", version=__version__, instructions=_INSTRUCTIONS)

    @server.tool(annotations=_READ_ONLY)
    def list_sessions(
        project: str | None = None, limit: int = 20, cursor: str | None = None, exclude_active: bool = False
    ) -> dict[str, Any]:
        """List sessions, newest first. project: a working directory to list only its sessions.
        exclude_active: leave out sessions still being written (changed within the last minute)."""
        return _answer(lambda: queries.list_sessions(project, limit, cursor, exclude_active))

    @server.tool(annotations=_READ_ONLY)
    def search_sessions(
        query: str,
        regex: bool = False,
        project: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        exclude_active: bool = False,
    ) -> dict[str, Any]:
        """Find entries whose text contains query (every word, any order; or a regular expression
        with regex=true). Each hit gives session, entry id, role, branch and a snippet."""
        return _answer(lambda: queries.search_sessions(query, regex, project, limit, cursor, exclude_active))

    @server.tool(annotations=_READ_ONLY)
    def session_overview(session: str) -> dict[str, Any]:
        """One session (id, id prefix or path): cwd, title, models, labels, current leaf, token and
        cost totals per branch."""
        return _answer(lambda: queries.session_overview(session))

    @server.tool(annotations=_READ_ONLY)
    def get_messages(
        session: str, entry: str | None = None, before: int = 10, after: int = 10, max_chars: int = 2000
    ) -> dict[str, Any]:
        """The entries of one branch around entry (default: the current leaf): up to before entries
        before it and after entries after it on the branch through it."""
        return _answer(lambda: queries.get_messages(session, entry, before, after, max_chars))

    @server.tool(annotations=_READ_ONLY)
    def context_at(
        session: str, entry: str, llm: bool = True, offset: int = 0, limit: int = 50, max_chars: int = 4000
    ) -> dict[str, Any]:
        """The exact context the model was given at entry (compactions and branch summaries
        applied), as LLM messages (llm=false: omp's agent messages). Paged by message."""
        return _answer(lambda: queries.context_at(session, entry, llm, offset, limit, max_chars))

    @server.tool(annotations=_READ_ONLY)
    def usage_summary(
        session: str | None = None,
        view: str = "session",
        project: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Tokens and cost of one session, or of all (of project), by view: daily, monthly, session,
        model or project."""
        return _answer(lambda: queries.usage_summary(session, view, project, limit, cursor))

    return server


def serve_stdio(root: Path, active_seconds: float = 60.0, storage: SessionStorage | None = None) -> None:
    """Serve the sessions under ``root`` (files, else rows of ``storage``) over stdin/stdout until
    the client closes the pipe."""
    build_server(SessionQueries(root=root, active_seconds=active_seconds, storage=storage)).run("stdio")
