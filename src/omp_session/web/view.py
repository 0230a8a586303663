"""A whole session as the viewer shows it: every entry rendered once, the tree panel, and the data the
page script needs to show the context path at any node (spec §5) without asking the server again.

Every entry of every branch is rendered into the page; the script moves the ones on the selected
path into the transcript. That keeps the exported file self-contained and clicks instant.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from omp_session.model.tree import SessionIndex, SessionTreeNode
from omp_session.model.usage import UsageStatistics
from omp_session.store.loading import LoadedSession, load_session
from omp_session.web.entry_views import EntryView, ToolCalls, entry_view
from omp_session.web.format import date_time, format_size, one_line, usage_line
from omp_session.web.images import ImageSource

__all__ = ["SessionView", "TreeRow", "build_session_view", "script_json"]

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


def script_json(value: Any) -> Markup:
    """JSON safe to embed in ``<script type="application/json">``: ``<``, ``>``, ``&`` and line
    separators are escaped, so no string in a session can close the script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


def _keys(index: SessionIndex) -> dict[int, str]:
    """DOM key per entry object: its id when it is the indexed one, else ``~<file position>``."""
    keys: dict[int, str] = {}
    for position, entry in enumerate(index.entries):
        entry_id = entry.get("id")
        canonical = isinstance(entry_id, str) and entry_id and index.by_id.get(entry_id) is entry
        keys[id(entry)] = entry_id if canonical else f"~{position}"  # type: ignore[assignment]
    return keys


def _branch_keys(index: SessionIndex, keys: dict[int, str], leaf: Entry | None) -> set[str]:
    return {keys[id(entry)] for entry in index.branch(leaf.get("id") if leaf else None) if id(entry) in keys}


Frame = tuple[SessionTreeNode, str, str]


def _frames(children: list[SessionTreeNode], continuation: str) -> list[Frame]:
    """``(child, row prefix, prefix below it)``: an only child keeps the column, siblings branch."""
    if len(children) == 1:
        return [(children[0], continuation, continuation)]
    last = len(children) - 1
    return [
        (
            child,
            continuation + ("└─ " if i == last else "├─ "),
            continuation + ("   " if i == last else "│  "),
        )
        for i, child in enumerate(children)
    ]


def _tree_rows(
    roots: list[SessionTreeNode],
    views: dict[str, EntryView],
    keys: dict[int, str],
    branch: set[str],
    leaf: str | None,
) -> list[TreeRow]:
    """Rows in pre-order, drawn as omp's /tree draws them, so a long linear conversation does not
    drift to the right (iterative: trees can be 100k entries deep)."""
    rows: list[TreeRow] = []
    seen: set[int] = set()
    stack = list(reversed(_frames(roots, ""))) if roots else []
    while stack:
        node, prefix, continuation = stack.pop()
        if id(node) in seen:
            continue  # duplicated ids can attach one node twice (spec §6.4)
        seen.add(id(node))
        key = keys.get(id(node.entry), "")
        view = views.get(key)
        shown = prefix if len(prefix) <= _MAX_PREFIX else "…" + prefix[-_MAX_PREFIX:]
        kind, text = (view.kind, view.tree_text) if view else ("unknown", "?")
        rows.append(
            TreeRow(key, shown, kind, text, node.label, key in branch, key == leaf, not node.children)
        )
        if node.children:
            stack.extend(reversed(_frames(node.children, continuation)))
    return rows


def _client_data(
    index: SessionIndex, keys: dict[int, str], views: list[EntryView], leaf: str | None, selected: str | None
) -> dict[str, Any]:
    """Per entry: key, parent key, in-context flag, compaction info and usage, for viewer.js."""
    rows = []
    for entry, view in zip(index.entries, views, strict=True):
        parent = index.parent_of(entry)
        kept = entry.get("firstKeptEntryId") if view.type == "compaction" else None
        preserve = entry.get("preserveData") if view.type == "compaction" else None
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


def _total_usage(entries: list[Entry]) -> str:
    totals = UsageStatistics.of(entries)
    return usage_line(totals) if totals != UsageStatistics() else ""


def view_of_loaded(
    loaded: LoadedSession, path: Path, images: ImageSource, selected: str | None = None
) -> SessionView:
    """Build the :class:`SessionView` of an already loaded session (``selected``: the node shown
    first; the leaf when absent or unknown)."""
    index = SessionIndex(loaded.entries)
    keys = _keys(index)
    calls: ToolCalls = {}
    views = [entry_view(keys[id(entry)], entry, images, calls) for entry in index.entries]
    by_key = {view.key: view for view in views}
    leaf_entry = index.entries[-1] if index.entries else None
    leaf = keys[id(leaf_entry)] if leaf_entry is not None else None
    rows = _tree_rows(index.get_tree(), by_key, keys, _branch_keys(index, keys, leaf_entry), leaf)
    chosen = selected if selected in by_key else leaf
    header = loaded.header
    first_user = next((v.tree_text.removeprefix("user: ") for v in views if v.kind == "user"), "")
    return SessionView(
        title=_text(header, "title") or one_line(first_user, 120) or path.name,
        session_id=str(header.get("id")),
        cwd=_text(header, "cwd") or "",
        created=date_time(_text(header, "timestamp")),
        file_name=path.name,
        size=format_size(loaded.size),
        parent_session=_text(header, "parentSession"),
        entries=views,
        rows=rows,
        leaf_key=leaf,
        selected_key=chosen,
        total_usage=_total_usage(index.entries),
        issues=[f"line {issue.line}: {issue.reason}" for issue in loaded.issues],
        data_json=script_json(_client_data(index, keys, views, leaf, chosen)),
    )


def build_session_view(path: Path, images: ImageSource, selected: str | None = None) -> SessionView:
    """Load ``path`` read-only (blob references stay references) and build its view."""
    return view_of_loaded(load_session(path), path, images, selected)
