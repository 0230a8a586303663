"""Reading a session for the windowed view (see :mod:`omp_session.rendering.windowed`): one read-only
open, the entries' keys and parents; the tree rows are built on first use (their texts are
summarised later still, per request)."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omp_session.manager import SessionManager
from omp_session.rendering.format import one_line
from omp_session.rendering.images import ImageSource
from omp_session.rendering.windowed import WindowedSession
from omp_session.rendering.windowed_tree import LazyTree, WindowedTree, subtree_ends, tree_rows
from omp_session.store import SessionStorage
from omp_session.tools.content import message_text
from omp_session.tools.entry_kinds import STATE_CHANGES, Classified, EntryKind, classify
from omp_session.tools.reading import read_session
from omp_session.tools.summary import first_prompt

__all__ = ["open_windowed"]

Entry = dict[str, Any]

_ROW_KINDS = {
    EntryKind.USER: "user",
    EntryKind.DEVELOPER: "user",
    EntryKind.FILE_MENTION: "user",
    EntryKind.ASSISTANT: "assistant",
    EntryKind.TOOL_RESULT: "tool",
    EntryKind.BASH: "exec",
    EntryKind.PYTHON: "exec",
    EntryKind.CUSTOM_MESSAGE: "custom",
    EntryKind.SESSION_INIT: "custom",
    EntryKind.COMPACTION: "compaction",
    EntryKind.BRANCH_SUMMARY: "summary",
    EntryKind.LABEL: "meta",
    EntryKind.CUSTOM_ENTRY: "meta",
}


def _row_kind(kind: EntryKind) -> str:
    return "meta" if kind in STATE_CHANGES else _ROW_KINDS.get(kind, "unknown")


def _title(header: Entry, entries: Sequence[Entry], path: Path) -> str:
    title = header.get("title")
    if isinstance(title, str) and title:
        return title
    texts = (message_text(f.fields) for e in entries if (f := classify(e)).kind == EntryKind.USER)
    return one_line(first_prompt(texts), 120) or path.name


def open_windowed(
    path: Path, images: ImageSource, *, storage: SessionStorage | None = None
) -> WindowedSession:
    """Read ``path`` (a file, else a row of ``storage``; read-only) and index it for windows and
    rows."""
    with read_session(path, storage=storage) as session:
        return _index(session, path, images, storage)


def _index(
    session: SessionManager, path: Path, images: ImageSource, storage: SessionStorage | None
) -> WindowedSession:
    """What the first window needs (entries, keys, parents); the tree rows are built later, after
    the first screen has been sent (see :mod:`omp_session.rendering.windowed_tree`)."""
    roots = session.get_tree()  # first: it loads every entry, so that the entries below are those
    entries = list(session.get_entries())  # of the tree (with the identities the keys need)
    by_object = _entry_keys(session, entries)
    keys = [by_object[id(entry)] for entry in entries]
    position = {key: index for index, key in enumerate(keys)}
    parents: list[int | None] = []
    for entry in entries:
        parent = session.get_parent(entry)
        parents.append(position.get(by_object.get(id(parent), "")) if parent is not None else None)
    leaf_key = keys[-1] if keys else None
    # The session below, for the classes it may have made of its entries already: held weakly, so
    # the session and its tree make no cycle (a dropped session is freed at once, not by the GC).
    made: list[weakref.ref[WindowedSession]] = []

    def kind_at(at: int) -> Classified:
        windowed = made[0]() if made else None
        return windowed.kind_at(at) if windowed is not None else classify(entries[at])

    def kind_of(key: str, entry: Entry) -> Classified:
        at = position.get(key)
        return kind_at(at) if at is not None and entries[at] is entry else classify(entry)

    def build_tree() -> WindowedTree:
        branch = {keys[p] for p in _walk(parents, len(keys) - 1)} if keys else set()
        rows = tree_rows(
            roots,
            lambda key, entry: (_row_kind(kind_of(key, entry).kind), ""),
            by_object,
            branch,
            leaf_key,
        )
        row_of = {row.key: index for index, row in enumerate(rows)}
        parent_row: list[int | None] = []
        for row in rows:
            parent = parents[position[row.key]]
            parent_row.append(row_of.get(keys[parent]) if parent is not None else None)
        children = [0] * len(rows)
        for parent in parent_row:
            if parent is not None:
                children[parent] += 1
        foldable = {
            index
            for index, parent in enumerate(parent_row)
            if parent is not None and children[parent] > 1 and children[index] > 0
        }
        return WindowedTree(
            rows=rows,
            row_of=row_of,
            ends=subtree_ends(rows, parent_row),
            foldable=foldable,
            entry_of=lambda key: entries[position[key]],
            kind_of=lambda key: kind_at(position[key]),
        )

    header = session.get_header()
    windowed = WindowedSession(
        path=path,
        images=images,
        header=header,
        entries=entries,
        keys=keys,
        position=position,
        parents=parents,
        tree=LazyTree(build_tree),
        leaf=leaf_key,
        usage=session.get_usage_statistics(),
        issues=[f"line {issue.line}: {issue.reason}" for issue in session.get_load_issues()],
        title=_title(header, entries, path),
        storage=storage,
    )
    made.append(weakref.ref(windowed))
    return windowed


def _entry_keys(session: SessionManager, entries: Sequence[Entry]) -> dict[int, str]:
    """DOM key per entry object: its id when it is the indexed one, else ``~<file position>``."""
    keys: dict[int, str] = {}
    for position, entry in enumerate(entries):
        entry_id = entry.get("id")
        canonical = isinstance(entry_id, str) and entry_id and session.get_entry(entry_id) is entry
        keys[id(entry)] = entry_id if canonical else f"~{position}"  # type: ignore[assignment]
    return keys


def _walk(parents: Sequence[int | None], start: int) -> list[int]:
    out: list[int] = []
    seen: set[int] = set()
    current: int | None = start
    while current is not None and current not in seen:
        seen.add(current)
        out.append(current)
        current = parents[current]
    return out
