"""The tree panel of a session (issue 13 #2, #3): rows drawn like omp's /tree, built once and
after the first screen has been sent, then cut into slices, filtered and folded on request.

Building the rows of a 50,000-entry session takes a few hundred milliseconds (every entry is
classified), so :class:`LazyTree` builds them on first use; the server asks for that right after it
has answered the first page (a background task), and a request that needs the rows meanwhile waits
for the one build rather than starting a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from omp_session.model.tree import SessionTreeNode
from omp_session.rendering.format import one_line
from omp_session.tools.entry_kinds import Classified
from omp_session.tools.summary import entry_summary

__all__ = ["ROWS", "ROW_TEXT", "LazyTree", "TreeRow", "WindowedTree", "row_text", "tree_rows"]

Entry = dict[str, Any]

#: Tree rows sent with the page (around the leaf) and per request at most.
ROWS = 200
#: Characters of an entry's text that a tree row shows (summarised from at most twice as many).
ROW_TEXT = 160
#: Rows a filter answers at most (their texts travel with the answer).
FILTER_LIMIT = 2000
#: Filters whose answers a tree keeps (each is at most FILTER_LIMIT rows).
_FILTERS = 16
#: Tree prefixes deeper than this are shortened: a row must stay readable in a narrow panel.
_MAX_PREFIX = 48


def row_text(entry: Entry, classified: Classified | None = None) -> str:
    """What a tree row says of an entry (the one rule of a row's text: the rows the tree draws,
    the bar's "Context at", the tree filter and the export's rows all read it)."""
    summary = entry_summary(entry, ROW_TEXT, classified=classified)
    text = summary.text if summary.kind == "event" else f"{summary.kind}: {summary.text}"
    return one_line(text, ROW_TEXT)


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


@dataclass
class WindowedTree:
    """Rows in pre-order with, per row, where its subtree ends (for folding)."""

    rows: list[TreeRow]
    row_of: dict[str, int]
    #: Per row: the index after its subtree's last row.
    ends: list[int]
    #: Rows that start a branch (their parent has several children) and have rows below them.
    foldable: set[int]
    entry_of: Callable[[str], Entry]
    #: What the entry of a key is, when the session has classified its entries already.
    kind_of: Callable[[str], Classified | None] = lambda _key: None
    _texts: dict[int, str] = field(default_factory=dict)
    _filters: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def text(self, index: int) -> str:
        found = self._texts.get(index)
        if found is None:
            key = self.rows[index].key
            found = self._texts[index] = row_text(self.entry_of(key), self.kind_of(key))
        return found

    def row(self, index: int) -> list[Any]:
        """``[key, prefix, kind, text, label, flags, end]`` (flags: 1 on the current branch, 2 the
        leaf, 4 a tip, 8 foldable; ``end``: the index after the row's subtree)."""
        row = self.rows[index]
        flags = (
            (1 if row.on_branch else 0)
            | (2 if row.is_leaf else 0)
            | (4 if row.is_tip else 0)
            | (8 if index in self.foldable else 0)
        )
        return [row.key, row.prefix, row.kind, self.text(index), row.label, flags, self.ends[index]]

    def slice(self, start: int, count: int) -> list[list[Any]]:
        first = max(start, 0)
        last = min(first + max(min(count, ROWS * 5), 0), len(self.rows))
        return [self.row(index) for index in range(first, last)]

    def matching(self, query: str) -> dict[str, Any]:
        """Rows whose text or label holds ``query`` (case-insensitive), as ``[index, row]`` pairs
        (the first :data:`FILTER_LIMIT`), and how many matched in all. The answers of the last
        few filters are kept: the rows do not change (a tree is one version of the file), and
        a filter reads every row's text."""
        with self._lock:
            found = self._filters.get(query)
        if found is None:
            found = self._match(query)
            with self._lock:
                while len(self._filters) >= _FILTERS:
                    del self._filters[next(iter(self._filters))]  # the oldest
                self._filters[query] = found
        return found

    def _match(self, query: str) -> dict[str, Any]:
        needle = query.strip().lower()
        hits: list[list[Any]] = []
        total = 0
        for index, row in enumerate(self.rows):
            if needle in self.text(index).lower() or (row.label is not None and needle in row.label.lower()):
                total += 1
                if len(hits) < FILTER_LIMIT:
                    hits.append([index, self.row(index)])
        return {"query": query, "total": total, "rows": hits}


def subtree_ends(rows: Sequence[TreeRow], parent_row: Sequence[int | None]) -> list[int]:
    """Per row (pre-order), the index after its subtree: its own index plus its subtree's size."""
    sizes = [1] * len(rows)
    for index in range(len(rows) - 1, -1, -1):
        parent = parent_row[index]
        if parent is not None and parent < index:
            sizes[parent] += sizes[index]
    return [index + size for index, size in enumerate(sizes)]


class LazyTree:
    """A :class:`WindowedTree` built on first use, once, whichever thread asks first."""

    def __init__(self, build: Callable[[], WindowedTree]) -> None:
        self._build: Callable[[], WindowedTree] | None = build
        self._tree: WindowedTree | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._tree is not None

    def get(self) -> WindowedTree:
        tree = self._tree
        if tree is not None:
            return tree
        with self._lock:
            if self._tree is None:
                assert self._build is not None
                self._tree = self._build()
                self._build = None  # drop what the build held on to
            return self._tree
