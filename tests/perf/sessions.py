"""Random session files for the fast-path tests, and snapshots to compare two loads by."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from omp_session import SessionManager
from omp_session.model.tree import SessionTreeNode
from tests.perf.tuned import NO_FILE, open_session

Entry = dict[str, Any]
HEADER = {
    "type": "session",
    "version": 3,
    "id": "sess-perf",
    "timestamp": "2025-06-02T14:00:00.000Z",
    "cwd": "/p",
}

_ROLES = st.sampled_from([None, "default", "smol", "slow"])
_TEXT = st.text(alphabet="ab é\n\u2028", max_size=6)
_RULES = st.lists(st.sampled_from(["r1", "r2", "r3", "r4"]), max_size=3)


def _message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "assistant", "toolResult", "custom", "bashExecution"]))
    message: dict[str, Any] = {"role": role, "content": draw(_TEXT), "timestamp": 1}
    if role == "assistant":
        message["content"] = [{"type": "text", "text": draw(_TEXT)}]
        message["provider"] = draw(st.sampled_from(["anthropic", "openai", None]))
        message["model"] = draw(st.sampled_from(["m1", "m2", 3]))
        if draw(st.booleans()):
            message["usage"] = {"input": draw(st.integers(0, 9)), "output": 1, "cost": {"total": 0.1}}
    if role == "toolResult":
        message.update(toolName=draw(st.sampled_from(["task", "bash"])), details={"usage": {"input": 2}})
    return message


def _fields(draw: st.DrawFn, kind: str, earlier: list[str]) -> dict[str, Any]:
    some_id = st.sampled_from([*earlier, "unknown"]) if earlier else st.just("unknown")
    if kind == "message":
        return {"message": _message(draw)}
    if kind == "thinking_level_change":
        return {"thinkingLevel": draw(st.sampled_from(["low", "high", None]))}
    if kind == "model_change":
        model = {"model": draw(st.sampled_from(["p/a", "p/b", "", None]))}
        role = draw(_ROLES)
        return model if role is None else {**model, "role": role}
    if kind == "service_tier_change":
        return {"serviceTier": draw(st.sampled_from(["flex", None]))}
    if kind == "compaction":
        fields: Entry = {"summary": "sum", "tokensBefore": 5, "firstKeptEntryId": draw(some_id)}
        if draw(st.integers(0, 5)) == 0:
            remote = {"provider": "openai", "replacementHistory": [{"x": 1}]}
            fields["preserveData"] = {"openaiRemoteCompaction": remote}
        if draw(st.booleans()):
            fields["shortSummary"] = "short"
        return fields
    if kind == "ttsr_injection":
        return {"injectedRules": draw(_RULES)}
    if kind == "mcp_tool_selection":
        return {"selectedToolNames": draw(st.lists(st.sampled_from(["t1", "t2"]), max_size=2))}
    if kind == "mode_change":
        mode = {"mode": draw(st.sampled_from(["plan", "none"]))}
        return {**mode, "data": {"k": 1}} if draw(st.booleans()) else mode
    if kind == "label":
        return {"targetId": draw(some_id), "label": draw(st.sampled_from(["L1", "L2", "", None]))}
    if kind == "branch_summary":
        return {"fromId": "x", "summary": draw(st.sampled_from(["", "went elsewhere"]))}
    if kind == "custom_message":
        return {"customType": "c", "content": draw(_TEXT), "display": True}
    return {"data": draw(_TEXT)}


_KINDS = [
    "message",
    "message",
    "message",
    "thinking_level_change",
    "model_change",
    "model_change",
    "service_tier_change",
    "compaction",
    "compaction",
    "ttsr_injection",
    "mcp_tool_selection",
    "mode_change",
    "label",
    "branch_summary",
    "custom_message",
    "custom",
    "future_type",
]


@st.composite
def session_lines(draw: st.DrawFn, *, weird: bool = True) -> list[bytes]:
    """Lines (with newlines) of a v3 session: a tree with every entry type; with ``weird`` also
    orphans, self parents, blank/malformed/non-object lines, duplicate and forward ids."""
    count = draw(st.integers(0, 40))
    ids: list[Any] = []
    lines = [json.dumps(HEADER).encode() + b"\n"]
    for number in range(count):
        entry_id: Any = f"e{number}"
        choice = draw(st.integers(0, 19))
        parent: Any = ids[-1] if ids else None
        if choice < 4 and ids:
            parent = draw(st.sampled_from(ids))  # a branch
        elif weird and choice == 4:
            parent = draw(st.sampled_from(["missing", entry_id, "", None, f"e{number + 2}"]))
        if weird and choice == 5 and ids:
            entry_id = draw(st.sampled_from(ids))  # a duplicate id
        elif weird and choice == 6:
            entry_id = draw(st.sampled_from([7, None, "", ["e0"]]))  # no id a parent can name
        kind = draw(st.sampled_from(_KINDS))
        entry = {
            "type": kind,
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2025-06-02T14:00:{number % 60:02d}Z",
        }
        entry.update(_fields(draw, kind, ids))
        ids.append(entry_id)
        lines.append(json.dumps(entry, ensure_ascii=False).encode() + b"\n")
        if weird and draw(st.integers(0, 15)) == 0:
            lines.append(draw(st.sampled_from([b"\n", b"not json\n", b"[1,2]\n", b'{"torn": \n'])))
    if weird and len(lines) > 1 and draw(st.integers(0, 4)) == 0:
        lines[-1] = lines[-1].rstrip(b"\n")  # no final newline
    elif weird and draw(st.integers(0, 6)) == 0:
        lines.append(b'{"type":"message","id":"tor')  # a torn last line
    return lines


def ordered(value: Any) -> str:
    """``value`` as JSON text with its keys in their order (to compare key order too)."""
    return json.dumps(value, ensure_ascii=False, default=repr)


def tree_shape(roots: list[SessionTreeNode]) -> list[tuple[Any, int, str | None, int]]:
    return [
        (node.entry, depth, node.label, len(node.children)) for root in roots for node, depth in root.walk()
    ]


def entry_reads(manager: SessionManager) -> dict[str, Any]:
    """Every way of reading ``get_entries()`` (a lazily opened file's is a view decoding on access),
    each as a plain list, plus what each entry's id finds (before anything loads every entry)."""
    entries = manager.get_entries()
    count = len(entries)
    walked = list(entries)
    ids = [entry.get("id") for entry in walked]
    return {
        "walked": walked,
        "indexed": [entries[position] for position in range(count)],
        "negative": [entries[position - count] for position in range(count)],
        "backwards": list(reversed(entries)),
        "sliced": [entries[1:-1], entries[::2], entries[-2:]],
        "found": [entries.index(entry) for entry in walked[:5]],
        "by_id": [manager.get_entry(entry_id) if isinstance(entry_id, str) else None for entry_id in ids],
        "parents": [manager.get_parent(entry) for entry in walked],
        "children": [manager.get_children(entry_id) for entry_id in ids[:20] if isinstance(entry_id, str)],
        "length": count,
    }


def snapshot(manager: SessionManager) -> dict[str, Any]:
    """Everything a caller can read from a manager (the leaf's context first: it must not need
    the rest)."""
    leaf = manager.get_leaf_id()
    context = manager.build_session_context().to_dict()
    return {
        "leaf": leaf,
        "context": context,
        "context_order": ordered(context),  # == on dicts ignores key order; the JSON shows it
        "branch": manager.get_branch(),
        "label_of_leaf": manager.get_label(leaf) if leaf else None,
        "labels": ordered(manager.get_labels()),
        "usage": manager.get_usage_statistics().to_dict(),
        "issues": manager.get_load_issues(),
        "header": manager.get_header(),
        "entries": manager.get_entries(),
        **entry_reads(manager),
        "tree": tree_shape(manager.get_tree()),
        "children_of_leaf": manager.get_children(leaf) if leaf else None,
        "name": manager.get_session_name(),
    }


def full_snapshot(path: Path) -> dict[str, Any]:
    """The snapshot of a plain full load (no file takes the offset-index paths)."""
    with open_session(path, read_only=True, tuning=NO_FILE) as manager:
        return snapshot(manager)


def open_lazily(path: Path, *, read_only: bool = True) -> SessionManager:
    """Open ``path`` through its offset index (built first if missing); fails if it cannot be."""
    open_session(path, read_only=True).close()  # builds the index if there is none
    manager = open_session(path, read_only=read_only)
    return manager


def is_lazy(manager: SessionManager) -> bool:
    """Opened lazily: through a stored offset index or by the one-pass cold open."""
    from omp_session.store._indexed.lazy_index import LazySessionIndex

    return isinstance(manager._state.index, LazySessionIndex)


def opened_cold(manager: SessionManager) -> bool:
    """Opened by the one-pass cold open (every line decoded, the index written), not from a
    stored index."""
    return is_lazy(manager) and manager._state.index.opened_cold  # type: ignore[attr-defined]


@st.composite
def jump_back_lines(draw: st.DrawFn) -> list[bytes]:
    """A main line with a compaction, then a branch that starts *before* that compaction (at or
    before its first kept entry) and may compact again; the leaf (the last line) is on the branch
    or, when the main line grows after it, on the main line."""
    length = draw(st.integers(4, 24))
    compaction_at = draw(st.integers(2, length - 1))
    kept = draw(st.integers(0, compaction_at - 1))
    jump_from = draw(st.integers(0, kept))
    lines = [json.dumps(HEADER).encode() + b"\n"]
    ids: list[str] = []

    def add(entry_id: str, parent: str | None, kind: str, **fields: Any) -> None:
        entry = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": "2025-06-02T14:00:00Z"}
        entry.update(fields or _fields(draw, kind, ids))
        ids.append(entry_id)
        lines.append(json.dumps(entry, ensure_ascii=False).encode() + b"\n")

    for number in range(length):
        parent = f"m{number - 1}" if number else None
        if number == compaction_at:
            add(f"m{number}", parent, "compaction", summary="s", tokensBefore=1, firstKeptEntryId=f"m{kept}")
        else:
            add(f"m{number}", parent, draw(st.sampled_from(_KINDS)))
    parent = f"m{jump_from}"
    for number in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from([*_KINDS, "compaction"]))
        add(f"b{number}", parent, kind)
        parent = f"b{number}"
    if draw(st.booleans()):  # the main line goes on: the leaf is back there
        add("m-last", f"m{length - 1}", "message")
    return lines
