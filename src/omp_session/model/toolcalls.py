"""Tool calls and tool results that do not pair up on a branch (used by ``check``).

One iterative depth-first walk keeps the calls seen on the current path, so the cost is linear in
the number of entries, however many branches the tree has.

Internal module (``omp-session check`` reports with it); not part of the public API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omp_session.model.tree import SessionIndex, SessionTreeNode

__all__ = ["Unpaired", "find_unpaired"]

Entry = dict[str, Any]


@dataclass(frozen=True)
class Unpaired:
    entry_id: str | None
    tool_call_id: str
    tool_name: str | None
    kind: str  # "call-without-result" or "result-without-call"


def _calls(entry: Entry) -> list[tuple[str, str | None]]:
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        (block["id"], block.get("name"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str)
    ]


def _result_id(entry: Entry) -> str | None:
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "toolResult":
        call_id = message.get("toolCallId")
        return call_id if isinstance(call_id, str) else None
    return None


def find_unpaired(index: SessionIndex) -> list[Unpaired]:
    """Calls left without a result on some branch, and results with no call before them."""
    found: dict[tuple[str | None, str, str], Unpaired] = {}
    for root in index.get_tree():
        _walk(root, found)
    return list(found.values())


def _walk(root: SessionTreeNode, found: dict[tuple[str | None, str, str], Unpaired]) -> None:
    open_calls: dict[str, tuple[str | None, str | None]] = {}  # call id -> (entry id, tool name)
    answered: dict[str, int] = {}
    stack: list[tuple[SessionTreeNode, bool]] = [(root, True)]
    undo: list[list[tuple[str, str]]] = []
    on_path: set[int] = set()
    pending: dict[str, None] = {}  # open calls without a result on the current path
    while stack:
        node, entering = stack.pop()
        if not entering:
            on_path.discard(id(node))
            for action, call_id in undo.pop():
                if action == "call":
                    open_calls.pop(call_id, None)
                    pending.pop(call_id, None)
                else:
                    answered[call_id] -= 1
                    if not answered[call_id] and call_id in open_calls:
                        pending[call_id] = None
            continue
        if id(node) in on_path:
            continue
        on_path.add(id(node))
        entry = node.entry
        entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
        changes: list[tuple[str, str]] = []
        for call_id, name in _calls(entry):
            if call_id not in open_calls:
                open_calls[call_id] = (entry_id, name)
                if not answered.get(call_id):
                    pending[call_id] = None
                changes.append(("call", call_id))
        result = _result_id(entry)
        if result is not None:
            if result not in open_calls:
                key = (entry_id, result, "result-without-call")
                found[key] = Unpaired(entry_id, result, entry["message"].get("toolName"), key[2])
            answered[result] = answered.get(result, 0) + 1
            pending.pop(result, None)
            changes.append(("result", result))
        undo.append(changes)
        stack.append((node, False))
        if not node.children:
            for call_id in pending:
                call_entry, name = open_calls[call_id]
                key = (call_entry, call_id, "call-without-result")
                found[key] = Unpaired(call_entry, call_id, name, key[2])
        stack.extend((child, True) for child in reversed(node.children))
