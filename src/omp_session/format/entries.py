"""The format version and the one entry predicate the layers share (spec §2, §3).

Entries are plain dicts at run time, exactly as in the file (lossless: unknown types and fields
survive a round trip); their shapes are documented in spec §3 (entries) and §4 (messages), not
as ``TypedDict``s, since a file may hold any shape and every reader must cope with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CURRENT_VERSION", "is_assistant_entry"]

#: The session file version omp 13.19.0 writes; older files are migrated on load (spec §2.2).
CURRENT_VERSION = 3


def is_assistant_entry(entry: dict[str, Any]) -> bool:
    """A ``message`` entry holding an assistant message (what makes a new session persist, §7.2)."""
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"
