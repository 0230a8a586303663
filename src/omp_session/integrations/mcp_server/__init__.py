"""``omp-session mcp``: a read-only MCP server over the omp sessions (extra ``[mcp]``).

:class:`SessionQueries` answers the questions (no ``mcp`` needed); :func:`build_server` exposes
them as MCP tools, :func:`serve_stdio` runs the server on stdin/stdout.
"""

from omp_session.integrations.mcp_server._queries import MAX_LIMIT, SessionQueries

__all__ = ["MAX_LIMIT", "SessionQueries", "build_server", "serve_stdio"]


def __getattr__(name: str) -> object:
    # The server needs the `mcp` package (extra [mcp]); the queries do not.
    if name in ("build_server", "serve_stdio"):
        from omp_session.integrations.mcp_server import _server

        return getattr(_server, name)
    raise AttributeError(name)
