"""Reading the entries of an indexed session file on demand, line by line.

A :class:`LazyStore` keeps a descriptor of the session file open (so a rename over the path, as a
rewrite does, never changes what it reads) and decodes an entry the first time it is asked for,
exactly as :func:`omp_session.store.loading.parse_session` would have: same decoder, same blob
resolution and OpenAI-replay sanitising. Decoded entries are cached (:mod:`.entry_cache`): the same
object is handed out again while it is cached, an equal one decoded anew after a bounded cache
dropped it.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import os
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any, NoReturn, cast

import orjson

from omp_session.errors import SessionChangedError
from omp_session.format.codec import _decode_slow
from omp_session.format.transform import resolve_blob_refs, sanitize_openai_replay
from omp_session.gcpause import gc_paused
from omp_session.store.blobs import BlobSink
from omp_session.store.entry_cache import EntryCache
from omp_session.store.loading import parse_session
from omp_session.store.markers import BLOB_MARKER, ESCAPE_MARKER, OPENAI_MARKER, Markers, marked_lines
from omp_session.store.offset_index import OffsetIndex, drop_index

__all__ = ["LazyStore", "Markers", "StaleIndex", "marked_lines"]

Entry = dict[str, Any]
#: Gaps up to this size between wanted lines are read rather than skipped with another pread.
_READ_THROUGH = 256 * 1024
_CHUNK = 2 << 20
#: Bytes of lines an iteration decodes at a time (below the cache's budget: see entry_cache.py).
_ITER_CHUNK = 1 << 20
#: Bytes of lines read ahead by ``entry(position, ahead=True)`` on a miss.
_AHEAD = 64 << 10
#: Lines decoded at once from which the bulk check against the id column pays.
_BULK_LINES = 256
# Consecutive lines read as one run, their links checked as lists (``_read_run``): a few
# comparisons per line instead of two encodings of ids.
_RUN_LINES = 16
#: Id lookups answered by scanning the id column before the map of every id is built instead.
_SCANS_BEFORE_MAP = 128


class StaleIndex(Exception):
    """Internal signal: a line read through the index is not what the index says.

    Caught where the index is used (the file is then read in full); never reaches a caller.
    """


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
    ) -> None:
        """``decoded``: every indexed entry, already decoded and transformed (a cold open has just
        read them all); ``cached``: some of them by position (a cold open that kept only those);
        ``positions``: the position of each id, when the caller has it."""
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
        self._positions: dict[str, int] | None = positions
        self._ids: list[str | None] | None = None
        self._ids_padded: list[Any] | None = None
        self._absent: set[str] = set()  # ids known not to be in the indexed part
        self._scans = 0
        self._known: dict[str, int] = {}  # ids of the entries decoded so far
        needed = (markers.blob and blobs is not None) or markers.openai
        marked = index.meta.get("marked", ())
        # ``None``: the indexed part held no marker when it was indexed, so its lines with a ``\u``
        # escape were not listed; if the file has markers now (appended since), transform all.
        self._transform_all = needed and marked is None
        self._marked = frozenset(marked or ()) if needed else frozenset()
        self._closer = weakref.finalize(self, os.close, fd)
        self._last_id: str | None = None
        if len(index):
            last_id = orjson.loads(index.id_bytes(len(index) - 1))
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
        return range(len(self.index)) if self._transform_all else self._marked

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
            self._absent.add(entry_id)
            return None
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

    # -- decoding ----------------------------------------------------------------------------

    def transform(self, entry: Entry, line: bytes) -> None:
        """What parse_session does to every entry after decoding (in place).

        The file-level markers decide as in parse_session; a line without the marker (or a
        ``\\u`` escape that could spell it) has nothing the transform would change.
        """
        markers = self.markers
        if markers.blob and self.blobs is not None and (BLOB_MARKER in line or ESCAPE_MARKER in line):
            resolve_blob_refs(entry, self.blobs, image_urls=markers.image_url)
        if markers.openai and (OPENAI_MARKER in line or ESCAPE_MARKER in line):
            sanitize_openai_replay(entry)

    def _check_links(self, value: Entry, position: int) -> None:
        # The line has the id and parent the index recorded (a few lines: compare encoded ids).
        index = self.index
        entry_id = value.get("id")
        try:
            encoded = orjson.dumps(entry_id if isinstance(entry_id, str) else None)
            parent = index.parents[position]
            same = encoded == index.id_bytes(position) and (
                parent < 0 or orjson.dumps(value.get("parentId")) == index.id_bytes(parent)
            )
        except TypeError:  # an id orjson cannot write: never indexed, so the file changed
            same = False
        if not same:
            raise StaleIndex(f"entry {position} is not linked as the index says")

    def _spans(self, positions: Sequence[int]) -> Iterator[Sequence[int]]:
        """Sorted ``positions`` in groups read with one ``pread`` each: lines close together."""
        offsets = self.index.offsets
        if len(positions) > 64 and len(positions) * 2 > positions[-1] - positions[0]:
            # Dense (a long stretch of a path): cut by size only, by bisection rather than per line.
            start = 0
            while start < len(positions):
                limit = offsets[positions[start]] + _CHUNK
                stop = bisect_right(positions, limit, lo=start + 1, key=offsets.__getitem__)
                yield positions[start:stop]
                start = stop
            return
        lengths = self.index.lengths
        group: list[int] = []
        end = 0
        for position in positions:
            far = offsets[position] - end > _READ_THROUGH
            if group and (far or offsets[position] - offsets[group[0]] > _CHUNK):
                yield group
                group = []
            group.append(position)
            end = offsets[position] + lengths[position]
        if group:
            yield group

    def _lines(self, group: Sequence[int]) -> list[bytes]:
        """The line of each position of ``group`` (ascending), read with one ``pread``."""
        offsets, lengths = self.index.offsets, self.index.lengths
        start = offsets[group[0]] - 1  # the newline before the first line
        stop = offsets[group[-1]] + lengths[group[-1]] + 1  # ... and after the last
        data = os.pread(self.fd, stop - start, start)
        if len(data) != stop - start or data[0] != 10 or data[-1] != 10:
            raise StaleIndex("the file does not have the lines the index says")
        if group[-1] - group[0] + 1 == len(group):  # consecutive entries: one split, if no other line
            lines = data.split(b"\n")  # starts and ends with an empty part (the outer newlines)
            if len(lines) == len(group) + 2:
                del lines[0], lines[-1]
                if list(map(len, lines)) != list(lengths[group[0] : group[-1] + 1]):
                    raise StaleIndex("the lines are not as long as the index says")
                return lines
        found = []
        for position in group:
            begin = offsets[position] - start
            end = begin + lengths[position]
            if data[begin - 1] != 10 or data[end] != 10:
                raise StaleIndex(f"entry {position} is not a whole line")
            found.append(data[begin:end])
        return found

    def _decode(self, line: bytes, position: int) -> Entry:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:
                value = _decode_slow(line)[0]
            except ValueError:
                raise StaleIndex(f"entry {position} is not JSON") from None
        if type(value) is not dict:
            raise StaleIndex(f"entry {position} is not an object")
        return value

    def _read_few(self, group: Sequence[int]) -> list[Entry]:
        """Decode the lines of ``group``, checking each one's links."""
        found = []
        for position, line in zip(group, self._lines(group), strict=True):
            value = self._decode(line, position)
            self._check_links(value, position)
            if isinstance(entry_id := value.get("id"), str):
                self._known[entry_id] = position
            if self._transform_all or position in self._marked:
                self.transform(value, line)
            found.append(value)
        return found

    def _read_many(self, group: Sequence[int], ids: list[Any]) -> list[Any]:
        """``_read_few`` for many lines, in bulk: the lines are decoded by one ``map`` (the loop in
        C, as the cold open does) and their links compared with the decoded id column as whole
        lists; only a group whose lists differ (a root with an odd parent, an id that is not a
        string, a changed file) is looked at line by line. ``ids`` ends with an extra ``None``,
        so that the parent position ``-1`` (a root) names it."""
        parents = self.index.parents
        if group[-1] - group[0] + 1 == len(group):
            expected_ids = ids[group[0] : group[-1] + 1]
            expected_parents = list(map(ids.__getitem__, parents[group[0] : group[-1] + 1]))
        else:
            expected_ids = list(map(ids.__getitem__, group))
            expected_parents = [ids[parents[position]] for position in group]
        return self._decode_checked(group, expected_ids, expected_parents)

    def _read_run(self, group: Sequence[int]) -> list[Any]:
        """``_read_many`` for a run of consecutive lines (a stretch of a path) without the id
        column of the whole file: the run's own ids are decoded from one slice of the column, and
        the few parents before the run one by one."""
        first, stop = group[0], group[-1] + 1
        index = self.index
        run_ids = index.ids_between(first, stop)
        expected_parents = [
            run_ids[parent - first] if parent >= first else None if parent < 0 else index.id_at(parent)
            for parent in index.parents[first:stop]
        ]
        values = self._decode_checked(group, run_ids, expected_parents)
        if None in run_ids:
            self._known.update((i, p) for i, p in zip(run_ids, group, strict=True) if i is not None)
        else:
            self._known.update(zip(cast("list[str]", run_ids), group, strict=True))
        return values

    def _decode_checked(
        self, group: Sequence[int], expected_ids: list[Any], expected_parents: list[Any]
    ) -> list[Any]:
        # The lines of ``group`` decoded by one ``map`` and their links compared as whole lists.
        lines = self._lines(group)
        try:
            values: list[Any] = list(map(orjson.loads, lines))
        except orjson.JSONDecodeError:  # a lone surrogate and the like: the lenient decoder
            values = [self._decode(line, position) for line, position in zip(lines, group, strict=True)]
        if len(set(map(type, values))) != 1 or type(values[0]) is not dict:
            raise StaleIndex("an entry is not an object")
        got_ids = list(map(dict.get, values, repeat("id")))
        got_parents = list(map(dict.get, values, repeat("parentId")))
        if got_ids != expected_ids or got_parents != expected_parents:
            self._check_each(group, got_ids, got_parents, expected_ids, expected_parents)
        if self._transform_all or self._marked:
            marked, every = self._marked, self._transform_all
            for position, value, line in zip(group, values, lines, strict=True):
                if every or position in marked:
                    self.transform(value, line)
        return values

    def _check_each(
        self,
        group: Sequence[int],
        got_ids: list[Any],
        got_parents: list[Any],
        expected_ids: list[Any],
        expected_parents: list[Any],
    ) -> None:
        """The links of a group whose lists differ, line by line: an id the index recorded as
        ``None`` may be any non-string; a root (parent ``-1``) may name any parent (null, empty,
        its own id, one no entry has)."""
        parents = self.index.parents
        for position, got_id, got_parent, want_id, want_parent in zip(
            group, got_ids, got_parents, expected_ids, expected_parents, strict=True
        ):
            if got_id != want_id and (isinstance(got_id, str) or want_id is not None):
                raise StaleIndex(f"entry {position} has another id")
            if got_parent != want_parent and parents[position] >= 0:
                raise StaleIndex(f"entry {position} has another parent")

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
            with gc_paused():
                for group in self._spans(positions):
                    if ids is not None:
                        found += self._read_many(group, ids)
                    elif len(group) >= _RUN_LINES and group[-1] - group[0] + 1 == len(group):
                        found += self._read_run(group)
                    else:
                        found += self._read_few(group)
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
        ``_AHEAD`` bytes too (a caller reading position after position)."""
        if self._decoded is not None:
            return self._decoded[position]
        found = self._cache.get(position)
        if found is not None:
            return found
        if not ahead:
            return self.entries([position])[0]
        offsets = self.index.offsets
        stop = bisect_right(offsets, offsets[position] + _AHEAD, lo=position + 1)
        return self.entries(range(position, stop))[0]

    def chunk_after(self, start: int, stop: int) -> range:
        """The positions from ``start`` (before ``stop``) whose lines fill about ``_ITER_CHUNK`` bytes."""
        offsets = self.index.offsets
        return range(start, bisect_right(offsets, offsets[start] + _ITER_CHUNK, lo=start + 1, hi=stop))

    def chunk_before(self, start: int, stop: int) -> range:
        """The positions before ``stop`` (from ``start``) whose lines fill about ``_ITER_CHUNK`` bytes."""
        offsets = self.index.offsets
        return range(bisect_left(offsets, offsets[stop - 1] - _ITER_CHUNK, lo=start, hi=stop - 1), stop)

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
        return list(parse_session(self.path, data, self.blobs).entries)

    def _give_up(self, exc: BaseException) -> NoReturn:
        # The file changed under us in place (appends never do this): the index is useless now.
        drop_index(self.path)
        raise SessionChangedError(self.path, f"changed while being read ({exc})") from exc
