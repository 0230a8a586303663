"""Comparing a lossless import with omp's on the common part (fixtures README, "Comparing a BETTER importer").

Exception A: extra entries are projected away (their children re-parented to the nearest upstream
ancestor). Exception B: each fix of an omp quirk is a named deviation with the input lines it
touches (``DEVIATIONS``); entries from those lines are compared only outside the fixed fields.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from omp_session.importers import claude_convert, codex_convert

Entry = dict[str, Any]

#: case → {deviation name: the input lines whose upstream entries it replaces or changes}.
DEVIATIONS: dict[str, dict[str, list[int]]] = {
    "claude/compact_boundary": {claude_convert.COMPACTION: [5, 6]},
    "claude/split_blocks_shared_message_id": {claude_convert.MERGED_RESPONSE: [2, 3, 4, 6, 7]},
    "claude/thinking_signature": {claude_convert.MERGED_RESPONSE: [4, 5]},
}
#: Deviations that change fields of upstream entries everywhere they apply, undone for comparison.
FIELD_DEVIATIONS = (
    claude_convert.TOOL_DETAILS,
    claude_convert.STOP_DETAILS,
    claude_convert.REDACTED_THINKING,
    codex_convert.USAGE,
    codex_convert.TOOL_ERROR,
)
#: Cases whose context or usage totals a deviation changes on purpose (checked in test_deviations).
CONTEXT_CHANGES = {
    "claude/compact_boundary",
    "claude/split_blocks_shared_message_id",
    "claude/thinking_signature",
}
USAGE_CHANGES = {"claude/split_blocks_shared_message_id", "claude/thinking_signature"}

_UUID = re.compile(r"^claude-([0-9a-f-]{36})-")
_LINE = re.compile(r"^claude-line-(\d+)-")


def upstream_line(entry_id: str, uuid_lines: dict[str, int]) -> int | None:
    if (m := _UUID.match(entry_id)) is not None:
        return uuid_lines.get(m.group(1))
    if (m := _LINE.match(entry_id)) is not None:
        return int(m.group(1))
    return None


def undo_field_deviations(message: Any, expected: Any) -> Any:
    """The message without what a field deviation added: ``details`` from ``toolUseResult``,
    ``stopDetails`` of an unknown stop reason, ``redactedThinking`` blocks, usage from
    ``token_count`` (upstream has zeros there)."""
    if not isinstance(message, dict) or not isinstance(expected, dict):
        return message
    out = copy.deepcopy(message)
    if out.get("isError") is True and expected.get("isError") is False:
        out["isError"] = False  # codex.tool_error
    for added in ("details", "stopDetails"):
        if added in out and added not in expected:
            del out[added]
    if isinstance(out.get("content"), list):
        out["content"] = [b for b in out["content"] if b.get("type") != "redactedThinking"]
    usage = expected.get("usage")
    codex = expected.get("provider") == "openai-codex"
    codex_zero = codex and isinstance(usage, dict) and usage.get("totalTokens") == 0
    if codex_zero and out.get("usage") != usage:
        out["usage"] = usage
    return out


def strip_entry(entry: Entry, expected: Entry) -> Entry:
    out = {k: v for k, v in entry.items() if k != "sourceRecords"}
    if "message" in out:
        out["message"] = undo_field_deviations(out["message"], expected.get("message"))
    return out


def project(entries: list[Entry], upstream_ids: set[str]) -> dict[str, Entry]:
    """Exception A: keep upstream ids; re-parent to the nearest upstream ancestor."""
    by_id = {e["id"]: e for e in entries}
    out: dict[str, Entry] = {}
    for entry in entries:
        if entry["id"] not in upstream_ids:
            continue
        parent = entry.get("parentId")
        seen: set[str] = set()
        while parent is not None and parent not in upstream_ids and parent not in seen:
            seen.add(parent)
            parent = by_id.get(parent, {}).get("parentId")
        projected = dict(entry)
        projected["parentId"] = parent if parent in upstream_ids else None
        out[entry["id"]] = projected
    return out


def compare_entries(
    case: str, got: list[Entry], expected: list[Entry], uuid_lines: dict[str, int]
) -> list[str]:
    """Differences on the common part (empty when the import agrees with omp)."""
    declared = {line for lines in DEVIATIONS.get(case, {}).values() for line in lines}
    upstream_ids = {e["id"] for e in expected}
    mine = project(got, upstream_ids)
    problems: list[str] = []
    for want in expected:
        line = upstream_line(want["id"], uuid_lines)
        changed = line in declared
        have = mine.get(want["id"])
        if have is None:
            if not changed:
                problems.append(f"missing upstream entry {want['id']}")
            continue
        have = strip_entry(have, want)
        parent_missing = want.get("parentId") not in mine and want.get("parentId") is not None
        if changed:
            fields = ("type", "timestamp")
            if any(have.get(k) != want.get(k) for k in fields):
                problems.append(f"{want['id']}: differs outside the declared deviation")
            continue
        if parent_missing:
            have = {**have, "parentId": want.get("parentId")}
        if have != want:
            problems.append(f"{want['id']}: {have} != {want}")
    return problems
