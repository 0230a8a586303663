"""One-line summaries of entries, for the tree view, search results and event items.

>>> entry_summary({"type": "message", "message": {"role": "user", "content": "hello\\nworld"}})
EntrySummary(kind='user', text='hello world')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date
from functools import lru_cache
from typing import Any, NamedTuple

from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.model.message_text import is_prompt, is_slash_command, message_text
from omp_session.tools.entry_kinds import Classified, EntryKind, classify, model_of_change

__all__ = [
    "EntrySummary",
    "display_time",
    "entry_summary",
    "event_text",
    "first_prompt",
    "is_prompt",
    "is_slash_command",
    "message_text",
    "one_line",
    "usage_text",
]


class EntrySummary(NamedTuple):
    """What an entry is (``user``, ``assistant``, ``bash``, ``compaction``, …) and a one-line text."""

    kind: str
    text: str


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space.

    With ``limit``, cut to at most ``limit`` characters, ending in ``…`` when cut.
    """
    # ``str.split()`` splits on exactly the characters ``\s`` matches in a ``str`` pattern (those
    # ``str.isspace`` accepts), and is 2-3x faster than ``re.sub`` + ``strip`` (a tree row each).
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)].rstrip() + "…"
    return flat


def first_prompt(texts: Iterable[str]) -> str:
    """The first real prompt of a session for its title: the first user text :func:`is_prompt`
    accepts (issue 13 #7: a session opened with ``/mode`` was titled "/mode"), else the first
    non-empty one, else ``""``."""
    fallback = ""
    for text in texts:
        if not text.strip():
            continue
        if is_prompt(text):
            return text
        fallback = fallback or text
    return fallback


#: The form omp writes (``Date.toISOString``), with a time that needs no range check beyond the day.
_CANONICAL_UTC = re.compile(r"(\d{4}-\d\d-\d\d)T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,3})?Z")


@lru_cache(maxsize=512)
def _is_day(text: str) -> bool:
    """True for a calendar day ``YYYY-MM-DD`` Python's dates can hold (year 1 to 9999)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def display_time(iso: str | None) -> str:
    """``2025-06-02T14:05:07.000Z`` → ``2025-06-02 14:05:07 UTC`` (unparseable text is returned as is)."""
    # omp's own form is read off the text: ``show`` formats one per entry (tens of thousands).
    canonical = _CANONICAL_UTC.fullmatch(iso) if iso else None
    if canonical is not None and _is_day(canonical[1]):
        return f"{canonical[1]} {iso[11:19]} UTC"  # type: ignore[index]
    moment = ms_to_datetime(iso_to_ms(iso))
    if moment is None:
        return iso or ""
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _names(values: Any) -> str:
    return ", ".join(v for v in values if isinstance(v, str)) if isinstance(values, list) else ""


def event_text(entry: Mapping[str, Any]) -> str:
    """A one-line description of a state entry (model, thinking, mode, …) or of an unknown type."""
    found = classify(entry)
    kind = found.kind
    if kind == EntryKind.MODEL_CHANGE:
        role = entry.get("role")
        return f"model {model_of_change(entry) or '?'}" + (f" ({role})" if isinstance(role, str) else "")
    if kind == EntryKind.THINKING_LEVEL_CHANGE:
        return f"thinking {entry.get('thinkingLevel') or 'off'}"
    if kind == EntryKind.SERVICE_TIER_CHANGE:
        return f"service tier {entry.get('serviceTier') or 'cleared'}"
    if kind == EntryKind.MODE_CHANGE:
        return f"mode {_str(entry.get('mode'))}"
    if kind == EntryKind.MCP_TOOL_SELECTION:
        return f"MCP tools: {_names(entry.get('selectedToolNames'))}"
    if kind == EntryKind.TTSR_INJECTION:
        return f"rules injected: {_names(entry.get('injectedRules'))}"
    if kind == EntryKind.RESET_BOUNDARY:
        return "/clear: the model context starts after this"
    if kind == EntryKind.TITLE_CHANGE:
        return f"title → {_str(entry.get('title'))}"
    if kind == EntryKind.MODEL_USAGE:
        model = f"{_str(entry.get('provider'))}/{_str(entry.get('model'))}"
        return (
            f"model usage: {_str(entry.get('purpose'))} · {model} {usage_text(entry.get('usage'))}".rstrip()
        )
    if kind == EntryKind.CREDENTIAL_PIN:
        digest = _str(entry.get("hash"))
        return f"credential pinned for {_str(entry.get('provider'))} ({digest[:8]}…)"
    if kind == EntryKind.SESSION_INIT:
        return f"sub-agent session: {_str(entry.get('task'))}"
    if kind == EntryKind.CUSTOM_ENTRY:
        return f"custom entry {_str(entry.get('customType'))}"
    if kind == EntryKind.LABEL:
        label, target = entry.get("label"), _str(entry.get("targetId"))
        return (
            f"label {target} = {label!r}" if isinstance(label, str) and label else f"label {target} cleared"
        )
    return f"{entry.get('type')} entry"


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


def _file_paths(message: Mapping[str, Any]) -> str:
    files = message.get("files")
    return (
        ", ".join(_str(f.get("path")) for f in files if isinstance(f, dict))
        if isinstance(files, list)
        else ""
    )


def _bash(message: Mapping[str, Any]) -> str:
    code = message.get("exitCode")
    status = f" (exit {code})" if isinstance(code, int) else ""
    return f"$ {_str(message.get('command'))}{status}"


def _compaction(fields: Mapping[str, Any], is_message: bool) -> str:
    if is_message:
        return _str(fields.get("summary"))
    text = _str(fields.get("shortSummary")) or _str(fields.get("summary"))
    tokens = fields.get("tokensBefore")
    return text + (f" ({tokens} tokens before)" if tokens is not None else "")


def _summary_of(entry: Mapping[str, Any], found: Classified | None) -> EntrySummary:
    if found is None:
        found = classify(entry)
    kind, fields = found.kind, found.fields
    if kind == EntryKind.ASSISTANT:
        return EntrySummary("assistant", _assistant(fields))
    if kind == EntryKind.TOOL_RESULT:
        mark = "error" if fields.get("isError") else "ok"
        return EntrySummary("tool result", f"{_str(fields.get('toolName'))} {mark}: {message_text(fields)}")
    if kind == EntryKind.BASH:
        return EntrySummary("bash", _bash(fields))
    if kind == EntryKind.PYTHON:
        return EntrySummary("python", f">>> {_str(fields.get('code'))}")
    if kind == EntryKind.FILE_MENTION:
        return EntrySummary("files", _file_paths(fields))
    if kind == EntryKind.CUSTOM_MESSAGE:
        return EntrySummary("custom", f"{_str(fields.get('customType'))}: {message_text(fields)}")
    if kind == EntryKind.COMPACTION:
        return EntrySummary(TREE_KINDS[kind], _compaction(fields, found.is_message))
    if kind == EntryKind.BRANCH_SUMMARY:
        return EntrySummary(TREE_KINDS[kind], _str(fields.get("summary")))
    if found.is_message:  # user, developer, and roles no view knows
        return EntrySummary(found.role or "message", message_text(fields))
    return EntrySummary("event", event_text(entry))


#: The names ``tree`` and search results print for the kinds that differ from their value.
TREE_KINDS = {EntryKind.COMPACTION: EntryKind.COMPACTION.value, EntryKind.BRANCH_SUMMARY: "branch summary"}


def entry_summary(
    entry: Mapping[str, Any], limit: int | None = None, *, classified: Classified | None = None
) -> EntrySummary:
    """What ``entry`` is and what it says, on one line (whitespace collapsed; with ``limit``, cut to
    that many characters, ending in ``…``; only the start of a long text is then looked at).
    ``classified``: :func:`classify`'s answer for ``entry`` when the caller has it already."""
    found = _summary_of(entry, classified)
    if limit is None:
        return EntrySummary(found.kind, one_line(found.text))
    # Collapsing whitespace never lengthens text, so 4x the limit nearly always fills the line; a
    # 100 KB tool output is then not collapsed in full (tree and row views of big sessions).
    head = found.text[: limit * 4]
    text = one_line(head, limit)
    if len(head) < len(found.text) and not text.endswith("…"):
        text = one_line(text + " …", limit) if len(text) < limit else text[: limit - 1] + "…"
    return EntrySummary(found.kind, text)


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
