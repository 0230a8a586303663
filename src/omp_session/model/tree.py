"""The in-memory index of a session: entries by id, children, labels, leaf, cycle-safe walks.

Rules where omp hangs or is inconsistent (spec §6.4, §9 #9–10), chosen here and documented in
docs/durability.md:

* **Duplicate ids**: as in omp, the id index keeps the *last* entry with an id; ``get_entries()``
  still returns every line.
* **Parent cycles**: in every cycle of parent links, the member that appears first in file order is
  treated as a root (its parent link is ignored by walks and by the tree). A self-parent is the
  one-member case, which omp already treats as a root in ``getTree``. Every walk is therefore
  bounded by the number of entries and never hangs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress
from typing import Any, Protocol, cast

from omp_session.dialects import OMP_13_19, ContextRules
from omp_session.format.entries import is_assistant_entry
from omp_session.gcpause import gc_paused
from omp_session.model.context import UNSET, SessionContext, context_from_path
from omp_session.model.tree_nodes import (
    SessionTreeNode,
    build_tree,
    build_tree_with_duplicates,
    entry_id_of,
    parent_id_of,
)
from omp_session.model.usage import UsageStatistics

__all__ = ["EntryIndex", "RereadCallback", "SessionIndex", "SessionTreeNode", "build_session_context"]

Entry = dict[str, Any]


def apply_label(labels: dict[str, str], entry: Entry) -> None:
    """Apply one ``label`` entry to ``labels`` (target id -> label), the rule every index uses:
    a non-empty string sets the label, anything else clears it. Like a JavaScript ``Map``,
    re-setting a label keeps the target's original position."""
    target = entry.get("targetId")
    if not isinstance(target, str):
        return
    label = entry.get("label")
    if isinstance(label, str) and label:
        labels[target] = label
    else:
        labels.pop(target, None)


#: ``(usage, has_assistant)`` after an index read its file anew (see ``EntryIndex.on_reread``).
RereadCallback = Callable[[UsageStatistics, bool], None]


class EntryIndex(Protocol):
    """What a manager reads a session through, whoever holds the entries.

    Two implementations: :class:`SessionIndex` (every entry in memory) and the lazy index of a file
    opened through its offset index (:class:`omp_session.store._indexed.lazy_index.LazySessionIndex`), which
    reads lines only when asked. Callers use this protocol and never ask which one they have.
    """

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry in file order (the lazy index: a view that decodes them on access)."""
        ...

    @property
    def by_id(self) -> Mapping[str, Entry]:
        """Entries by id (the last one for a duplicated id)."""
        ...

    @property
    def labels(self) -> dict[str, str]:
        """Current label of each labelled entry, in the order a JS ``Map`` keeps."""
        ...

    def add(self, entry: Entry) -> None:
        """Index one entry appended at the end of the file."""
        ...

    def get(self, entry_id: str | None) -> Entry | None: ...

    def last_id(self) -> str | None:
        """The id of the last entry in file order (the leaf after a load); ``None`` if it has none."""
        ...

    def branch(self, from_id: str | None) -> list[Entry]:
        """Root→node path ending at ``from_id``; ``[]`` for an unknown or empty id."""
        ...

    def children(self, parent_id: str) -> list[Entry]: ...

    def parent_of(self, entry: Entry) -> Entry | None:
        """The parent as the tree sees it (``None`` for a root, an unknown, own or cycle-closing parent)."""
        ...

    def get_tree(self) -> list[SessionTreeNode]: ...

    def context(self, leaf_id: str, rules: ContextRules | None = None) -> SessionContext:
        """``context_from_path(branch(leaf_id), rules=rules)`` (default: omp 13.19's rules); the
        lazy index reads only the lines it needs when the rules only replay state."""
        ...

    def usage(self) -> UsageStatistics:
        """Usage totals over every entry (a new object the caller may keep adding to)."""
        ...

    def allow_forgetting(self) -> None:
        """The session will never be written: the index may drop entries from memory and read
        them again when asked for (a read-only session; an entry changed in place by a caller is
        then not kept, as nothing could write it)."""
        ...

    def has_assistant(self) -> bool:
        """Whether any entry is an assistant message (spec §7.2)."""
        ...

    def on_reread(self, callback: RereadCallback) -> None:
        """Call ``callback(usage, has_assistant)`` with the new totals whenever the index has to read
        its file anew (a file changed in place under a stale offset index, issue 11 item 8), so
        totals kept by the caller never go stale. A bound method is held weakly (its object
        usually holds the index: no reference cycle)."""
        ...


def path_stopping_at_repeat(index: EntryIndex, path: list[Entry], from_id: str | None) -> list[Entry]:
    """omp 18's walk (``pathTo``) for a ``path`` that :meth:`EntryIndex.branch` gave for
    ``from_id``: from the entry up through parent links (duplicate ids resolved to the last entry,
    as the id index does) until an id repeats. It differs from ``path`` only when ``path`` starts at
    the root we chose for a parent cycle (its parent exists), so only then is it walked again."""
    if not path:
        return path
    top = path[0]
    parent = parent_id_of(top)
    if parent is None or parent == entry_id_of(top) or index.get(parent) is None:
        return path  # a true root: nothing to walk past
    walked: list[Entry] = []
    seen: set[Any] = set()
    cursor = index.get(from_id)
    while cursor is not None and entry_id_of(cursor) not in seen:
        seen.add(entry_id_of(cursor))
        walked.append(cursor)
        parent = parent_id_of(cursor)
        cursor = index.get(parent) if parent is not None else None
    walked.reverse()
    return walked


class SessionIndex:
    """Entries in file order plus the indices every read needs; appends are O(1)."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries: list[Entry] = []
        #: ``by_id``'s dict; ``None`` after a bulk build until first asked for (``_bulk_ids``).
        self._by_id: dict[str, Entry] | None = {}
        #: Each entry's id (``None`` where it has no string id) after a bulk build, all unique:
        #: what ``by_id`` is built from, and all a tree of the bulk-built entries needs.
        self._bulk_ids: list[str | None] | None = None
        self.labels: dict[str, str] = {}
        #: Child ids by parent id; ``None`` until first needed after a bulk build (``of_unique``).
        self._children: dict[str, list[str]] | None = {}
        self._has_duplicates = False
        self._cycle_roots: set[str] | None = set()
        self._awaited: set[str] = set()  # parent ids named before an entry with that id arrived
        #: The parent position of each of the first entries, when a bulk build knew them (see
        #: ``of_unique``); dropped when an added entry changes an earlier entry's parent.
        self._parent_positions: Sequence[int] | None = None
        for entry in entries:
            self.add(entry)

    @classmethod
    def of_unique(
        cls,
        entries: list[Entry],
        ids: list[str | None],
        parents: Sequence[int],
        awaited: Iterable[str],
        labels: Iterable[Entry],
    ) -> SessionIndex:
        """The index of ``entries`` built in bulk, for entries known to have unique ids and parent
        links that all name earlier entries (what an offset index guarantees, see
        :mod:`omp_session.store._indexed.builder`): the same index as ``SessionIndex(entries)``
        without the per-entry work, so that loading every entry costs little more than decoding.

        ``ids``: each entry's id (``None`` where it has no string id); ``parents``: each entry's
        parent's position (``-1`` for a root: no, an empty, an unknown or its own parent id), kept
        to build the tree without looking parents up by id; ``awaited``: parent ids no entry has;
        ``labels``: the label entries in file order.
        """
        index = cls()
        if len(ids) != len(entries):
            raise ValueError("one id per entry")
        # The dict of 100k ids costs 0.3 µs an entry (their strings are new: hashed for the first
        # time, scattered in memory); a tree or a context never needs it, so it waits for a caller.
        index.entries, index._by_id, index._bulk_ids, index._children = entries, None, ids, None
        index._awaited = set(awaited)
        index._parent_positions = parents
        # No link names a later entry, so the only cycles are self-parents (roots, as in ``add``).
        index._cycle_roots = {
            entry_id
            for position in _roots(parents)
            if (entry_id := ids[position]) is not None and entries[position].get("parentId") == entry_id
        }
        for label in labels:
            apply_label(index.labels, label)
        return index

    @property
    def by_id(self) -> dict[str, Entry]:
        """Entries by id (the last one for a duplicated id)."""
        by_id = self._by_id
        if by_id is None:
            assert self._bulk_ids is not None
            with_none: dict[str | None, Entry] = dict(zip(self._bulk_ids, self.entries, strict=True))
            with_none.pop(None, None)
            by_id = self._by_id = cast("dict[str, Entry]", with_none)
            self._bulk_ids = None
        return by_id

    # -- building ------------------------------------------------------------------------------

    def add(self, entry: Entry) -> None:
        """Index one entry appended at the end of the file."""
        by_id = self._by_id if self._by_id is not None else self.by_id
        self.entries.append(entry)
        entry_id = entry.get("id")  # entry_id_of() and parent_id_of() inlined: every append
        if isinstance(entry_id, str):
            if entry_id in by_id:
                self._has_duplicates = True
                self._cycle_roots = None  # a replaced parent link may close a cycle
            elif self._children is not None and entry_id in self._children:
                self._cycle_roots = None  # earlier entries named this id as parent: may close a cycle
            elif entry_id in self._awaited:
                self._cycle_roots = None  # an earlier entry's forward parent link may close a cycle
                self._parent_positions = None  # ... and now names this entry
            by_id[entry_id] = entry
            parent = entry.get("parentId")
            if not isinstance(parent, str) or not parent:
                parent = None
            if parent is not None and parent not in by_id:
                self._awaited.add(parent)
            if parent is not None and not self._has_duplicates:
                if self._children is not None:
                    self._children.setdefault(parent, []).append(entry_id)
                if parent == entry_id and self._cycle_roots is not None:
                    self._cycle_roots.add(entry_id)
            elif parent is not None and self._cycle_roots is not None:
                self._cycle_roots = None
        if entry.get("type") == "label":
            apply_label(self.labels, entry)

    # -- cycles --------------------------------------------------------------------------------

    def cycle_roots(self) -> set[str]:
        """Ids whose parent link is ignored because it closes a cycle (see module docstring)."""
        if self._cycle_roots is None:
            self._cycle_roots = self._find_cycle_roots()
        return self._cycle_roots

    def _find_cycle_roots(self) -> set[str]:
        # Parent links form a functional graph: colour each walk and stop at anything seen.
        order = {entry_id: position for position, entry_id in enumerate(self.by_id)}
        state: dict[str, int] = {}
        roots: set[str] = set()
        for walk_number, start in enumerate(self.by_id, start=1):
            if start in state:
                continue
            trail: list[str] = []
            current: str | None = start
            while current is not None and current in self.by_id and current not in state:
                state[current] = walk_number
                trail.append(current)
                current = parent_id_of(self.by_id[current])
            if current is not None and state.get(current) == walk_number:
                cycle = trail[trail.index(current) :]
                roots.add(min(cycle, key=order.__getitem__))
        return roots

    def parent_of(self, entry: Entry) -> Entry | None:
        """The parent entry, or ``None`` for roots (null, unknown, self or cycle-closing parent)."""
        parent = parent_id_of(entry)
        if parent is None:
            return None
        entry_id = entry_id_of(entry)
        if entry_id is not None and entry_id in self.cycle_roots():
            return None
        return self.by_id.get(parent)

    # -- reads ---------------------------------------------------------------------------------

    def get(self, entry_id: str | None) -> Entry | None:
        # Ids read from a damaged file may be any JSON value (a list is not even hashable).
        return self.by_id.get(entry_id) if entry_id and isinstance(entry_id, str) else None

    def last_id(self) -> str | None:
        return entry_id_of(self.entries[-1]) if self.entries else None

    def branch(self, from_id: str | None) -> list[Entry]:
        """Root→node path ending at ``from_id``; ``[]`` for an unknown or empty id. O(depth)."""
        return self.path_to(self.get(from_id))

    def path_to(self, node: Entry | None) -> list[Entry]:
        """Root→``node`` path (``node`` need not be indexed, e.g. an entry without an id)."""
        path: list[Entry] = []
        limit = len(self.by_id)
        while node is not None and len(path) <= limit:
            path.append(node)
            node = self.parent_of(node)
        path.reverse()
        return path

    def context(self, leaf_id: str, rules: ContextRules | None = None) -> SessionContext:
        """The context of the path ending at ``leaf_id`` (spec §5)."""
        if rules is None:
            return context_from_path(self.branch(leaf_id))
        return context_from_path(self.branch(leaf_id), rules=rules)

    def usage(self) -> UsageStatistics:
        with gc_paused():
            return UsageStatistics.of(self.entries)

    def has_assistant(self) -> bool:
        return any(is_assistant_entry(entry) for entry in self.entries)

    def on_reread(self, callback: RereadCallback) -> None:
        return None  # every entry is in memory: nothing is ever read again

    def allow_forgetting(self) -> None:
        return None  # the entries are the index: none can be dropped

    def children(self, parent_id: str) -> list[Entry]:
        """Entries whose ``parentId`` is ``parent_id``, in file order of first appearance."""
        if self._has_duplicates or not parent_id:
            # omp compares the raw parentId (13.19's loop and omp 18's children map alike): an
            # empty parentId makes a root of the tree, yet its entry is still a child of "".
            return [e for e in self.by_id.values() if e.get("parentId") == parent_id]
        if self._children is None:
            self._children = _children_of(self.entries)
        return [self.by_id[child] for child in self._children.get(parent_id, ())]

    def get_tree(self) -> list[SessionTreeNode]:
        """Roots (null, self, unknown or cycle-closing parent) in file order; children by time."""
        with gc_paused():  # one node per entry, no cycles: see gcpause.py
            if not self._has_duplicates:
                ids = self._tree_ids()
                roots = build_tree(self.entries, ids, self.labels, self._parent_positions, self.cycle_roots)
                if roots is not None:
                    return roots
            return build_tree_with_duplicates(self.entries, self.by_id, self.labels, self.cycle_roots())

    def _tree_ids(self) -> list[Any] | None:
        # Each entry's id when known to be unique strings or None (see ``build_tree``).
        if self._bulk_ids is not None:
            return self._bulk_ids
        by_id = self.by_id
        return list(by_id) if len(by_id) == len(self.entries) else None


_NO_PARENT = (-1).to_bytes(4, "little", signed=True)  # the same four bytes in either byte order


def _roots(parents: Sequence[int]) -> list[int]:
    """The positions whose parent position is -1 (no other value is negative), found in C: the
    root of a session and the rare entry without a known parent are few among many."""
    if not (isinstance(parents, memoryview) and parents.format == "i" and parents.itemsize == 4):
        return list(compress(range(len(parents)), map((0).__gt__, parents)))
    # An offset index's column: search its bytes (a pass over 100k Python ints was 10 ms).
    # Positions are below 2**31, so no other value has a 0xff high byte and four 0xff bytes at
    # a multiple of four are exactly a -1; one starting elsewhere is skipped.
    data, found = parents.tobytes(), []
    at = data.find(_NO_PARENT)
    while at >= 0:
        if at % 4:
            at = data.find(_NO_PARENT, at + 1)
        else:
            found.append(at // 4)
            at = data.find(_NO_PARENT, at + 4)
    return found


def _children_of(entries: Iterable[Entry]) -> dict[str, list[str]]:
    # What ``SessionIndex.add`` collects entry by entry (without duplicates).
    children: dict[str, list[str]] = {}
    for entry in entries:
        entry_id, parent = entry_id_of(entry), parent_id_of(entry)
        if entry_id is not None and parent is not None:
            children.setdefault(parent, []).append(entry_id)
    return children


def build_session_context(
    entries: Sequence[Entry], leaf_id: str | None = UNSET, rules: ContextRules = OMP_13_19.context
) -> SessionContext:
    """Build the LLM context of ``entries`` at ``leaf_id`` (spec §5).

    ``leaf_id=None`` gives the empty context; an unset, empty or unknown leaf falls back to the last
    entry in file order, as omp does. Parent cycles end the walk (see :mod:`omp_session.model.tree`).

    >>> build_session_context([]).thinking_level
    'off'
    """
    if leaf_id is None:
        return SessionContext(rules=rules)
    index = SessionIndex(entries)
    leaf = index.get(leaf_id) if isinstance(leaf_id, str) else None
    if leaf is None:
        if not entries:
            return SessionContext(rules=rules)
        leaf = entries[-1]
    return context_from_path(index.path_to(leaf), rules=rules)
