"""A :class:`~omp_session.model.tree.SessionIndex` look-alike over an indexed file, loading lazily.

Positions ``0 … n-1`` are the entries of the offset index (read through a
:class:`~omp_session.store._indexed.lazy_store.LazyStore`); entries added afterwards (a complete
last line that lacks its newline, appends, refreshes) get the positions after them.

Reads decode entries on access (issue 12 item 5): ``entries`` is a view (:class:`LazyEntries`)
that decodes a chunk of lines at a time, and ``get``, ``branch``, ``children``, ``parent_of``,
``labels`` and the context read only the lines they need. A read-only session keeps a bounded
cache of decoded entries (store/_indexed/entry_cache.py), a writable one every entry it decoded.
Reads that need every entry at once *materialize* a plain ``SessionIndex`` over all of them
(reusing the cached entry objects) and delegate to it from then on: ``get_tree``, iterating
``by_id``, ``cycle_roots``, ``children`` of an id no entry has, an append whose id an earlier entry
already has or names as its parent, and the fallback when the file changed in place.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import functools
import inspect
import operator
import struct
import weakref
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, TypeVar, cast, overload

from omp_session.dialects import ContextRules
from omp_session.errors import SessionChangedError
from omp_session.format.entries import is_assistant_entry
from omp_session.gcpause import gc_paused
from omp_session.model.context import SessionContext, context_from_path
from omp_session.model.tree import RereadCallback, SessionIndex, SessionTreeNode, apply_label
from omp_session.model.tree_nodes import LazyTreeNode, build_tree, entry_id_of, parent_id_of
from omp_session.model.usage import UsageStatistics
from omp_session.store._indexed.lazy_store import LazyStore
from omp_session.store.tuning import ReadStrategy

__all__ = ["LazyEntries", "LazyIds", "LazySessionIndex", "positions_of"]

Entry = dict[str, Any]
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _falls_back(method: _Method) -> _Method:
    """Run ``method``; if the file changed in place under the offset index (a stale index the
    open could not detect), rebuild a full index from the file as it is now and run it again,
    answering from that (issue 11 item 8: never an error or a wrong answer for a valid file)."""

    @functools.wraps(method)
    def wrapper(self: LazySessionIndex, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except SessionChangedError:
            if self._full is not None:
                raise
            self._materialize_from_file()
            return method(self, *args, **kwargs)

    return cast(_Method, wrapper)


class LazySessionIndex:
    """Same reads and ``add`` as ``SessionIndex``; the leaf's context needs only a few lines."""

    def __init__(self, store: LazyStore, usage: UsageStatistics, has_assistant: bool) -> None:
        """``usage``/``has_assistant``: over the indexed entries (the offset index holds them)."""
        self._store = store
        self._usage = usage
        self._has_assistant = has_assistant
        self._size = len(store)
        self._full: SessionIndex | None = None
        self._extra: list[Entry] = []
        self._extra_parents: list[int] = []
        self._extra_ids: dict[str, int] = {}
        self._awaited: set[str] = set(store.index.meta["dangling"])
        self._labels: dict[str, str] | None = None
        self._kept = {int(c): int(k) for c, k in store.index.meta["kept"]}
        self._tree_last = -2  # the position a lazy tree node read last (``_tree_entry``)
        self._tree_building = False  # while building, a fork's children are read exactly
        #: Held weakly when a method: the owner of an index registers its own method, and a strong
        #: reference would make a cycle that only the garbage collector frees, with every entry
        #: hanging from it (0.4 s of collector time for 50,000 entries after a close).
        self._reread_callbacks: list[Callable[[], RereadCallback | None]] = []

    @property
    def opened_cold(self) -> bool:
        """Whether the open decoded every line (the one-pass cold open) rather than reading them
        through a stored offset index."""
        return self._store.opened_cold

    @property
    def read_by(self) -> ReadStrategy:
        """The read strategy that opened it (``warm``, or the cold open's: never ``auto``)."""
        return self._store.read_by

    def close(self) -> None:
        """Close the file descriptor it reads through (an open that is thrown away; otherwise the
        descriptor is closed when the index is collected or has loaded every entry)."""
        self._store.close()

    @property
    def materialized(self) -> bool:
        return self._full is not None

    def _materialize_from_file(self) -> None:
        """A full index from a fresh full read of the file's indexed part (plus the entries added
        after it), for when reading through the offset index found the file changed in place."""
        with gc_paused():
            self._full = SessionIndex([*self._store.read_anew(), *self._extra])
        self._store.close()
        self._labels = None
        self._extra, self._extra_parents, self._extra_ids = [], [], {}
        # The totals the offset index held describe the file as it was: count them again.
        self._usage = self._full.usage()
        self._has_assistant = self._full.has_assistant()
        for reference in self._reread_callbacks:
            if (callback := reference()) is not None:
                callback(self._usage.copy(), self._has_assistant)

    def _materialize(self) -> SessionIndex:
        if self._full is None:
            store, meta = self._store, self._store.index.meta
            with gc_paused():
                entries = store.all_entries()
                parents = store.index.parents
                labels = [entries[position] for position in meta["labels"]]
                full = SessionIndex.of_unique(entries, store.ids(), parents, meta["dangling"], labels)
                for entry in self._extra:
                    full.add(entry)
                self._full = full
            self._store.close()
            self._extra, self._extra_parents, self._extra_ids = [], [], {}
        return self._full

    # -- the SessionIndex surface -----------------------------------------------------------

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry in file order: the full index's list once there is one, else a view of the
        entries there are now that decodes them on access (``LazyEntries``)."""
        return self._full.entries if self._full is not None else LazyEntries(self)

    def allow_forgetting(self) -> None:
        """The session is never written: decoded entries may be dropped from memory (a bounded
        cache, issue 12 item 5) and decoded again when asked for."""
        self._store.bound_cache(self._store.cache_budget)

    @property
    def by_id(self) -> Mapping[str, Entry]:
        # A new view each time: a view kept here would point back at this index (a cycle).
        return self._full.by_id if self._full is not None else LazyIds(self)

    @property
    @_falls_back
    def labels(self) -> dict[str, str]:
        if self._full is not None:
            return self._full.labels
        if self._labels is None:
            labels: dict[str, str] = {}
            for entry in self._store.entries(self._store.index.meta["labels"]):
                apply_label(labels, entry)
            for entry in self._extra:
                if entry.get("type") == "label":
                    apply_label(labels, entry)
            self._labels = labels
        return self._labels

    def usage(self) -> UsageStatistics:
        return self._usage.copy()

    def has_assistant(self) -> bool:
        return self._has_assistant

    def on_reread(self, callback: RereadCallback) -> None:
        if inspect.ismethod(callback):
            self._reread_callbacks.append(weakref.WeakMethod(callback))
        else:
            self._reread_callbacks.append(lambda: callback)

    def add(self, entry: Entry) -> None:
        """Index one entry appended at the end of the file."""
        self._usage.add_entry(entry)
        self._has_assistant = self._has_assistant or is_assistant_entry(entry)
        if self._full is not None:
            self._full.add(entry)
            return
        raw_id, parent = entry.get("id"), entry.get("parentId")
        entry_id = raw_id if isinstance(raw_id, str) else None
        if entry_id is not None and (self._find(entry_id) is not None or entry_id in self._awaited):
            self._materialize().add(entry)  # a duplicate or forward link: SessionIndex's rules apply
            return
        parent_position = -1
        if isinstance(parent, str) and parent and parent != entry_id:
            found = self._find(parent)
            if found is None:
                self._awaited.add(parent)
            else:
                parent_position = found
        if entry_id is not None:
            self._extra_ids[entry_id] = self._size + len(self._extra)
        self._extra.append(entry)
        self._extra_parents.append(parent_position)
        if self._labels is not None and entry.get("type") == "label":
            apply_label(self._labels, entry)

    @_falls_back
    def get(self, entry_id: str | None) -> Entry | None:
        if self._full is not None:
            return self._full.get(entry_id)
        position = self._find(entry_id) if entry_id else None
        return None if position is None else self._entry_at(position)

    @_falls_back
    def last_id(self) -> str | None:
        if self._full is not None:
            return self._full.last_id()
        if self._extra:
            last = self._extra[-1].get("id")
            return last if isinstance(last, str) else None
        return self._store.last_id()

    @_falls_back
    def branch(self, from_id: str | None) -> list[Entry]:
        """Root→node path ending at ``from_id``; ``[]`` for an unknown or empty id."""
        if self._full is not None:
            return self._full.branch(from_id)
        position = self._find(from_id) if from_id else None
        return [] if position is None else self._entries_at(self._walk(position, 0))

    @_falls_back
    def children(self, parent_id: str) -> list[Entry]:
        """Entries whose ``parentId`` is ``parent_id``, in file order: found in the parent column
        (indexed ids are unique, and every indexed link names an earlier entry); a parent id no
        entry has loads every entry (a rare, dangling link)."""
        if self._full is not None:
            return self._full.children(parent_id)
        parent = self._find(parent_id)
        if parent is None or not parent_id:
            # The parent column stores an empty parentId as a root, yet omp still lists that entry
            # among the children of "" (SessionIndex.children): a rare query, answered from a full load.
            return self._materialize().children(parent_id)
        size = self._size
        found: list[int] = []
        if parent < size:
            parents = self._store.index.parents
            if parents[parent] < 0 and self._entry_at(parent).get("parentId") == parent_id:
                found.append(parent)  # its own parent: a root, and its own child (as SessionIndex)
            found += positions_of(parents, parent, parent + 1)
            # An entry whose id is not a string is nobody's child in SessionIndex (it has no key in
            # by_id); the index stores that id as null.
            id_bytes = self._store.index.id_bytes
            found = [position for position in found if id_bytes(position) != b"null"]
        found += [
            size + n
            for n, added in enumerate(self._extra)
            if added.get("parentId") == parent_id and entry_id_of(added) is not None
        ]
        return self._entries_at(found)

    def parent_of(self, entry: Entry) -> Entry | None:
        """The parent as the tree sees it: in an indexed file (and the entries added to it without
        loading it all) the only cycles are self-parents."""
        if self._full is not None:
            return self._full.parent_of(entry)
        parent = parent_id_of(entry)
        if parent is None or parent == entry_id_of(entry):
            return None
        return self.get(parent)

    @_falls_back
    def get_tree(self) -> list[SessionTreeNode]:
        """The tree built from the offset index's columns: the ids, the parent positions and the
        labels, as ``SessionIndex.of_unique`` would build it, with nodes that decode their entry
        when it is read (issue 26 item 2). Entries appended since the open: the full index's.

        Also the full index's where decoded entries may be forgotten (a read-only session): the
        views key entries by identity, and a node's entry must then be the very object
        ``get_entries`` gives, which only an entry kept since its decoding is."""
        if self._full is not None or self._extra or self._store.forgets:
            return self._materialize().get_tree()
        return self._tree_from_columns()

    @_falls_back
    def _tree_from_columns(self) -> list[SessionTreeNode]:
        store = self._store
        ids = store.ids()
        load = self._tree_entry
        self._tree_building = True  # read exactly what the sort of a fork's children needs
        try:
            with gc_paused():  # one node per entry, no cycles: see gcpause.py
                nodes: list[SessionTreeNode] = [
                    LazyTreeNode(load, position) for position in range(self._size)
                ]
                roots = build_tree([], ids, self.labels, store.index.parents, set, nodes)
        finally:
            self._tree_building = False
        # An offset index holds unique string ids and links to earlier entries only (builder.py), so
        # the bulk build applies (its self-parents are roots already: position -1).
        return roots if roots is not None else self._materialize().get_tree()

    def _tree_entry(self, position: int) -> Entry:
        # A tree is mostly read in file order (a walk down the current branch): read ahead then.
        if self._tree_building:
            return self._entry_at(position)
        ahead, self._tree_last = position == self._tree_last + 1, position
        return self._entry_at(position, ahead)

    @_falls_back
    def cycle_roots(self) -> set[str]:
        return self._materialize().cycle_roots()

    # -- positions ----------------------------------------------------------------------------

    def _find(self, entry_id: Any) -> int | None:
        if not isinstance(entry_id, str):
            return None
        found = self._extra_ids.get(entry_id)
        return found if found is not None else self._store.position_of(entry_id)

    def has_id(self, entry_id: object) -> bool:
        # Not ``_falls_back``: ids are answered from the offset index in memory, never from the
        # file, and every append asks (a fresh id is checked against them).
        if self._full is not None:
            return entry_id in self._full.by_id
        return self._find(entry_id) is not None

    @_falls_back
    def _entry_at(self, position: int, ahead: bool = False) -> Entry:
        if self._full is not None:
            return self._full.entries[position]
        if position >= self._size:
            return self._extra[position - self._size]
        return self._store.entry(position, ahead=ahead)

    def _length(self) -> int:
        return len(self._full.entries) if self._full is not None else self._size + len(self._extra)

    def _iterate(self, start: int, stop: int) -> Iterator[Entry]:
        """The entries at ``start`` .. ``stop - 1``, decoded a chunk at a time (only the cache's
        budget of them stays in memory when it is bounded)."""
        position = start
        walk = (stop - start) * 16 > self._size  # a share of the file that pays the id column
        while position < stop:
            full = self._full
            if full is not None:
                yield from islice(full.entries, position, stop)
                return
            if position >= self._size:
                yield self._extra[position - self._size]
                position += 1
                continue
            chunk = self._store.chunk_after(position, min(stop, self._size))
            try:
                found = self._store.entries(chunk, walk=walk)
            except SessionChangedError:
                self._materialize_from_file()  # the file changed in place: read it in full
                continue
            yield from found
            position = chunk.stop

    def _iterate_backwards(self, start: int, stop: int) -> Iterator[Entry]:
        """``reversed`` of ``_iterate(start, stop)``, a chunk at a time."""
        position = stop
        walk = (stop - start) * 16 > self._size
        while position > start:
            full = self._full
            if full is not None:
                yield from reversed(full.entries[start:position])
                return
            if position > self._size:
                position -= 1
                yield self._extra[position - self._size]
                continue
            chunk = self._store.chunk_before(start, position)
            try:
                found = self._store.entries(chunk, walk=walk)
            except SessionChangedError:
                self._materialize_from_file()
                continue
            yield from reversed(found)
            position = chunk.start

    def _entries_at(self, positions: Sequence[int]) -> list[Entry]:
        # ``positions`` ascending: the indexed ones are read together, then the added ones.
        size = self._size
        split = bisect_left(positions, size)
        found = self._store.entries(positions[:split])
        found.extend(self._extra[p - size] for p in positions[split:])
        return found

    def _walk(self, position: int, lower: int) -> list[int]:
        """Ancestors-or-self of ``position`` down to position ``lower``, root first."""
        size, parents, extra_parents = self._size, self._store.index.parents, self._extra_parents
        if 0 <= lower < position < size and parents[lower + 1 : position + 1] == array(
            "i", range(lower, position)
        ):
            return list(range(lower, position + 1))  # a linear stretch: every parent the entry before
        path: list[int] = []
        while position >= lower and position >= 0:
            path.append(position)
            position = extra_parents[position - size] if position >= size else parents[position]
        path.reverse()
        return path

    # -- context ------------------------------------------------------------------------------

    @_falls_back
    def context(self, leaf_id: str, rules: ContextRules | None = None) -> SessionContext:
        """``context_from_path(branch(leaf_id))``, reading only the lines it depends on.

        The state is replayed over the entries the index names for the path's state (see
        :mod:`omp_session.store._indexed.builder`) and the messages come from the path between the first
        kept entry of the last compaction and the leaf; entries added since the index was written
        are part of both. ``context_from_path`` gives the same result for these as for the path.
        """
        if rules is not None and rules.needs_full_path:
            # omp 18's reset boundaries and filters read the whole path, not only its state.
            return context_from_path(self.branch(leaf_id), rules=rules)
        if self._full is not None:
            return self._full.context(leaf_id, rules)
        position = self._find(leaf_id) if leaf_id else None
        if position is None:
            return context_from_path([]) if rules is None else context_from_path([], rules=rules)
        with gc_paused():  # until the context is built: its objects are all acyclic
            state, path = self._context_positions(position)
            path_entries = self._entries_at(path)
            state_entries = self._state_entries(state, path, path_entries)
            if rules is None:
                return context_from_path(path_entries, state_entries)
            return context_from_path(path_entries, state_entries, rules=rules)

    def _context_positions(self, position: int) -> tuple[list[int], list[int]]:
        """(positions the state replay needs, positions of the path it emits from), ascending."""
        size = self._size
        added = self._walk(position, size) if position >= size else []
        file_leaf = self._extra_parents[added[0] - size] if added else position
        state = set(added)
        lower = size
        if file_leaf >= 0:
            index = self._store.index
            state.update(index.context_positions(file_leaf))
            compaction = index.state(file_leaf).compaction
            kept = self._kept.get(compaction, -1)
            lower = 0 if compaction < 0 else (kept if kept >= 0 else compaction)
        for added_position in reversed(added):  # the last compaction among the added entries wins
            entry = self._extra[added_position - size]
            if entry.get("type") == "compaction":
                kept_position = self._find(entry.get("firstKeptEntryId"))
                lower = kept_position if kept_position is not None and kept_position < size else size
                break
        walk = self._walk(file_leaf, lower) if file_leaf >= 0 and lower <= file_leaf else []
        return sorted(state), walk + added

    def _state_entries(self, state: list[int], path: list[int], path_entries: list[Entry]) -> list[Entry]:
        """The entries at ``state`` (ascending): those on the path are taken from ``path_entries``
        (``context_from_path`` finds the compaction on the path by identity, and a bounded cache
        may have dropped the path's first entries by now); the others are read in one go."""
        found: dict[int, Entry] = {}
        for position in state:
            at = bisect_left(path, position)
            if at < len(path) and path[at] == position:
                found[position] = path_entries[at]
        rest = [position for position in state if position not in found]
        found.update(zip(rest, self._entries_at(rest), strict=True))
        return [found[position] for position in state]


# -- the views it hands out: get_entries()'s LazyEntries, by_id's LazyIds (issue 12 item 5) -------


def positions_of(column: Sequence[int], value: int, start: int) -> list[int]:
    """The positions from ``start`` on where the integer ``column`` (an array or a memoryview of
    one) holds ``value``, searched in its bytes (in C: a scan of 4 bytes per entry)."""
    view = memoryview(column)  # type: ignore[arg-type]
    data, size = view.cast("B").tobytes(), view.itemsize
    wanted = struct.pack(view.format, value)
    found: list[int] = []
    at = data.find(wanted, start * size)
    while at >= 0:
        if at % size == 0:  # not the bytes of two neighbours run together
            found.append(at // size)
        at = data.find(wanted, at + 1)
    return found


class LazyIds(Mapping[str, Entry]):
    """``by_id`` of a lazy index: membership and lookups without loading every entry."""

    def __init__(self, owner: LazySessionIndex) -> None:
        self._owner = owner

    def __contains__(self, key: object) -> bool:
        return self._owner.has_id(key)

    def __getitem__(self, key: str) -> Entry:
        owner = self._owner
        if owner.materialized or not isinstance(key, str):
            return owner._materialize().by_id[key]
        found = owner.get(key)  # falls back to a full read if the file changed in place
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._owner._materialize().by_id)

    def __len__(self) -> int:
        return len(self._owner._materialize().by_id)


class LazyEntries(Sequence[Entry]):
    """What ``get_entries()`` returns for a lazily opened file: the entries there were when it was
    made, decoded from the file on access (issue 12 item 5). Iterating decodes a chunk of lines at
    a time; indexing reads one line (and the lines after it when the previous index was the one
    before). A slice is a list. It equals any sequence of equal entries (a list, as a full load
    gives). It stays usable after the session is closed (it holds the file's descriptor)."""

    def __init__(self, index: LazySessionIndex, stop: int | None = None) -> None:
        self.lazy_index = index
        self._stop = index._length() if stop is None else stop
        self._last = -2  # the position indexed last: the next one reads ahead

    def __len__(self) -> int:
        return self._stop

    @overload
    def __getitem__(self, item: int) -> Entry: ...

    @overload
    def __getitem__(self, item: slice) -> list[Entry]: ...

    def __getitem__(self, item: int | slice) -> Entry | list[Entry]:
        if isinstance(item, slice):
            start, stop, step = item.indices(self._stop)
            if step == 1:
                return list(self.lazy_index._iterate(start, stop)) if start < stop else []
            return [self[position] for position in range(start, stop, step)]
        position = operator.index(item)
        if position < 0:
            position += self._stop
        if not 0 <= position < self._stop:
            raise IndexError(item)
        ahead, self._last = position == self._last + 1, position
        return self.lazy_index._entry_at(position, ahead)

    def __iter__(self) -> Iterator[Entry]:
        return self.lazy_index._iterate(0, self._stop)

    def __reversed__(self) -> Iterator[Entry]:
        return self.lazy_index._iterate_backwards(0, self._stop)

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Sequence) or isinstance(other, str | bytes | bytearray | memoryview):
            return NotImplemented
        return len(other) == self._stop and all(map(operator.eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to a list, which is unhashable too

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        begin, end, _ = slice(start, stop).indices(self._stop)
        for position, entry in enumerate(self.lazy_index._iterate(begin, end), start=begin):
            if entry is value or entry == value:
                return position
        raise ValueError("entry not in the session's entries")

    def count(self, value: Any) -> int:
        return sum(1 for entry in self if entry is value or entry == value)

    def __repr__(self) -> str:
        return f"<LazyEntries of {self._stop} entries>"
