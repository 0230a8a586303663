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
``other``/``event`` items, so any file ``SessionManager.open`` accepts can be shown.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omp_session.manager import SessionManager
from omp_session.model.tree import SessionTreeNode
from omp_session.store import SessionStorage
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
from omp_session.tools.entry_kinds import Classified, EntryKind, classify, is_import_bookkeeping
from omp_session.tools.reading import read_session, resolve_entry
from omp_session.tools.summary import event_text

Entry = dict[str, Any]

__all__ = [
    "Branch",
    "BranchStream",
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
    "iter_items",
    "leaf_ids",
    "load_transcript",
    "session_transcript",
    "streamed_transcript",
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


def _fill(item: TranscriptItem, found: Classified) -> None:
    """Fill ``item`` from a classified entry that is not a state change, label or tool result."""
    kind, fields = found.kind, found.fields
    if kind in (EntryKind.USER, EntryKind.DEVELOPER, EntryKind.ASSISTANT):
        item.kind = kind.value
        item.parts = content_parts(fields.get("content"))
        if kind == EntryKind.ASSISTANT:
            _assistant_item(item, fields)
        else:
            item.meta = _pick_meta(fields, "attribution", "synthetic")
    elif kind in (EntryKind.BASH, EntryKind.PYTHON):
        item.kind = kind.value
        item.execution = execution_of(fields, item.kind)
    elif kind == EntryKind.FILE_MENTION:
        item.kind, item.files = kind.value, files_of(fields)
    elif kind == EntryKind.CUSTOM_MESSAGE:
        item.kind, item.title = kind.value, _str(fields.get("customType"))
        item.parts = content_parts(fields.get("content"))
        item.meta = _pick_meta(fields, "display", "attribution")
    elif kind in (EntryKind.COMPACTION, EntryKind.BRANCH_SUMMARY):
        item.kind, item.summary = kind.value, _str(fields.get("summary"))
        keys = ("fromId", "shortSummary", "tokensBefore") if found.is_message else _SUMMARY_META[kind]
        item.meta = _pick_meta(fields, *keys)
    elif kind == EntryKind.RESET_BOUNDARY:
        item.kind, item.title = "reset", "context cleared (/clear): the model sees only what follows"
    elif kind == EntryKind.TITLE_CHANGE:
        item.kind, item.title = "title", f"title → {_str(fields.get('title'))}"
        item.meta = _pick_meta(fields, "source", "previousTitle", "trigger")
    elif kind == EntryKind.MODEL_USAGE:
        item.kind = "model_usage"
        item.title = (
            f"{_str(fields.get('purpose'))} · {_str(fields.get('provider'))}/{_str(fields.get('model'))}"
        )
        item.meta = _pick_meta(fields, "usage", "stopReason", "role", "errorMessage")
    elif kind == EntryKind.UNKNOWN_MESSAGE and found.is_message:
        item.kind, item.title = "other", f"message with role {fields.get('role')!r}"
        item.parts = content_parts(fields.get("content"))


_SUMMARY_META = {
    EntryKind.COMPACTION: ("shortSummary", "tokensBefore", "firstKeptEntryId"),
    EntryKind.BRANCH_SUMMARY: ("fromId",),
}


def _entry_item(entry: Entry, found: Classified, labels: Mapping[str, str]) -> TranscriptItem | None:
    if found.kind == EntryKind.LABEL:
        return None
    entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    timestamp = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
    item = TranscriptItem("event", entry_id, timestamp, labels.get(entry_id) if entry_id else None)
    _fill(item, found)
    if item.kind == "event":
        item.title = event_text(entry)
    return item


def build_items(path: Sequence[Entry], labels: Mapping[str, str] | None = None) -> list[TranscriptItem]:
    """The display items of ``path`` (root→leaf entries), tool results paired with their calls.

    A ``toolResult`` whose call appears earlier in ``path`` is attached to that call instead of
    being an item of its own.
    """
    return list(iter_items(path, labels))


def iter_items(
    path: Sequence[Entry],
    labels: Mapping[str, str] | None = None,
    walked: Callable[[int], None] | None = None,
) -> Iterator[TranscriptItem]:
    """:func:`build_items` one item at a time, each given as soon as nothing later in ``path`` can
    change it: an assistant item waits only for the results of its calls that ``path`` holds
    further on. A renderer writes the first items of a 50,000-entry branch while the rest are
    still to be built (``show | head``). ``walked(n)`` hears now and then how many entries of
    ``path`` are behind (for a progress bar)."""
    labels = labels or {}
    found = [classify(entry) for entry in path]
    #: Per call id, the position of the last result naming it: a call waits until then at most.
    last_result: dict[str, int] = {}
    for position, classified in enumerate(found):
        if classified.kind == EntryKind.TOOL_RESULT:
            last_result[_str(classified.fields.get("toolCallId"))] = position
    held: deque[TranscriptItem] = deque()
    open_calls: dict[str, ToolCall] = {}

    def settled(item: TranscriptItem, position: int) -> bool:
        for part in item.parts:
            call = part.tool_call
            if call is None or not call.id or open_calls.get(call.id) is not call:
                continue  # no call, or one already answered (or never to be: its id was reused)
            if last_result.get(call.id, -1) > position:
                return False
        return True

    for position, (entry, classified) in enumerate(zip(path, found, strict=True)):
        if classified.kind == EntryKind.TOOL_RESULT:
            entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
            result = tool_result_of(entry_id, classified.fields)
            call = open_calls.pop(result.tool_call_id, None)
            if call is not None:
                call.result = result
            else:
                item = TranscriptItem("tool_result", result.entry_id, _str(entry.get("timestamp")) or None)
                item.label = labels.get(result.entry_id) if result.entry_id else None
                item.title, item.parts = result.tool_name, result.parts
                item.meta = {
                    "toolCallId": result.tool_call_id,
                    "isError": result.is_error,
                    "pruned": result.pruned,
                }
                held.append(item)
        else:
            built = _entry_item(entry, classified, labels)
            if built is not None:
                for part in built.parts:
                    if part.tool_call is not None and part.tool_call.id:
                        open_calls[part.tool_call.id] = part.tool_call
                held.append(built)
        while held and settled(held[0], position):
            yield held.popleft()
        if walked is not None and position % _WALKED_EVERY == 0:
            walked(position + 1)
    yield from held
    if walked is not None:
        walked(len(found))


#: Entries between two reports to ``iter_items``'s ``walked``.
_WALKED_EVERY = 500


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


def leaf_ids(session: SessionManager) -> list[str]:
    """Ids of every entry without children (the tips of all branches), in tree order."""
    leaves: list[str] = []
    for root in session.get_tree():
        for node, _depth in root.walk():
            entry_id = node.entry.get("id")
            if not node.children and isinstance(entry_id, str) and entry_id not in leaves:
                leaves.append(entry_id)
    return leaves


@dataclass
class BranchStream:
    """A branch to show whose items are built as they are read (:func:`iter_items`)."""

    leaf_id: str | None
    is_current: bool
    joins_at: str | None
    entries: list[Entry]
    labels: Mapping[str, str]

    def items(self, walked: Callable[[int], None] | None = None) -> Iterator[TranscriptItem]:
        return iter_items(self.entries, self.labels, walked)


def _branch_streams(
    session: SessionManager, current: str | None, all_branches: bool, all_entries: bool
) -> list[BranchStream]:
    labels = session.get_labels()

    def stream(
        leaf: str | None, is_current: bool, joins_at: str | None, entries: list[Entry]
    ) -> BranchStream:
        if not all_entries:
            entries = [entry for entry in entries if not is_import_bookkeeping(entry)]
        return BranchStream(leaf, is_current, joins_at, entries, labels)

    if not all_branches:
        return [stream(current, True, None, list(session.get_branch(current)))]
    # The current branch as the session walks it; every other tip from the tree, each walked up
    # through the tree's parent links only until it meets an entry already shown (issue 30: a
    # full get_branch per tip made --all-branches of a 50,000-entry session with 72 tips 2.7× the
    # time of the current branch alone).
    first = list(session.get_branch(current)) if current else []
    shown: set[str] = {str(e.get("id")) for e in first}
    branches = [stream(current, True, None, first)] if current else []
    parents: dict[int, SessionTreeNode | None] = {}
    tips: dict[str, SessionTreeNode] = {}
    stack: list[tuple[SessionTreeNode, SessionTreeNode | None]] = [
        (root, None) for root in reversed(session.get_tree())
    ]
    while stack:  # pre-order, as leaf_ids: the same tips in the same order
        node, parent = stack.pop()
        if id(node) in parents:
            continue  # a duplicated id hangs one node under two parents: its first place counts
        parents[id(node)] = parent
        entry_id = node.entry.get("id")
        if not node.children and isinstance(entry_id, str):
            tips.setdefault(entry_id, node)
        stack.extend((child, node) for child in reversed(node.children))
    for leaf, tip in tips.items():
        if leaf == current:
            continue
        fresh: list[Entry] = []
        cursor: SessionTreeNode | None = tip
        while cursor is not None and str(cursor.entry.get("id")) not in shown:
            fresh.append(cursor.entry)
            cursor = parents.get(id(cursor))
        fresh.reverse()
        joins_at = cursor.entry.get("id") if cursor is not None else None
        shown.update(str(e.get("id")) for e in fresh)
        branches.append(stream(leaf, False, joins_at, fresh))
    return branches


def streamed_transcript(
    session: SessionManager,
    *,
    leaf_id: str | None = None,
    all_branches: bool = False,
    all_entries: bool = True,
) -> tuple[Transcript, list[BranchStream]]:
    """The transcript of an open session as its facts (``branches`` empty) and its branches, whose
    items are built while they are read: the session must stay open until then."""
    leaf = resolve_entry(session, leaf_id) if leaf_id is not None else session.get_leaf_id()
    header = session.get_header()
    title = header.get("title")
    facts = Transcript(
        path=session.get_session_file() or "",
        session_id=session.get_session_id(),
        title=title if isinstance(title, str) else None,
        cwd=_str(header.get("cwd")),
        created=header.get("timestamp") if isinstance(header.get("timestamp"), str) else None,
        leaf_id=leaf,
        branches=[],
    )
    return facts, _branch_streams(session, leaf, all_branches, all_entries)


def session_transcript(
    session: SessionManager,
    *,
    leaf_id: str | None = None,
    all_branches: bool = False,
    all_entries: bool = True,
) -> Transcript:
    """The transcript of an open session (see :func:`load_transcript`)."""
    transcript, streams = streamed_transcript(
        session, leaf_id=leaf_id, all_branches=all_branches, all_entries=all_entries
    )
    transcript.branches = [
        Branch(stream.leaf_id, stream.is_current, stream.joins_at, list(stream.items())) for stream in streams
    ]
    return transcript


def load_transcript(
    path: Path | str,
    *,
    leaf_id: str | None = None,
    all_branches: bool = False,
    all_entries: bool = True,
    storage: SessionStorage | None = None,
) -> Transcript:
    """Read ``path`` (a file, else a row of ``storage``; never writing it) and build the
    transcript of the current branch.

    ``leaf_id`` (an id or unique id prefix) shows the branch ending there instead; with
    ``all_branches`` every branch is included, the current one first, each later one only from
    where it leaves the branches already shown. Unless ``all_entries``, import bookkeeping
    (:func:`~omp_session.tools.entry_kinds.is_import_bookkeeping`) is left out.
    """
    with read_session(path, storage=storage) as session:
        transcript = session_transcript(
            session, leaf_id=leaf_id, all_branches=all_branches, all_entries=all_entries
        )
    transcript.path = os.fspath(path)  # as the caller named it, not made absolute
    return transcript
