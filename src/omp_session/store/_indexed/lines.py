"""The lines of an indexed session file, read by position and checked against the index.

:class:`IndexedLines` reads the lines a :class:`~omp_session.store._indexed.lazy_store.LazyStore` asks for
with as few ``pread`` calls as their layout allows, decodes them exactly as
:func:`omp_session.store.loading.parse_session` would (same decoder, same blob resolution and
OpenAI-replay sanitising), and checks that each has the id and parent the index recorded: a file
changed in place under its index raises :class:`StaleIndex` instead of handing out other entries.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Collection, Iterator, Sequence
from itertools import repeat
from typing import Any, cast

import orjson

from omp_session.format import markers as marker_list
from omp_session.format.codec import _decode_slow
from omp_session.format.transform import resolve_blob_refs, sanitize_openai_replay
from omp_session.store._indexed.markers import Markers
from omp_session.store._indexed.offsets import OffsetIndex
from omp_session.store.blobs import BlobSink

__all__ = ["IndexedLines", "StaleIndex"]

Entry = dict[str, Any]
#: Gaps up to this size between wanted lines are read rather than skipped with another pread.
_READ_THROUGH = 256 * 1024
_CHUNK = 2 << 20


class StaleIndex(Exception):
    """Internal signal: a line read through the index is not what the index says.

    Caught where the index is used (the file is then read in full); never reaches a caller.
    """


class IndexedLines:
    """Lines of the indexed part of one file by position: read, decoded, transformed, checked."""

    def __init__(
        self, fd: int, index: OffsetIndex, blobs: BlobSink | None, markers: Markers, keep_replay: bool = False
    ) -> None:
        self.fd = fd
        self.keep_replay = keep_replay
        self.index = index
        self.blobs = blobs
        self.markers = markers
        #: The position of each id decoded so far (a lookup needs no scan of the id column then).
        self.known: dict[str, int] = {}
        needed = (markers.blob and blobs is not None) or markers.openai
        marked = index.meta.get("marked", ())
        # ``None``: the indexed part held no marker when it was indexed, so its lines with a ``\u``
        # escape were not listed; if the file has markers now (appended since), transform all.
        self._transform_all = needed and marked is None
        self._marked = frozenset(marked or ()) if needed else frozenset()

    @property
    def marked(self) -> Collection[int]:
        """Positions whose entries a load-side transform may change (empty if the file needs none)."""
        return range(len(self.index)) if self._transform_all else self._marked

    def transform(self, entry: Entry, line: bytes) -> None:
        """What parse_session does to every entry after decoding (in place).

        The file-level markers decide as in parse_session; a line without the marker (or a
        ``\\u`` escape that could spell it) has nothing the transform would change.
        """
        markers, found = self.markers, marker_list.current()
        if markers.blob and self.blobs is not None and found.in_line("blob", line):
            resolve_blob_refs(entry, self.blobs, image_urls=markers.image_url)
        if markers.openai and found.in_line("openai", line):
            sanitize_openai_replay(entry, self.keep_replay)

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

    def spans(self, positions: Sequence[int]) -> Iterator[Sequence[int]]:
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

    def read_few(self, group: Sequence[int]) -> list[Entry]:
        """Decode the lines of ``group``, checking each one's links."""
        found = []
        for position, line in zip(group, self._lines(group), strict=True):
            value = self._decode(line, position)
            self._check_links(value, position)
            if isinstance(entry_id := value.get("id"), str):
                self.known[entry_id] = position
            if self._transform_all or position in self._marked:
                self.transform(value, line)
            found.append(value)
        return found

    def read_many(self, group: Sequence[int], ids: list[Any]) -> list[Any]:
        """``read_few`` for many lines, in bulk: the lines are decoded by one ``map`` (the loop in
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

    def read_run(self, group: Sequence[int]) -> list[Any]:
        """``read_many`` for a run of consecutive lines (a stretch of a path) without the id
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
            self.known.update((i, p) for i, p in zip(run_ids, group, strict=True) if i is not None)
        else:
            self.known.update(zip(cast("list[str]", run_ids), group, strict=True))
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
