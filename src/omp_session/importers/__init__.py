"""Importers: Claude Code, Codex and pi sessions as omp sessions (docs/importers.md).

>>> from omp_session.importers import store_for
>>> store = store_for("claude")            # ~/.claude, or $CLAUDE_CONFIG_DIR
>>> # infos = store.list(); manager = store.convert(infos[0]).to_manager()
"""

from __future__ import annotations

from omp_session.importers.base import (
    AGENT_NAMES,
    SOURCES,
    ConvertedSession,
    ForeignSessionInfo,
    ForeignSessionStore,
    Source,
)
from omp_session.importers.claude import ClaudeSessionStore

__all__ = [
    "AGENT_NAMES",
    "SOURCES",
    "ClaudeSessionStore",
    "ConvertedSession",
    "ForeignSessionInfo",
    "ForeignSessionStore",
    "Source",
]
