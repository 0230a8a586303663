"""A session in the viewer, a window at a time (issue 13 #2; every session, issue 23 #2: a small
one is one window): a window of the transcript, a virtual tree, small updates.

No session is rendered whole into its page. The page carries the header, the last :data:`WINDOW`
entries of the context at the leaf (already rendered) and the tree rows around the leaf; the page
script asks for more as the reader scrolls or clicks:

* ``/api/window/<ref>?at=<key>`` the context at a node, as the model sees it (spec §5: the last
  compaction's summary, then the kept entries and what follows), one window of rendered entries:
  ``end=<i>`` the window before position ``i``, ``start=<i>`` the one from ``i``, ``around=<key>``
  the one holding an entry, ``after=<key>`` only the entries after one already shown (live updates;
  ``continues`` says whether they follow it).
* ``/api/rows/<ref>?start=<i>&count=<n>`` tree rows ``i…i+n`` (text and label as plain strings).

Entries are rendered by :mod:`omp_session.rendering.entry_html`; only what is asked for is
rendered, and row texts are summarised when a row is first asked for.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from omp_session.model.context import entry_to_message, is_remote_compaction
from omp_session.model.usage import UsageStatistics, usage_of
from omp_session.rendering.entry_html import entry_html
from omp_session.rendering.entry_views import ToolCalls, entry_view
from omp_session.rendering.format import as_float, date_time, format_size, usage_line
from omp_session.rendering.images import ImageSource
from omp_session.rendering.windowed_tree import ROWS, LazyTree
from omp_session.store import SessionStorage
from omp_session.store.file_sessions import session_storage
from omp_session.tools.entry_kinds import Classified, EntryKind, classify

__all__ = ["WINDOW", "Arranged", "WindowedSession", "own_usage", "stored_size"]

Entry = dict[str, Any]

#: Entries rendered per window (the export carries it for export_api.js: ``windowed_export._meta``).
WINDOW = 40
#: Nodes whose context (path, split, rows on the path) a session keeps: the leaf, the nodes
#: clicked last. A path of a 50,000-entry session is ~0.4 MB.
_ROUTES = 16


@dataclass
class Arranged:
    """The context at a node as the model receives it: dropped entries (replaced by the last
    compaction), the compaction, then the entries sent after its summary."""

    dropped: list[int]
    summary: int | None
    rest: list[int]


@dataclass
class _Route:
    """What the windows of one node share: its path, the path's split and how many of its
    entries the model is sent; the tree rows on the path once the tree is built."""

    path: list[int]
    arranged: Arranged
    sent: int
    path_rows: list[list[int]] | None = None


@dataclass
class WindowedSession:
    """One session, read once per file version; windows and rows are cut from it on demand."""

    path: Path
    images: ImageSource
    header: Entry
    entries: list[Entry]
    keys: list[str]
    position: dict[str, int]
    parents: list[int | None]
    tree: LazyTree
    leaf: str | None
    usage: UsageStatistics
    issues: list[str]
    title: str = ""
    #: Where the session is stored (``None``: a file).
    storage: SessionStorage | None = None
    _usage: dict[int, tuple[float, ...]] = field(default_factory=dict)
    #: The leaf's path and, per position, its index there (-1: not on it), made on first use.
    _leaf_path: tuple[list[int], list[int]] | None = None
    _routes: OrderedDict[str, _Route] = field(default_factory=OrderedDict)
    #: Per position, its tree row (-1: none), once the tree is built.
    _row_at: list[int] | None = None
    #: Entry ids held by one entry only, with its position; the ids held by several.
    _ids: tuple[dict[str, int], set[str]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: Per position, what the entry is, once a pass over every entry asked (:meth:`kinds`).
    _kinds: list[Classified] | None = None
    #: Per position, the usage the entry adds (:func:`own_usage`), once :meth:`own_usages` ran.
    _own: list[tuple[float, ...] | None] | None = None

    # -- what the entries are ------------------------------------------------------------------

    def kinds(self) -> list[Classified]:
        """Every entry classified, in order: made once, for the passes over every entry (the
        export's rows, tree, flags and tool calls each asked it of 50,000 entries, issue 30 #3).
        The viewer's windows classify only the entries they show (:meth:`kind_at`), so a session
        is not classified whole before its first screen. Entries are not changed once read (a
        new file version is a new session), so a result never goes stale."""
        kinds = self._kinds
        if kinds is None:
            kinds = self._kinds = [classify(entry) for entry in self.entries]
        return kinds

    def kind_at(self, position: int) -> Classified:
        """What the entry at ``position`` is (from :meth:`kinds` once made)."""
        kinds = self._kinds
        return kinds[position] if kinds is not None else classify(self.entries[position])

    def own_usages(self) -> list[tuple[float, ...] | None]:
        """:func:`own_usage` of every entry, in order, made once (the path's usage and the
        export's facts both want it)."""
        own = self._own
        if own is None:
            own = self._own = [own_usage(entry) for entry in self.entries]
        return own

    # -- paths ---------------------------------------------------------------------------------

    def _walk(self, current: int | None) -> list[int]:
        """Positions from ``current`` up to its root (cycles end the walk)."""
        out: list[int] = []
        seen: set[int] = set()
        while current is not None and current not in seen:
            seen.add(current)
            out.append(current)
            current = self.parents[current]
        return out

    def _along_leaf(self) -> tuple[list[int], list[int]]:
        found = self._leaf_path
        if found is None:
            path = self._walk(self.position.get(self.leaf)) if self.leaf is not None else []
            path.reverse()
            index = [-1] * len(self.entries)
            for depth, position in enumerate(path):
                index[position] = depth
            found = self._leaf_path = (path, index)
        return found

    def path_to(self, key: str) -> list[int]:
        """Positions root→``key`` over parent links (the tree's, so cycles cannot hang). Walked up
        to the first node on the leaf's path only, whose own path is a slice of the leaf's: a
        50,000-entry session is not walked entry by entry for each window (issue 25)."""
        along, on_leaf = self._along_leaf()
        out: list[int] = []
        seen: set[int] = set()
        current = self.position.get(key)
        while current is not None and current not in seen:
            depth = on_leaf[current]
            if depth >= 0:  # the rest of the walk is the leaf's path up to here
                out.reverse()
                return along[: depth + 1] + out
            seen.add(current)
            out.append(current)
            current = self.parents[current]
        out.reverse()
        return out

    def route(self, key: str) -> _Route:
        """The path to ``key``, its split and the count of entries sent (kept for the last few
        nodes asked: every window of a node, and every poll of the page, needs them)."""
        with self._lock:
            found = self._routes.get(key)
            if found is not None:
                self._routes.move_to_end(key)
                return found
        path = self.path_to(key)
        arranged = self.arrange(path)
        sent = (1 if arranged.summary is not None else 0) + sum(
            1 for p in arranged.rest if _in_context(self.entries[p])
        )
        found = _Route(path, arranged, sent)
        with self._lock:
            self._routes[key] = found
            while len(self._routes) > _ROUTES:
                self._routes.popitem(last=False)
        return found

    def arrange(self, path: Sequence[int]) -> Arranged:
        """The split of ``build_session_context`` (only the last compaction on the path counts)."""
        at = reset = -1
        for index in range(len(path) - 1, -1, -1):  # the last ones: they are near the end
            found = self.kind_at(path[index])
            if found.kind == EntryKind.COMPACTION and not found.is_message:
                at = index
                break
            if found.kind == EntryKind.RESET_BOUNDARY and reset < 0:
                reset = index  # omp 18's /clear after the last compaction: the context starts here
        if reset >= 0:
            return Arranged(list(path[:reset]), None, list(path[reset:]))
        if at < 0:
            return Arranged([], None, list(path))
        compaction = self.entries[path[at]]
        before = list(path[:at])
        kept = compaction.get("firstKeptEntryId")
        remote = is_remote_compaction(compaction)
        start = -1
        if not remote and isinstance(kept, str):
            start = self._first_with_id(before, kept)
        dropped = before[:start] if start >= 0 else before
        rest = (before[start:] if start >= 0 else []) + list(path[at + 1 :])
        return Arranged(dropped, path[at], rest)

    def _first_with_id(self, positions: list[int], entry_id: str) -> int:
        """The index in ``positions`` of the first entry whose id is ``entry_id``, else -1: looked
        up by id (not by reading every entry of a 50,000-entry path) unless several entries
        hold that id (a damaged file), then searched in order."""
        found = self._ids
        if found is None:
            unique: dict[str, int] = {}
            several: set[str] = set()
            for position, entry in enumerate(self.entries):
                value = entry.get("id")
                if isinstance(value, str):
                    if value in unique:
                        several.add(value)
                    unique.setdefault(value, position)
            for value in several:
                del unique[value]
            found = self._ids = (unique, several)
        unique, several = found
        if entry_id in several:
            return next((i for i, p in enumerate(positions) if self.entries[p].get("id") == entry_id), -1)
        where = unique.get(entry_id)
        if where is None:
            return -1
        try:
            return positions.index(where)
        except ValueError:
            return -1

    def newest_leaf_under(self, key: str, shown: str | None = None) -> str:
        """For a deep link: the node ``shown`` (whose context the page shows) when its path holds
        ``key``, else the current leaf when it holds ``key``, else the newest tip below it."""
        position = self.position.get(key)
        if shown is not None and shown in self.position and position in self.path_to(shown):
            return shown
        if self.leaf is not None and position is not None and self._along_leaf()[1][position] >= 0:
            return self.leaf
        tree = self.tree.get()
        index = tree.row_of.get(key)
        if index is None:
            return key
        tip = key
        for row in tree.rows[index + 1 : tree.ends[index]]:  # pre-order: the subtree follows its root
            if row.is_tip:
                tip = row.key
        return tip

    # -- windows -------------------------------------------------------------------------------

    def _render(self, positions: Sequence[int], context: Sequence[int], classes: dict[int, str]) -> str:
        details = {}
        for position in context:
            found = self.kind_at(position)
            call_id = found.fields.get("toolCallId")
            if found.kind == EntryKind.TOOL_RESULT and isinstance(call_id, str) and "details" in found.fields:
                details[call_id] = found.fields["details"]
        calls = ToolCalls(details)
        pieces = []
        for position in positions:
            view = entry_view(
                self.keys[position], self.entries[position], self.images, calls, self.kind_at(position)
            )
            html = str(entry_html(view))
            extra = classes.get(position, "")
            if extra:
                html = html.replace('<article class="entry ', f'<article class="entry {extra} ', 1)
            pieces.append(html)
        return "".join(pieces)

    def window(
        self,
        at: str | None,
        *,
        start: int | None = None,
        end: int | None = None,
        around: str | None = None,
        after: str | None = None,
        count: int = WINDOW,
        dropped: bool = False,
        first_screen: bool = False,
    ) -> dict[str, Any]:
        """One window of the context at ``at`` (default: the leaf), as JSON for the page script.

        ``dropped``: a window of the entries the last compaction replaced (shown dimmed in a
        collapsed group) instead of the context. ``first_screen``: leave out
        what needs the tree rows or the path's usage (``"pending": true``); the page asks for them
        with its first rows (:meth:`rows_near`), so the first screen waits for neither."""
        key = at if at is not None and at in self.position else self.leaf
        if key is None:  # no entry to show (a big file of unreadable lines): the same keys, empty
            return {
                "at": None,
                "leaf": None,
                "total": 0,
                "start": 0,
                "end": 0,
                "dropped": 0,
                "cleared": False,
                "summary": "",
                "html": "",
                "keys": [],
                "sent": 0,
                "pathLength": 0,
                **self.tree_facts("", []),
            }
        route = self.route(key)
        path, arranged = route.path, route.arranged
        rest = arranged.dropped if dropped else arranged.rest
        first, last = _bounds(
            [self.keys[p] for p in rest] if after is not None or around is not None else [],
            len(rest),
            start=start,
            end=end,
            around=around,
            after=after,
            count=count,
            summary_first=not dropped and arranged.summary is not None and self.keys[arranged.summary] == key,
        )
        shown = rest[first:last]
        kind = "dropped" if dropped else "ctx"
        classes = {p: kind for p in shown if dropped or _in_context(self.entries[p])}
        html = self._render(shown, rest[max(first - 10, 0) : last + 20], classes)
        summary_html = ""
        if arranged.summary is not None and first == 0 and not dropped:
            summary_html = self._render([arranged.summary], [], {arranged.summary: "ctx active-compaction"})
        sent = route.sent
        reply: dict[str, Any] = {
            "at": key,
            "leaf": self.leaf,
            "total": len(rest),
            "start": first,
            "end": last,
            "dropped": len(arranged.dropped),
            "cleared": arranged.summary is None and bool(arranged.dropped),
            "summary": summary_html,
            "html": html,
            "keys": [self.keys[p] for p in shown],
            "sent": sent,
            "pathLength": len(path),
        }
        if after is not None:
            # Whether these entries follow ``after`` in the context at the node: not when the file
            # grew on another branch, or ``after`` is not in the context any more (the page then
            # shows the context afresh instead of appending).
            reply["continues"] = first > 0 and self.keys[rest[first - 1]] == after
        if first_screen and not self.tree.ready:
            pending = {
                "pending": True,
                "where": "the leaf",
                "usage": "",
                "pathRows": [],
                "row": None,
                "keyRows": [],
            }
            reply.update(pending, rows=len(self.entries))
        else:
            reply.update(self.tree_facts(key, path, reply["keys"]))
        return reply

    def tree_facts(self, key: str, path: Sequence[int], shown: Sequence[str] = ()) -> dict[str, Any]:
        """What a window says about the tree and the path: the rows on the path, the selected row,
        its text, the path's usage and the row of each entry ``shown`` (so the tree can follow the
        transcript as it scrolls)."""
        tree = self.tree.get()
        row_of = tree.row_of
        usage = self.path_usage(path)
        index = row_of.get(key)
        return {
            "where": tree.text(index) if index is not None else key,
            "usage": usage_line(usage) if usage != UsageStatistics() else "",
            "pathRows": self._path_rows(key, path),
            "row": index,
            "rows": len(tree.rows),
            "keyRows": [row_of.get(shown_key) for shown_key in shown],
        }

    def _path_rows(self, key: str, path: Sequence[int]) -> list[list[int]]:
        """The tree rows on ``path`` (``key``'s), as runs; kept with the node's route."""
        with self._lock:
            route = self._routes.get(key)
        if route is not None and route.path_rows is not None and route.path is path:
            return route.path_rows
        row_at = self._row_at
        if row_at is None:
            row_of = self.tree.get().row_of
            row_at = self._row_at = [row_of.get(key, -1) for key in self.keys]
        found = _ranges(sorted(filter((-1).__ne__, map(row_at.__getitem__, path))))
        if route is not None and route.path is path:
            route.path_rows = found
        return found

    def path_usage(self, path: Sequence[int]) -> UsageStatistics:
        """Usage summed along ``path`` (root first), remembering every prefix: a click on any node
        of a path already summed costs one lookup."""
        known = len(path)
        while known > 0 and path[known - 1] not in self._usage:
            known -= 1
        totals = self._usage[path[known - 1]] if known else (0.0,) * len(_SUMMED)
        owns = self._own
        for position in path[known:]:
            own = owns[position] if owns is not None else own_usage(self.entries[position])
            if own is not None:
                totals = tuple(a + b for a, b in zip(totals, own, strict=True))
            self._usage[position] = totals
        summed = UsageStatistics()
        for name, value in zip(_SUMMED, totals, strict=True):
            setattr(summed, name, value)
        return summed

    # -- tree rows -----------------------------------------------------------------------------

    def rows_slice(self, start: int, count: int) -> list[list[Any]]:
        """Rows ``start…start+count`` (see :meth:`WindowedTree.row`)."""
        return self.tree.get().slice(start, count)

    def rows_near(self, key: str | None, shown: Sequence[str] = ()) -> dict[str, Any]:
        """The rows around ``key``'s row (default: the leaf) and the window facts that need the
        tree (see :meth:`window`'s ``first_screen``) for the entries ``shown``."""
        at = key if key is not None and key in self.position else self.leaf
        if at is None:
            return {"start": 0, "rows": [], "count": 0}
        facts = self.tree_facts(at, self.route(at).path, shown)
        row = facts["row"] or 0
        first = max(int(row) - ROWS // 2, 0)
        rows = self.rows_slice(first, ROWS)
        return {**facts, "at": at, "start": first, "rows": rows, "count": facts["rows"]}

    def build_tree(self) -> None:
        """Build the tree rows and the leaf's path usage now (the server's task after the page)."""
        if self.leaf is not None:
            self.tree_facts(self.leaf, self.route(self.leaf).path)

    # -- the page ------------------------------------------------------------------------------

    def prepare_page(self) -> None:
        """Build the tree rows now if the page is to carry them all (see :meth:`page_data`)."""
        if len(self.entries) <= ROWS:
            self.build_tree()

    def page_data(self) -> tuple[dict[str, Any], Markup]:
        """What the page carries: the script's data and the first window's HTML (rendered once,
        into the transcript; not repeated in the data). The tree rows come in the page when they
        are built already, or when every row fits in it (at most :data:`ROWS` entries: building
        them costs less than the second request the page would make); else the page script asks
        for them (``rowsPending``), so a big session's first screen waits for no tree."""
        self.prepare_page()
        window = self.window(None, first_screen=True)
        html = Markup(str(window.pop("summary")) + str(window.pop("html")))
        pending = bool(window.get("pending"))
        row = window.get("row") or 0
        first = max(int(row) - ROWS // 2, 0)
        data = {
            "window": window,
            "rowsStart": first,
            "rows": [] if pending else self.rows_slice(first, ROWS),
            "rowsPending": pending,
            "rowCount": len(self.entries) if pending else window["rows"],
        }
        return data, html

    def facts(self) -> dict[str, Any]:
        text = self.header.get("cwd")
        created = self.header.get("timestamp")
        parent = self.header.get("parentSession")
        return {
            "title": self.title,
            "session_id": str(self.header.get("id")),
            "cwd": text if isinstance(text, str) else "",
            "created": date_time(created if isinstance(created, str) else None),
            "created_iso": created if isinstance(created, str) else "",
            "entries": len(self.entries),
            "size": format_size(stored_size(self.path, self.storage)),
            "total_usage": usage_line(self.usage) if self.usage != UsageStatistics() else "",
            "parent_session": parent if isinstance(parent, str) else None,
            "issues": self.issues,
            "file_name": self.path.name,
        }


def stored_size(path: Path, storage: SessionStorage | None = None) -> int:
    """The session's size in its store (a file, or a row of a database ``storage``)."""
    stat = session_storage(storage).stat_session(path)
    return stat.size if stat is not None else 0


def own_usage(entry: Entry) -> tuple[float, ...] | None:
    """The usage an entry adds (spec §6.3), or ``None`` for the many entries that add none."""
    # Only an assistant's message or a task's result carries spend (``usage_of``, the rule the
    # totals count by): the other entries are answered without building a ``UsageStatistics``.
    spent, is_model_usage = usage_of(entry)
    if spent is None or is_model_usage:
        return None
    usage = UsageStatistics()
    usage.add_entry(entry)
    if usage == _NO_USAGE:
        return None
    # As floats: an integer past a float's range (valid JSON, a damaged file) is infinite, instead
    # of an OverflowError when the path's sums add it to a float (found by fuzzing the viewer).
    return tuple(as_float(getattr(usage, name) or 0.0) for name in _SUMMED)


_NO_USAGE = UsageStatistics()
#: The usage fields a path's line shows (``usage_line``), summed along paths.
_SUMMED = ("input", "output", "cacheRead", "cacheWrite", "premiumRequests", "cost")


def _bounds(
    keys: Sequence[str],
    total: int,
    *,
    start: int | None,
    end: int | None,
    around: str | None,
    after: str | None,
    count: int,
    summary_first: bool,
) -> tuple[int, int]:
    """``[first, last)`` of a window over ``total`` entries (``keys`` given for ``after``/``around``)."""
    if after is not None:
        known = next((i for i, k in enumerate(keys) if k == after), None)
        return (known + 1 if known is not None else max(total - count, 0)), total
    if start is not None:
        return max(start, 0), min(max(start, 0) + count, total)
    if end is not None:
        last = min(max(end, 0), total)
        return max(last - count, 0), last
    if around is not None:
        found = next((i for i, k in enumerate(keys) if k == around), None)
        middle = found if found is not None else total
        first = max(min(middle - count // 2, total - count), 0)
        return first, min(first + count, total)
    if summary_first:
        return 0, min(count, total)  # the node is the compaction: its summary comes first
    return max(total - count, 0), total


def _in_context(entry: Entry) -> bool:
    return entry_to_message(entry) is not None


def _ranges(indexes: Sequence[int]) -> list[list[int]]:
    """Sorted distinct indexes as ``[first, last]`` runs (a linear path is one run). A part whose
    ends lie as far apart as it is long is one run, so a path of 50,000 rows in a few runs costs a
    few comparisons, not 50,000 steps."""
    runs: list[list[int]] = []
    parts = [(0, len(indexes))] if indexes else []
    while parts:
        low, high = parts.pop()
        first, last = indexes[low], indexes[high - 1]
        if last - first == high - 1 - low:  # consecutive (the indexes are distinct)
            if runs and first == runs[-1][1] + 1:
                runs[-1][1] = last
            else:
                runs.append([first, last])
        else:
            middle = (low + high) // 2
            parts.append((middle, high))
            parts.append((low, middle))  # the left half first: runs come out in order
    return runs
