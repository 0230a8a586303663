"""The tree panel of a big session (issue 13 #2, #3): rows drawn like omp's /tree, built once and
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

from omp_session.rendering.format import one_line
from omp_session.rendering.view import TreeRow
from omp_session.tools.entry_kinds import Classified
from omp_session.tools.summary import entry_summary

__all__ = ["ROWS", "ROW_TEXT", "LazyTree", "WindowedTree"]

Entry = dict[str, Any]

#: Tree rows sent with the page (around the leaf) and per request at most.
ROWS = 200
#: Characters of an entry's text that a tree row shows (summarised from at most twice as many).
ROW_TEXT = 160
#: Rows a filter answers at most (their texts travel with the answer).
FILTER_LIMIT = 2000
#: Filters whose answers a tree keeps (each is at most FILTER_LIMIT rows).
_FILTERS = 16


def row_text(entry: Entry, classified: Classified | None = None) -> str:
    summary = entry_summary(entry, ROW_TEXT, classified=classified)
    text = summary.text if summary.kind == "event" else f"{summary.kind}: {summary.text}"
    return one_line(text, ROW_TEXT)


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
