"""A branch of a session as a display model: what ``show``, the Markdown export and the HTML view render.

The model is plain dataclasses (``to_dict()`` gives JSON for ``show --json`` and templates):

* a :class:`TranscriptItem` per entry worth showing, in path order, with a ``kind``: ``user``,
  ``developer``, ``assistant``, ``tool_result`` (a result whose call is not on the same stretch),
  ``bash``, ``python``, ``file_mention``, ``custom``, ``compaction``, ``branch_summary``,
  omp 18's ``reset`` (a ``/clear`` divider), ``title`` (a rename) and ``model_usage`` (the spend
  of a side request), ``event`` (model, thinking, mode changes, credential pins and other state
  entries) or ``other`` (unknown roles);
* assistant tool calls carry their result (matched by ``toolCallId``), so renderers show a call and
  what it returned together;
* labels are attached to the entry they name; label entries themselves are not items.

Building never fails on odd data: missing fields become empty strings, unknown shapes become
``other``/``event`` items, so any file ``load_session`` accepts can be shown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omp_session.model.tree import SessionIndex
from omp_session.store.loading import LoadedSession, load_session
from omp_session.tools.content import (
    Execution,
    MentionedFile,
    Part,
    ToolCall,
    ToolResult,
    content_parts,
    content_text,
    execution_of,
    files_of,
    tool_result_of,
)
from omp_session.tools.resolve import resolve_entry_id
from omp_session.tools.summary import event_text

Entry = dict[str, Any]

__all__ = [
    "Branch",
    "Execution",
    "MentionedFile",
    "Part",
    "ToolCall",
    "ToolResult",
    "Transcript",
    "TranscriptItem",
    "build_items",
    "content_parts",
    "content_text",
    "default_leaf",
    "leaf_ids",
    "load_transcript",
    "session_transcript",
]


@dataclass
class TranscriptItem:
    """One entry of a branch, ready to render."""

    kind: str
    entry_id: str | None
    timestamp: str | None
    label: str | None = None
    parts: list[Part] = field(default_factory=list)
    execution: Execution | None = None
    files: list[MentionedFile] = field(default_factory=list)
    #: Compaction and branch summaries.
    summary: str | None = None
    #: A short heading: the custom type, the model of an assistant, the text of an event.
    title: str | None = None
    #: Kind-specific facts (usage, stopReason, tokensBefore, fromId, display, …).
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (nested dataclasses included)."""
        return asdict(self)

    @property
    def text(self) -> str:
        """The visible text parts joined by blank lines (no thinking, no tool calls)."""
        return "\n\n".join(part.text for part in self.parts if part.kind == "text" and part.text)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pick_meta(source: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: source[key] for key in keys if key in source}


def _assistant_item(item: TranscriptItem, message: Mapping[str, Any]) -> None:
    provider, model = message.get("provider"), message.get("model")
    if isinstance(model, str):
        item.title = f"{provider}/{model}" if isinstance(provider, str) else model
    item.meta = _pick_meta(message, "usage", "stopReason", "errorMessage", "duration", "ttft")


def _message_item(item: TranscriptItem, message: Mapping[str, Any]) -> None:
    """Fill ``item`` from a stored message (any role)."""
    role = message.get("role")
    if role in ("user", "developer", "assistant"):
        item.kind = str(role)
        item.parts = content_parts(message.get("content"))
        if role == "assistant":
            _assistant_item(item, message)
        else:
            item.meta = _pick_meta(message, "attribution", "synthetic")
    elif role in ("bashExecution", "pythonExecution"):
        item.kind = "bash" if role == "bashExecution" else "python"
        item.execution = execution_of(message, item.kind)
    elif role == "fileMention":
        item.kind, item.files = "file_mention", files_of(message)
    elif role in ("custom", "hookMessage"):
        item.kind, item.title = "custom", _str(message.get("customType"))
        item.parts = content_parts(message.get("content"))
        item.meta = _pick_meta(message, "display", "attribution")
    elif role in ("branchSummary", "compactionSummary"):
        item.kind = "branch_summary" if role == "branchSummary" else "compaction"
        item.summary = _str(message.get("summary"))
        item.meta = _pick_meta(message, "fromId", "shortSummary", "tokensBefore")
    else:
        item.kind, item.title = "other", f"message with role {role!r}"
        item.parts = content_parts(message.get("content"))


def _entry_item(entry: Entry, labels: Mapping[str, str]) -> TranscriptItem | None:
    kind = entry.get("type")
    entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    timestamp = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
    item = TranscriptItem("event", entry_id, timestamp, labels.get(entry_id) if entry_id else None)
    if kind == "message" and isinstance(entry.get("message"), dict):
        _message_item(item, entry["message"])
    elif kind == "custom_message":
        item.kind, item.title = "custom", _str(entry.get("customType"))
        item.parts = content_parts(entry.get("content"))
        item.meta = _pick_meta(entry, "display", "attribution")
    elif kind == "compaction":
        item.kind, item.summary = "compaction", _str(entry.get("summary"))
        item.meta = _pick_meta(entry, "shortSummary", "tokensBefore", "firstKeptEntryId")
    elif kind == "branch_summary":
        item.kind, item.summary = "branch_summary", _str(entry.get("summary"))
        item.meta = _pick_meta(entry, "fromId")
    elif kind == "label":
        return None
    elif kind == "reset_boundary":
        item.kind, item.title = "reset", "context cleared (/clear): the model sees only what follows"
    elif kind == "title_change":
        item.kind, item.title = "title", f"title → {_str(entry.get('title'))}"
        item.meta = _pick_meta(entry, "source", "previousTitle", "trigger")
    elif kind == "model_usage":
        item.kind = "model_usage"
        item.title = (
            f"{_str(entry.get('purpose'))} · {_str(entry.get('provider'))}/{_str(entry.get('model'))}"
        )
        item.meta = _pick_meta(entry, "usage", "stopReason", "role", "errorMessage")
    else:
        item.title = event_text(entry)
    return item


def build_items(path: Sequence[Entry], labels: Mapping[str, str] | None = None) -> list[TranscriptItem]:
    """The display items of ``path`` (root→leaf entries), tool results paired with their calls.

    A ``toolResult`` whose call appears earlier in ``path`` is attached to that call instead of
    being an item of its own.
    """
    labels = labels or {}
    items: list[TranscriptItem] = []
    open_calls: dict[str, ToolCall] = {}
    for entry in path:
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "toolResult"
        ):
            result = tool_result_of(entry.get("id") if isinstance(entry.get("id"), str) else None, message)
            call = open_calls.pop(result.tool_call_id, None)
            if call is not None:
                call.result = result
                continue
            item = TranscriptItem("tool_result", result.entry_id, _str(entry.get("timestamp")) or None)
            item.label = labels.get(result.entry_id) if result.entry_id else None
            item.title, item.parts = result.tool_name, result.parts
            item.meta = {
                "toolCallId": result.tool_call_id,
                "isError": result.is_error,
                "pruned": result.pruned,
            }
            items.append(item)
            continue
        built = _entry_item(entry, labels)
        if built is None:
            continue
        for part in built.parts:
            if part.tool_call is not None and part.tool_call.id:
                open_calls[part.tool_call.id] = part.tool_call
        items.append(built)
    return items


@dataclass
class Branch:
    """The items of one branch. With several branches, ``items`` starts after ``joins_at``, the last
    entry already shown by an earlier branch."""

    leaf_id: str | None
    is_current: bool
    joins_at: str | None
    items: list[TranscriptItem]


@dataclass
class Transcript:
    """A session's header facts and one or more branches to show."""

    path: str
    session_id: str
    title: str | None
    cwd: str
    created: str | None
    leaf_id: str | None
    branches: list[Branch]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_leaf(entries: Sequence[Entry]) -> str | None:
    """The leaf after loading (spec §6.4): the last entry in file order that has an id."""
    for entry in reversed(entries):
        if isinstance(entry.get("id"), str):
            return str(entry["id"])
    return None


def leaf_ids(index: SessionIndex) -> list[str]:
    """Ids of every entry without children (the tips of all branches), in tree order."""
    leaves: list[str] = []
    for root in index.get_tree():
        for node, _depth in root.walk():
            entry_id = node.entry.get("id")
            if not node.children and isinstance(entry_id, str) and entry_id not in leaves:
                leaves.append(entry_id)
    return leaves


def _branches(index: SessionIndex, current: str | None, all_branches: bool) -> list[Branch]:
    if not all_branches:
        return [Branch(current, True, None, build_items(index.branch(current), index.labels))]
    order = ([current] if current else []) + [leaf for leaf in leaf_ids(index) if leaf != current]
    shown: set[str] = set()
    branches: list[Branch] = []
    for leaf in order:
        path = index.branch(leaf)
        start = next((i for i, e in enumerate(path) if e.get("id") not in shown), len(path))
        joins_at = path[start - 1].get("id") if start > 0 else None
        fresh = path[start:]
        shown.update(str(e.get("id")) for e in fresh)
        branches.append(Branch(leaf, leaf == current, joins_at, build_items(fresh, index.labels)))
    return branches


def session_transcript(
    loaded: LoadedSession, path: Path | str, *, leaf_id: str | None = None, all_branches: bool = False
) -> Transcript:
    """The transcript of an already loaded session (see :func:`load_transcript`)."""
    index = SessionIndex(loaded.entries)
    leaf = (
        resolve_entry_id(index.by_id, leaf_id, migrated_from=loaded.migrated_from)
        if leaf_id is not None
        else default_leaf(loaded.entries)
    )
    header = loaded.header
    title = header.get("title")
    return Transcript(
        path=os.fspath(path),
        session_id=str(header.get("id")),
        title=title if isinstance(title, str) else None,
        cwd=_str(header.get("cwd")),
        created=header.get("timestamp") if isinstance(header.get("timestamp"), str) else None,
        leaf_id=leaf,
        branches=_branches(index, leaf, all_branches),
    )


def load_transcript(
    path: Path | str, *, leaf_id: str | None = None, all_branches: bool = False
) -> Transcript:
    """Read ``path`` (never writing it) and build the transcript of the current branch.

    ``leaf_id`` (an id or unique id prefix) shows the branch ending there instead; with
    ``all_branches`` every branch is included, the current one first, each later one only from
    where it leaves the branches already shown.
    """
    return session_transcript(load_session(path), path, leaf_id=leaf_id, all_branches=all_branches)
