"""The decoded entries a :class:`~omp_session.store._indexed.lazy_store.LazyStore` keeps, by position.

Two policies (issue 12 item 5, docs/performance.md "Memory"):

* **bounded** (a read-only session): the most recently used entries, up to a budget counted in
  bytes of their lines (a decoded entry takes about five times its line); older ones are dropped
  and decoded again from the file when asked for. An entry is handed out as the same dict for as
  long as it stays cached, and as an equal dict after that.
* **unbounded** (a writable session): every entry decoded is kept, so that an entry a caller changed
  in place is the one a later ``rewrite_entries`` writes (omp's contract for ``rewriteEntries``).

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["EntryCache"]

Entry = dict[str, Any]


class EntryCache:
    """Decoded entries by position: least recently used first when bounded."""

    __slots__ = ("_budget", "_entries", "_lengths", "_used")

    def __init__(self, lengths: Sequence[int], budget: int | None = None) -> None:
        """``lengths``: the line length of each position (what an entry costs the budget);
        ``budget``: bytes of lines kept, ``None`` for every entry."""
        self._lengths = lengths
        self._budget = budget
        # A plain dict while unbounded (inserting into it is several times cheaper), an
        # OrderedDict (least recently used first) once there is a budget.
        self._entries: dict[int, Entry] = {} if budget is None else OrderedDict()
        #: Bytes of lines cached; ``None`` while unbounded and not counted (see ``put_many``).
        self._used: int | None = 0

    @property
    def budget(self) -> int | None:
        return self._budget

    def bound(self, budget: int | None) -> None:
        """Change the budget (``None``: keep everything from now on); drops what no longer fits."""
        self._budget = budget
        if budget is not None:
            if not isinstance(self._entries, OrderedDict):
                self._entries = OrderedDict(self._entries)
            if self._used is None:
                self._used = sum(map(self._lengths.__getitem__, self._entries))
        self._evict()

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __contains__(self, position: object) -> bool:
        return position in self._entries

    def get(self, position: int) -> Entry | None:
        """The cached entry at ``position`` (now the most recently used), or ``None``."""
        entries = self._entries
        found = entries.get(position)
        if found is not None and isinstance(entries, OrderedDict):
            entries.move_to_end(position)
        return found

    def peek(self, position: int) -> Entry | None:
        """The cached entry at ``position``, leaving the order of use alone."""
        return self._entries.get(position)

    def put_many(self, positions: Iterable[int], entries: Iterable[Entry]) -> None:
        """Cache ``entries`` (just decoded) at ``positions``, then drop the oldest beyond the budget."""
        cached, lengths = self._entries, self._lengths
        used = self._used
        if self._budget is None:
            # Unbounded (a writable session keeps everything): one update in C, and the bytes are
            # counted only if a budget is ever set. A per-entry loop was about 0.05× the parse floor of
            # a warm open + context of 100k entries.
            count = len(cached)
            cached.update(zip(positions, entries, strict=True))
            if len(cached) != count:
                self._used = None
            return
        assert used is not None  # counted from the start, or by ``bound``
        # (A position given twice keeps its first place and its last entry, as one by one.)
        batch = dict(zip(positions, entries, strict=True))
        fresh = [position for position in batch if position not in cached]
        if sum(map(lengths.__getitem__, fresh)) > self._budget:
            self._keep_newest(fresh, batch)
            return
        for position, entry in batch.items():
            if position not in cached:
                used += lengths[position]
            cached[position] = entry
        self._used = used
        self._evict()

    def _keep_newest(self, fresh: list[int], batch: dict[int, Entry]) -> None:
        # What caching ``batch`` one by one and then evicting would leave when its ``fresh``
        # positions (not cached yet) alone exceed the budget, as in a walk through a big session:
        # every entry cached before goes (one cached again keeps its older place in the order),
        # and of the fresh ones the longest run at the end that fits. Found from the end instead
        # of caching and dropping each (0.17 s of an ``omp-session context`` of 100k entries).
        budget, lengths, cached = self._budget, self._lengths, self._entries
        assert budget is not None
        used, start = 0, len(fresh)
        while start > 0 and used + lengths[fresh[start - 1]] <= budget:
            start -= 1
            used += lengths[fresh[start]]
        cached.clear()
        for position in fresh[start:]:
            cached[position] = batch[position]
        self._used = used

    def clear(self) -> None:
        self._entries.clear()
        self._used = 0

    def _evict(self) -> None:
        budget, used = self._budget, self._used
        if budget is None or used is None or used <= budget:
            return
        cached, lengths = self._entries, self._lengths
        assert isinstance(cached, OrderedDict)  # bound() made it one
        while used > budget and cached:
            position, _ = cached.popitem(last=False)
            used -= lengths[position]
        self._used = used
