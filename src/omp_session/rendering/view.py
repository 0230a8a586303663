"""A whole session as the viewer shows it: every entry rendered once, the tree panel, and the data the
page script needs to show the context path at any node (spec §5) without asking the server again.

Every entry of every branch is rendered into the page; the script moves the ones on the selected
path into the transcript. That keeps the exported file self-contained and clicks instant.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from omp_session.manager import SessionManager
from omp_session.model.tree import SessionTreeNode
from omp_session.model.usage import UsageStatistics
from omp_session.rendering.entry_views import EntryView, ToolCalls, entry_view
from omp_session.rendering.format import date_time, format_size, one_line, usage_line
from omp_session.rendering.images import ImageSource
from omp_session.store import SessionStorage
from omp_session.store.file_sessions import session_storage
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.reading import read_session
from omp_session.tools.summary import first_prompt

__all__ = ["SessionView", "TreeRow", "build_session_view", "script_json", "stored_size"]

Entry = dict[str, Any]
#: Tree prefixes deeper than this are shortened: a row must stay readable in a narrow panel.
_MAX_PREFIX = 48


@dataclass
class TreeRow:
    """One line of the tree panel."""

    key: str
    prefix: str
    kind: str
    text: str
    label: str | None
    on_branch: bool
    is_leaf: bool
    is_tip: bool


@dataclass
class SessionView:
    """Everything the session template renders."""

    title: str
    session_id: str
    cwd: str
    created: str
    file_name: str
    size: str
    parent_session: str | None
    entries: list[EntryView]
    rows: list[TreeRow]
    leaf_key: str | None
    selected_key: str | None
    total_usage: str
    issues: list[str] = field(default_factory=list)
    data_json: Markup = field(default_factory=Markup)
    created_iso: str = ""


def script_json(value: Any) -> Markup:
    """JSON safe to embed in ``<script type="application/json">``: ``<``, ``>``, ``&`` and line
    separators are escaped, so no string in a session can close the script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


def _keys(session: SessionManager, entries: Sequence[Entry]) -> dict[int, str]:
    """DOM key per entry object: its id when it is the indexed one, else ``~<file position>``."""
    keys: dict[int, str] = {}
    for position, entry in enumerate(entries):
        entry_id = entry.get("id")
        canonical = isinstance(entry_id, str) and entry_id and session.get_entry(entry_id) is entry
        keys[id(entry)] = entry_id if canonical else f"~{position}"  # type: ignore[assignment]
    return keys


def _branch_keys(session: SessionManager, keys: dict[int, str], leaf: Entry | None) -> set[str]:
    path = session.get_branch(leaf.get("id") if leaf else None)
    return {keys[id(entry)] for entry in path if id(entry) in keys}


Frame = tuple[SessionTreeNode, str, str]


def _frames(
    children: list[SessionTreeNode], continuation: str, first: Callable[[SessionTreeNode], bool]
) -> list[Frame]:
    """``(child, row prefix, prefix below it)`` as omp's /tree draws them (omp 18
    ``tree-selector.ts``): an only child keeps the column; at a fork every child moves one column
    right behind ``├─``/``└─``, the child on the current branch (``first``) drawn first."""
    if len(children) == 1:
        return [(children[0], continuation, continuation)]
    ordered = [child for child in children if first(child)] + [
        child for child in children if not first(child)
    ]
    last = len(ordered) - 1
    return [
        (
            child,
            continuation + ("└─ " if i == last else "├─ "),
            continuation + ("   " if i == last else "│  "),
        )
        for i, child in enumerate(ordered)
    ]


def _root_frames(roots: list[SessionTreeNode], first: Callable[[SessionTreeNode], bool]) -> list[Frame]:
    """Several roots (orphans, cycles) hang under an invisible root, as in omp: each in the first
    column without a connector, what follows it one column right."""
    if len(roots) == 1:
        return [(roots[0], "", "")]
    ordered = [root for root in roots if first(root)] + [root for root in roots if not first(root)]
    return [(root, "", "   ") for root in ordered]


def _tree_rows(
    roots: list[SessionTreeNode],
    views: dict[str, EntryView],
    keys: dict[int, str],
    branch: set[str],
    leaf: str | None,
) -> list[TreeRow]:
    def describe(key: str, _entry: Entry) -> tuple[str, str]:
        view = views.get(key)
        return (view.kind, view.tree_text) if view else ("unknown", "?")

    return tree_rows(roots, describe, keys, branch, leaf)


def tree_rows(
    roots: list[SessionTreeNode],
    describe: Callable[[str, Entry], tuple[str, str]],
    keys: dict[int, str],
    branch: set[str],
    leaf: str | None,
) -> list[TreeRow]:
    """Rows in pre-order, drawn as omp's /tree draws them (indented only where a branch forks, the
    current branch first), so a long linear conversation does not drift to the right (iterative:
    trees can be 100k entries deep). ``describe(key, entry)`` gives a row's kind and text."""

    def on_branch(node: SessionTreeNode) -> bool:
        return keys.get(id(node.entry), "") in branch

    rows: list[TreeRow] = []
    seen: set[int] = set()
    stack = list(reversed(_root_frames(roots, on_branch))) if roots else []
    while stack:
        node, prefix, continuation = stack.pop()
        if id(node) in seen:
            continue  # duplicated ids can attach one node twice (spec §6.4)
        seen.add(id(node))
        key = keys.get(id(node.entry), "")
        shown = prefix if len(prefix) <= _MAX_PREFIX else "…" + prefix[-_MAX_PREFIX:]
        kind, text = describe(key, node.entry)
        rows.append(
            TreeRow(key, shown, kind, text, node.label, key in branch, key == leaf, not node.children)
        )
        if node.children:
            stack.extend(reversed(_frames(node.children, continuation, on_branch)))
    return rows


def _client_data(
    session: SessionManager,
    entries: Sequence[Entry],
    keys: dict[int, str],
    views: list[EntryView],
    leaf: str | None,
    selected: str | None,
) -> dict[str, Any]:
    """Per entry: key, parent key, in-context flag, compaction info and usage, for viewer.js."""
    rows = []
    for entry, view in zip(entries, views, strict=True):
        parent = session.get_parent(entry)
        found = classify(entry)
        compaction = found.kind == EntryKind.COMPACTION and not found.is_message
        kept = entry.get("firstKeptEntryId") if compaction else None
        preserve = entry.get("preserveData") if compaction else None
        remote = isinstance(preserve, dict) and _is_remote(preserve)
        usage = view.usage
        rows.append(
            [
                view.key,
                keys.get(id(parent)) if parent is not None else None,
                1 if view.in_context else 0,
                view.type,
                kept if isinstance(kept, str) else None,
                1 if remote else 0,
                [usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.cost] if usage else None,
            ]
        )
    return {"entries": rows, "leaf": leaf, "selected": selected}


def _is_remote(preserve: dict[str, Any]) -> bool:
    # Mirrors context._remote_history: a usable remote compaction replaces everything before it.
    remote = preserve.get("openaiRemoteCompaction")
    return (
        isinstance(remote, dict)
        and isinstance(remote.get("provider"), str)
        and bool(remote.get("provider"))
        and isinstance(remote.get("replacementHistory"), list)
    )


def _text(header: Entry, key: str) -> str | None:
    value = header.get(key)
    return value if isinstance(value, str) else None


def _result_details(entries: Sequence[Entry]) -> dict[str, Any]:
    """``details`` of every tool result by its call id (for drawing calls with their results' diffs)."""
    details: dict[str, Any] = {}
    for entry in entries:
        found = classify(entry)
        call_id = found.fields.get("toolCallId")
        if found.kind == EntryKind.TOOL_RESULT and isinstance(call_id, str) and "details" in found.fields:
            details[call_id] = found.fields["details"]
    return details


def _total_usage(totals: UsageStatistics) -> str:
    return usage_line(totals) if totals != UsageStatistics() else ""


def session_view(
    session: SessionManager,
    path: Path,
    images: ImageSource,
    selected: str | None = None,
    storage: SessionStorage | None = None,
) -> SessionView:
    """Build the :class:`SessionView` of an open session (``selected``: the node shown first; the
    leaf when absent or unknown; ``storage``: where it is stored, files by default)."""
    tree = session.get_tree()  # first: it loads every entry, so that the entries below are those
    entries = session.get_entries()  # of the tree (a list, with the identities the keys need)
    keys = _keys(session, entries)
    calls = ToolCalls(_result_details(entries))
    views = [entry_view(keys[id(entry)], entry, images, calls) for entry in entries]
    by_key = {view.key: view for view in views}
    leaf_entry = entries[-1] if entries else None
    leaf = keys[id(leaf_entry)] if leaf_entry is not None else None
    rows = _tree_rows(tree, by_key, keys, _branch_keys(session, keys, leaf_entry), leaf)
    chosen = selected if selected in by_key else leaf
    header = session.get_header()
    first_user = first_prompt(
        v.tree_text.removeprefix("user: ") for v in views if v.tree_text.startswith("user: ")
    )
    return SessionView(
        title=_text(header, "title") or one_line(first_user, 120) or path.name,
        session_id=str(header.get("id")),
        cwd=_text(header, "cwd") or "",
        created=date_time(_text(header, "timestamp")),
        created_iso=_text(header, "timestamp") or "",
        file_name=path.name,
        size=format_size(stored_size(path, storage)),
        parent_session=_text(header, "parentSession"),
        entries=views,
        rows=rows,
        leaf_key=leaf,
        selected_key=chosen,
        total_usage=_total_usage(session.get_usage_statistics()),
        issues=[f"line {issue.line}: {issue.reason}" for issue in session.get_load_issues()],
        data_json=script_json(_client_data(session, entries, keys, views, leaf, chosen)),
    )


def stored_size(path: Path, storage: SessionStorage | None = None) -> int:
    """The session's size in its store (a file, or a row of a database ``storage``)."""
    stat = session_storage(storage).stat_session(path)
    return stat.size if stat is not None else 0


def build_session_view(
    path: Path, images: ImageSource, selected: str | None = None, *, storage: SessionStorage | None = None
) -> SessionView:
    """Open ``path`` (a file, else a row of ``storage``) read-only (blob references stay
    references) and build its view."""
    with read_session(path, storage=storage) as session:
        return session_view(session, path, images, selected, storage)
