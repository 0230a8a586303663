"""One-line summaries of entries, for the tree view, search results and event items.

>>> entry_summary({"type": "message", "message": {"role": "user", "content": "hello\\nworld"}})
EntrySummary(kind='user', text='hello world')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from omp_session.format.ids import iso_to_ms, ms_to_datetime

__all__ = ["EntrySummary", "display_time", "entry_summary", "event_text", "message_text", "one_line"]

_SPACES = re.compile(r"\s+")


class EntrySummary(NamedTuple):
    """What an entry is (``user``, ``assistant``, ``bash``, ``compaction``, …) and a one-line text."""

    kind: str
    text: str


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space.

    With ``limit``, cut to at most ``limit`` characters, ending in ``…`` when cut.
    """
    flat = _SPACES.sub(" ", text).strip()
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)].rstrip() + "…"
    return flat


def display_time(iso: str | None) -> str:
    """``2025-06-02T14:05:07.000Z`` → ``2025-06-02 14:05:07 UTC`` (unparseable text is returned as is)."""
    moment = ms_to_datetime(iso_to_ms(iso))
    if moment is None:
        return iso or ""
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def message_text(message: Mapping[str, Any]) -> str:
    """String content, or the text blocks joined by a space (what ``list`` shows, spec §6.9)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return " ".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))


def _names(values: Any) -> str:
    return ", ".join(v for v in values if isinstance(v, str)) if isinstance(values, list) else ""


def event_text(entry: Mapping[str, Any]) -> str:
    """A one-line description of a state entry (model, thinking, mode, …) or of an unknown type."""
    kind = entry.get("type")
    if kind == "model_change":
        role = entry.get("role")
        model = _str(entry.get("model")) or f"{_str(entry.get('provider'))}/{_str(entry.get('modelId'))}"
        return f"model {model}" + (f" ({role})" if isinstance(role, str) else "")
    if kind == "thinking_level_change":
        return f"thinking {entry.get('thinkingLevel') or 'off'}"
    if kind == "service_tier_change":
        return f"service tier {entry.get('serviceTier') or 'cleared'}"
    if kind == "mode_change":
        return f"mode {_str(entry.get('mode'))}"
    if kind == "mcp_tool_selection":
        return f"MCP tools: {_names(entry.get('selectedToolNames'))}"
    if kind == "ttsr_injection":
        return f"rules injected: {_names(entry.get('injectedRules'))}"
    if kind == "reset_boundary":
        return "/clear: the model context starts after this"
    if kind == "title_change":
        return f"title → {_str(entry.get('title'))}"
    if kind == "model_usage":
        model = f"{_str(entry.get('provider'))}/{_str(entry.get('model'))}"
        return (
            f"model usage: {_str(entry.get('purpose'))} · {model} {usage_text(entry.get('usage'))}".rstrip()
        )
    if kind == "credential_pin":
        digest = _str(entry.get("hash"))
        return f"credential pinned for {_str(entry.get('provider'))} ({digest[:8]}…)"
    if kind == "session_init":
        return f"sub-agent session: {_str(entry.get('task'))}"
    if kind == "custom":
        return f"custom entry {_str(entry.get('customType'))}"
    if kind == "label":
        label, target = entry.get("label"), _str(entry.get("targetId"))
        return (
            f"label {target} = {label!r}" if isinstance(label, str) and label else f"label {target} cleared"
        )
    return f"{kind} entry"


def _tool_calls(content: Any) -> list[str]:
    blocks = content if isinstance(content, list) else []
    return [
        _str(block.get("name")) or "?"
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "toolCall"
    ]


def _assistant(message: Mapping[str, Any]) -> str:
    text = message_text(message)
    calls = _tool_calls(message.get("content"))
    pieces = [text] if text else []
    if calls:
        pieces.append("→ " + ", ".join(calls))
    if message.get("stopReason") in ("error", "aborted"):
        pieces.append(f"[{message['stopReason']}: {_str(message.get('errorMessage'))}]".replace(": ]", "]"))
    return " ".join(pieces)


def _message_summary(message: Mapping[str, Any]) -> EntrySummary:
    role = message.get("role")
    if role == "assistant":
        return EntrySummary("assistant", _assistant(message))
    if role == "toolResult":
        mark = "error" if message.get("isError") else "ok"
        return EntrySummary("tool result", f"{_str(message.get('toolName'))} {mark}: {message_text(message)}")
    if role == "bashExecution":
        code = message.get("exitCode")
        status = f" (exit {code})" if isinstance(code, int) else ""
        return EntrySummary("bash", f"$ {_str(message.get('command'))}{status}")
    if role == "pythonExecution":
        return EntrySummary("python", f">>> {_str(message.get('code'))}")
    if role == "fileMention":
        files = message.get("files")
        paths = [_str(f.get("path")) for f in files if isinstance(f, dict)] if isinstance(files, list) else []
        return EntrySummary("files", ", ".join(paths))
    if role in ("custom", "hookMessage"):
        return EntrySummary("custom", f"{_str(message.get('customType'))}: {message_text(message)}")
    if role in ("branchSummary", "compactionSummary"):
        kind = "branch summary" if role == "branchSummary" else "compaction"
        return EntrySummary(kind, _str(message.get("summary")))
    return EntrySummary(_str(role) or "message", message_text(message))


def entry_summary(entry: Mapping[str, Any]) -> EntrySummary:
    """What ``entry`` is and what it says, on one line (whitespace collapsed, not cut)."""
    kind = entry.get("type")
    message = entry.get("message")
    if kind == "message" and isinstance(message, dict):
        found = _message_summary(message)
    elif kind == "compaction":
        text = _str(entry.get("shortSummary")) or _str(entry.get("summary"))
        tokens = entry.get("tokensBefore")
        found = EntrySummary(
            "compaction", text + (f" ({tokens} tokens before)" if tokens is not None else "")
        )
    elif kind == "branch_summary":
        found = EntrySummary("branch summary", _str(entry.get("summary")))
    elif kind == "custom_message":
        found = EntrySummary("custom", f"{_str(entry.get('customType'))}: {message_text(entry)}")
    else:
        found = EntrySummary("event", event_text(entry))
    return EntrySummary(found.kind, one_line(found.text))


def usage_text(usage: Any) -> str:
    """``in 300 · out 12 · $0.0012``: one ``usage`` object as a cost line ("" if it has none)."""
    if not isinstance(usage, Mapping):
        return ""
    parts = [f"{name} {usage[key]}" for key, name in (("input", "in"), ("output", "out")) if key in usage]
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    if isinstance(total, int | float) and not isinstance(total, bool):
        parts.append(f"${total:.4f}")
    return " · ".join(parts)
