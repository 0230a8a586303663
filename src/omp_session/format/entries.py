"""The format version and the one entry predicate the layers share (spec §2, §3).

Entries are plain dicts at run time, exactly as in the file (lossless: unknown types and fields
survive a round trip); their shapes are documented in spec §3 (entries) and §4 (messages), not
as ``TypedDict``s, since a file may hold any shape and every reader must cope with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "CURRENT_VERSION",
    "FOREIGN_SESSION_IMPORT",
    "IMPORT_BOOKKEEPING_TYPES",
    "IMPORT_MARKER_BYTES",
    "import_origin",
    "import_origin_of",
    "is_assistant_entry",
    "is_assistant_line",
    "is_import_bookkeeping",
]

#: The session file version omp 13.19.0 writes; older files are migrated on load (spec §2.2).
CURRENT_VERSION = 3

#: The ``custom`` entries an import writes for itself, not for the reader: omp's
#: ``foreign_session_import`` marker (the leaf of every import) and the source records a lossless
#: import keeps (``claude_record``, ``claude_subagent_record``, ``codex_record``). Views hide them
#: unless asked (issue 30 #5); they never reach the model's context either way (custom entries never do).
FOREIGN_SESSION_IMPORT = "foreign_session_import"
IMPORT_BOOKKEEPING_TYPES = frozenset(
    {FOREIGN_SESSION_IMPORT, "claude_record", "claude_subagent_record", "codex_record"}
)


#: An import's marker entry as omp writes it (compact JSON): the importers' "already imported?"
#: scan and the store catalog find the marker lines of a session file by these bytes.
IMPORT_MARKER_BYTES = b'"customType":"foreign_session_import"'


def import_origin(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(source, sourcePath)`` of an import's marker entry (``foreign_session_import`` with its
    ``data``): which transcript the session was imported from; ``None`` for any other entry."""
    data = entry.get("data")
    if entry.get("customType") != FOREIGN_SESSION_IMPORT or not isinstance(data, dict):
        return None
    return import_origin_of(data)


def import_origin_of(data: Mapping[str, Any]) -> tuple[str, str]:
    """``(source, sourcePath)`` of an import marker's ``data``."""
    return str(data.get("source")), str(data.get("sourcePath"))


def is_import_bookkeeping(entry: Mapping[str, Any]) -> bool:
    """True for a ``custom`` entry of :data:`IMPORT_BOOKKEEPING_TYPES`."""
    return entry.get("type") == "custom" and entry.get("customType") in IMPORT_BOOKKEEPING_TYPES


def is_assistant_entry(entry: dict[str, Any]) -> bool:
    """A ``message`` entry holding an assistant message (what makes a new session persist, §7.2)."""
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"


def is_assistant_line(line: bytes) -> bool:
    """Whether one JSONL line is a ``message`` entry of role ``assistant`` (omp 18.3's
    ``isAssistantMessageLine``: a line starting with ``{`` that parses)."""
    if not line.startswith(b"{") or (b"assistant" not in line and b"\\u" not in line):
        return False
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(line.decode("utf-8", errors="replace"))
        except ValueError:
            return False
    return isinstance(value, dict) and is_assistant_entry(value)
