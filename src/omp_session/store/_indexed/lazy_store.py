"""Reading the entries of an indexed session file on demand, line by line.

A :class:`LazyStore` keeps a descriptor of the session file open (so a rename over the path, as a
rewrite does, never changes what it reads) and decodes an entry the first time it is asked for,
exactly as :func:`omp_session.store.loading.parse_session` would have (the lines are read and
checked by :mod:`.line_reads`). Decoded entries are cached (:mod:`.entry_cache`): the same
object is handed out again while it is cached, an equal one decoded anew after a bounded cache
dropped it.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import os
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

from omp_session.errors import SessionChangedError
from omp_session.gcpause import gc_paused
from omp_session.store._indexed.entry_cache import EntryCache
from omp_session.store._indexed.lines import IndexedLines, StaleIndex
from omp_session.store._indexed.markers import Markers, marked_lines
from omp_session.store._indexed.offsets import OffsetIndex, drop_index
from omp_session.store.blobs import BlobSink
from omp_session.store.loading import parse_session
from omp_session.store.tuning import DEFAULT_TUNING, ReadStrategy, Tuning

__all__ = ["LazyStore", "Markers", "StaleIndex", "marked_lines"]

Entry = dict[str, Any]
#: Lines decoded at once from which the bulk check against the id column pays.
_BULK_LINES = 256
#: Id lookups answered by scanning the id column before the map of every id is built instead.
_SCANS_BEFORE_MAP = 128


class LazyStore:
    """The entries of the indexed part of one session file, decoded on first use."""

    def __init__(
        self,
        path: Path,
        fd: int,
        index: OffsetIndex,
        blobs: BlobSink | None,
        markers: Markers,
        decoded: list[Entry] | None = None,
        positions: dict[str, int] | None = None,
        *,
        cached: dict[int, Entry] | None = None,
        keep_replay: bool = False,
        tuning: Tuning = DEFAULT_TUNING,
        read_by: ReadStrategy = ReadStrategy.WARM,
    ) -> None:
        """``decoded``: every indexed entry, already decoded and transformed (a cold open has just
        read them all); ``cached``: some of them by position (a cold open that kept only those);
        ``positions``: the position of each id, when the caller has it; ``keep_replay``: the
        opening dialect's OpenAI replay rule for this file (``KeepReplay``); ``tuning``: the
        sizes of its reads and of a bounded cache (read once, here); ``read_by``: the read
        strategy of the open that built it (a record: nothing here depends on it)."""
        # Bytes of lines an iteration decodes at a time (below the cache's budget), read ahead by
        # ``entry(position, ahead=True)`` on a miss, and kept decoded by a bounded cache (more
        # than one chunk of an iteration, so a chunk just read is still cached while the caller
        # walks through it); consecutive lines read as one run, their links checked as lists
        # (``read_run``): a few comparisons per line instead of two encodings of ids.
        self._iter_chunk = tuning.iter_chunk_bytes
        self._ahead = tuning.read_ahead_bytes
        self._run_lines = tuning.run_lines
        self.cache_budget = tuning.entry_cache_bytes
        self.path = path
        self.fd = fd
        self.index = index
        self.blobs = blobs
        self.markers = markers
        self._cache = EntryCache(index.lengths)
        if cached:
            self._cache.put_many(cached, cached.values())
        self._decoded = decoded
        self.opened_cold = decoded is not None or cached is not None
        self.read_by = read_by
        self._positions: dict[str, int] | None = positions
        self._ids: list[str | None] | None = None
        self._ids_padded: list[Any] | None = None
        self._absent: set[str] = set()  # ids a scan of the id column did not find
        self._scans = 0
        self.keep_replay = keep_replay
        self.lines = IndexedLines(fd, index, blobs, markers, keep_replay)
        self._known = self.lines.known  # ids of the entries decoded so far
        self._closer = weakref.finalize(self, os.close, fd)
        self._last_id: str | None = None
        if len(index):
            last_id = index.id_at(len(index) - 1)
            if isinstance(last_id, str):
                self._last_id = last_id
                self._known[last_id] = len(index) - 1  # the leaf after a load: found without the id map

    def last_id(self) -> str | None:
        """The id of the last indexed entry (``None`` if it has none or there is none)."""
        return self._last_id

    def __len__(self) -> int:
        return len(self.index)

    @property
    def marked(self) -> Collection[int]:
        """Positions whose entries a load-side transform may change (empty if the file needs none)."""
        return self.lines.marked

    def transform(self, entry: Entry, line: bytes) -> None:
        """What parse_session does to every entry after decoding (in place)."""
        self.lines.transform(entry, line)

    def close(self) -> None:
        self._closer()

    # -- ids ---------------------------------------------------------------------------------

    def ids(self) -> list[str | None]:
        """Every indexed entry's id in position order (decoded once from the index)."""
        if self._ids is None:
            self._ids = self.index.all_ids()
        return self._ids

    def position_of(self, entry_id: str) -> int | None:
        """Position of the entry with ``entry_id`` (ids are unique in an indexed file).

        Without the map of every id (built only when a caller needs every entry's position), an
        id not decoded yet is first looked up in the index's sorted id hashes, which answers "not
        here" for a fresh id (every append draws one) in microseconds; an id that may be there is
        searched for in the id column's bytes (a C-speed scan of about 11 bytes per entry). The
        indexed part never changes, so an id found missing stays missing. After
        ``_SCANS_BEFORE_MAP`` scans the map is built after all (about the cost of that many
        scans), which keeps a caller that looks up many ids from paying a scan for each.
        """
        if self._positions is not None:
            return self._positions.get(entry_id)
        known = self._known.get(entry_id)
        if known is not None or entry_id in self._absent:
            return known
        if not self.index.may_hold_id(entry_id):  # a fresh id (every append draws one)
            return None  # (not remembered: asking again costs as little, and appends never stop)
        self._scans += 1
        if self._scans > _SCANS_BEFORE_MAP:
            return self._position_map().get(entry_id)
        found = self.index.find_id(entry_id)
        if found is None:
            self._absent.add(entry_id)
        else:
            self._known[entry_id] = found
        return found

    def _position_map(self) -> dict[str, int]:
        if self._positions is None:
            ids = self.ids()
            positions: dict[str | None, int] = dict(zip(ids, range(len(ids)), strict=True))
            positions.pop(None, None)
            self._positions = cast("dict[str, int]", positions)
        return self._positions

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self.position_of(entry_id) is not None

    def entries(self, positions: Sequence[int], *, keep: bool = True, walk: bool = False) -> list[Entry]:
        """The entries at ``positions`` (ascending), decoding those not cached; ``keep``: cache
        the decoded ones (``all_entries`` hands them over instead); ``walk``: a chunk of a walk
        through most of the file (its links are checked against the whole id column, decoded
        once for the walk)."""
        if self._decoded is not None:
            decoded = self._decoded
            if positions and positions[-1] - positions[0] + 1 == len(positions):
                return decoded[positions[0] : positions[-1] + 1]  # a run (a linear path): one slice
            return [decoded[position] for position in positions]
        cache = self._cache
        if not cache:
            found = self._decode_lines(positions, walk)
            if keep:
                cache.put_many(positions, found)
            return found
        cached = list(map(cache.get, positions))
        missing = [position for position, entry in zip(positions, cached, strict=True) if entry is None]
        if not missing:
            return cast("list[Entry]", cached)
        decoded = self._decode_lines(missing, walk)
        if keep:
            cache.put_many(missing, decoded)
        fresh = iter(decoded)
        return [entry if entry is not None else next(fresh) for entry in cached]

    def _decode_lines(self, positions: Sequence[int], walk: bool = False) -> list[Entry]:
        """The entries at ``positions`` (ascending) decoded from the file, nothing cached."""
        try:
            # Many lines: compare with the decoded id column rather than line by line. Decoding
            # that column costs about 70 ns an entry of the whole file: paid for a walk or a large
            # share of the file, never for a context of a few thousand lines of a large file.
            many = len(positions) >= _BULK_LINES and (walk or self._ids_padded is not None)
            bulk = many or len(positions) * 16 > len(self.index)
            ids = self._padded_ids() if bulk else None
            found: list[Entry] = []
            lines = self.lines
            run_lines = self._run_lines
            with gc_paused():
                for group in lines.spans(positions):
                    if ids is not None:
                        found += lines.read_many(group, ids)
                    elif len(group) >= run_lines and group[-1] - group[0] + 1 == len(group):
                        found += lines.read_run(group)
                    else:
                        found += lines.read_few(group)
            return found
        except (StaleIndex, OSError) as exc:
            self._give_up(exc)

    def _padded_ids(self) -> list[Any]:
        # ``ids()`` plus a ``None`` that the parent position ``-1`` (a root) names.
        if self._ids_padded is None:
            self._ids_padded = [*self.ids(), None]
        return self._ids_padded

    def entry(self, position: int, *, ahead: bool = False) -> Entry:
        """The entry at ``position``; ``ahead``: on a miss, decode the lines after it up to
        ``Tuning.read_ahead_bytes`` too (a caller reading position after position)."""
        if self._decoded is not None:
            return self._decoded[position]
        found = self._cache.get(position)
        if found is not None:
            return found
        if not ahead:
            return self.entries([position])[0]
        offsets = self.index.offsets
        stop = bisect_right(offsets, offsets[position] + self._ahead, lo=position + 1)
        return self.entries(range(position, stop))[0]

    def chunk_after(self, start: int, stop: int) -> range:
        """The positions from ``start`` (before ``stop``) whose lines fill about
        ``Tuning.iter_chunk_bytes``."""
        offsets = self.index.offsets
        return range(start, bisect_right(offsets, offsets[start] + self._iter_chunk, lo=start + 1, hi=stop))

    def chunk_before(self, start: int, stop: int) -> range:
        """The positions before ``stop`` (from ``start``) whose lines fill about
        ``Tuning.iter_chunk_bytes``."""
        offsets = self.index.offsets
        return range(bisect_left(offsets, offsets[stop - 1] - self._iter_chunk, lo=start, hi=stop - 1), stop)

    @property
    def forgets(self) -> bool:
        """Whether decoded entries may be dropped and decoded again (a bounded cache)."""
        return self._cache.budget is not None

    def bound_cache(self, budget: int | None) -> None:
        """Keep at most ``budget`` bytes of lines decoded (``None``: every entry decoded)."""
        self._cache.bound(budget)

    @property
    def cache(self) -> EntryCache:
        return self._cache

    def all_entries(self) -> list[Entry]:
        """Every indexed entry in file order (the cached ones among them, then the cache emptied)."""
        if self._decoded is not None:
            entries, self._decoded = self._decoded, None
            return entries
        entries = self.entries(range(len(self.index)), keep=False)
        self._cache.clear()
        return entries

    def read_anew(self) -> list[Entry]:
        """The entries of the indexed part as the file holds them *now*, decoded in full (the
        fallback when reading through the index found the file changed in place)."""
        try:
            data = os.pread(self.fd, self.index.covered, 0)
        except OSError as exc:
            raise SessionChangedError(self.path, f"cannot be read again ({exc})") from exc
        keep = self.keep_replay
        return list(parse_session(self.path, data, self.blobs, lambda _has_slot: keep).entries)

    def _give_up(self, exc: BaseException) -> NoReturn:
        # The file changed under us in place (appends never do this): the index is useless now.
        drop_index(self.path)
        raise SessionChangedError(self.path, f"changed while being read ({exc})") from exc
