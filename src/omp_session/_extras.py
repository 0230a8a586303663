"""Internal: which extra installs each optional dependency, and the one line that says so.

A leaf both the console script (``_launcher.py``) and the command line (``cli/``) read, so that
neither imports the other.
"""

from __future__ import annotations

__all__ = ["EXTRA_OF_MODULE", "missing_extra_message"]

#: Top-level modules of the optional dependencies, and the extra that installs each.
EXTRA_OF_MODULE = {
    "click": "cli",
    "rich": "cli",
    "starlette": "web",
    "uvicorn": "web",
    "jinja2": "web",
    "markupsafe": "web",
    "markdown_it": "web",
    "nh3": "web",
    "pygments": "web",
    "textual": "tui",
    "mcp": "mcp",
    "mcp_types": "mcp",
    "agents": "openai-agents",
    "claude_agent_sdk": "claude-agent-sdk",
    "pydantic_ai": "pydantic-ai",
    "duckdb": "analytics",
}


def missing_extra_message(error: ImportError, needed_by: str) -> str | None:
    """The line telling what to install when ``error`` is a missing optional dependency, else ``None``."""
    module = (error.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    return (
        f"{needed_by} needs the [{extra}] extra ({module} is not installed): "
        f"pip install 'omp-session[{extra}]'"
    )
