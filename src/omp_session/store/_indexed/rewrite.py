"""The lines of a whole-file rewrite: unchanged entries copied from the file byte for byte, only
changed or new ones encoded (issue 11 item 6, docs/durability.md "Full rewrites").

A rewrite (a migration's first write, ``set_session_name``, ``move_to``, a fork...) used to encode
every entry again: slow for a large session, and not always the same bytes (a line another writer
formatted its own way, invalid UTF-8 read with replacement characters). Now each entry whose line
the :class:`~omp_session.store._indexed.line_table.LineTable` knows is copied from the current file, in runs
of adjacent lines read with one ``pread`` each.

A line is encoded again anyway when a transform may touch it: the persistence transform (images,
streaming scratch fields, strings over omp's limit: what it would write may differ) or a load
transform (blob references resolved, OpenAI replay data dropped in memory), and a line ending in
CR (rewrites write LF). A run that does not look as the table says (a newline missing where a line
should end) is encoded, and the table is not used again for this rewrite.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, cast, overload

from omp_session.errors import SessionChangedError
from omp_session.format import markers
from omp_session.format.transform import MAX_STRING_UNITS
from omp_session.store._indexed.line_table import LineTable

__all__ = ["LineCopier"]

Entry = dict[str, Any]

#: Bytes read at once when copying adjacent lines.
_RUN_BYTES = 4 << 20


def _marked_lines(data: bytes, starts: list[int]) -> set[int]:
    """Indexes of the lines (starting at ``starts`` in ``data``) that hold a marker: found with
    C-speed ``find`` over the whole run, so a marker costs one line's encoding, not the run's."""
    marked: set[int] = set()
    for marker in markers.current().rewrite:  # (the one list: format/markers.py)
        found = data.find(marker)
        while found >= 0:
            marked.add(bisect_right(starts, found) - 1)
            found = data.find(marker, data.find(b"\n", found) + 1)  # the next line on
    return marked


class LineSource(Protocol):
    """The file a line table describes (``FileStorage``): where copied lines are read from."""

    path: Path | None

    def read_range(self, offset: int, size: int) -> bytes:
        """``size`` bytes of the file from ``offset`` (fewer at its end)."""
        ...

    def unchanged(self) -> bool:
        """Whether the file is still exactly what was last read or written."""
        ...


class LineCopier:
    """Produce the lines of a rewrite and, as it goes, the line table of the file it writes."""

    def __init__(
        self, source: LineSource | None, table: LineTable | None, encode: Callable[[Entry], bytes]
    ) -> None:
        """``source``: the file the table describes (copies are read from it); ``encode``: the
        line (with its newline) written for an entry that is not copied."""
        self._source = source
        self._table = table if source is not None else None
        self._encode = encode
        self._written = 0
        self._offsets: list[int] = []
        self._lengths: list[int] = []
        self._written_entries: list[Entry | None] = []  # None: not read (a lazy index's line)
        self._entries: Sequence[Entry] = ()
        #: Entries copied rather than encoded (for tests and measurements).
        self.copied = 0

    def new_table(self) -> LineTable:
        """Where each entry's line is in the file written (valid once the rewrite succeeded)."""
        entries = self._written_entries
        if any(entry is None for entry in entries):  # kept lazy: no identities to check
            return LineTable(self._offsets, self._lengths)
        return LineTable(self._offsets, self._lengths, cast("list[Entry]", entries))

    def lines(
        self, head: Iterable[bytes], entries: Sequence[Entry], extra: Entry | None = None
    ) -> Iterator[bytes]:
        """``head`` (title slot, header: always encoded), then one line per entry of ``entries``
        and ``extra``. An entry is read from ``entries`` only when needed: a lazy index's view
        (``LazyEntries``) then decodes only the lines that are encoded again."""
        for line in head:
            self._written += len(line)
            yield line
        source = self._source
        if self._table is not None and source is not None and not source.unchanged():
            self._table = None  # the file is not the one the table describes
        self._entries = entries if extra is None else _Extended(entries, extra)
        run: list[tuple[int, int, int]] = []  # (position, offset, length)
        run_start = run_end = 0
        for position in range(len(self._entries)):
            table = self._table  # a failed copy stops using it
            span = table.span(position, self._entries) if table is not None else None
            if span is None:
                if run:
                    yield from self._copy(run, run_start, run_end)
                    run = []
                yield self._encoded(position)
                continue
            offset, length = span
            if run and (offset != run_end + 1 or offset + length - run_start > _RUN_BYTES):
                yield from self._copy(run, run_start, run_end)
                run = []
            if not run:
                run_start = offset
            run.append((position, offset, length))
            run_end = offset + length
        if run:
            yield from self._copy(run, run_start, run_end)
        if self.copied and source is not None and not source.unchanged():
            # Changed while we copied from it (a fork reads another file than it writes).
            raise SessionChangedError(str(source.path), "the file changed while it was copied")

    def _encoded(self, position: int) -> bytes:
        entry = self._entries[position]
        line = self._encode(entry)
        self._note(entry, self._written, len(line) - 1)
        self._written += len(line)
        return line

    def _note(self, entry: Entry | None, offset: int, length: int) -> None:
        self._offsets.append(offset)
        self._lengths.append(length)
        self._written_entries.append(entry)

    def _copy(self, run: list[tuple[int, int, int]], start: int, end: int) -> Iterator[bytes]:
        """The lines of ``run`` (adjacent in the file, ``start``..``end`` plus a newline)."""
        assert self._source is not None
        data = self._source.read_range(start, end + 1 - start)
        if len(data) != end + 1 - start or not data.endswith(b"\n") or data.count(b"\n") != len(run):
            self._table = None  # not the lines the table says: encode them, and all after
            for position, _offset, _length in run:
                yield self._encoded(position)
            return
        starts = [offset - start for _position, offset, _length in run]
        encode = _marked_lines(data, starts)
        encode.update(i for i, (_position, _offset, length) in enumerate(run) if length > MAX_STRING_UNITS)
        # Copy the stretches between the lines that need encoding (often none: one stretch).
        first = 0
        for stop in [*sorted(encode), len(run)]:
            if first < stop:
                yield self._copied(data, start, run[first:stop])
            if stop < len(run):
                yield self._encoded(run[stop][0])
            first = stop + 1

    def _copied(self, data: bytes, start: int, stretch: list[tuple[int, int, int]]) -> bytes:
        """The bytes of ``stretch`` (adjacent lines of ``data``, read from ``start``), noted."""
        begin = stretch[0][1] - start
        last_offset, last_length = stretch[-1][1], stretch[-1][2]
        end = last_offset + last_length + 1 - start
        base = self._written - start - begin
        self._offsets += [base + offset for _position, offset, _length in stretch]
        self._lengths += [length for _position, _offset, length in stretch]
        if self._table is not None and self._table.identified:  # kept for the next identity check
            entries = self._entries
            self._written_entries += [entries[position] for position, _offset, _length in stretch]
        else:
            self._written_entries += [None] * len(stretch)
        self._written += end - begin
        self.copied += len(stretch)
        return data[begin:end] if begin or end != len(data) else data


class _Extended(Sequence[Entry]):
    """``entries`` and one more (a rewrite's new entry) without copying the list."""

    def __init__(self, entries: Sequence[Entry], extra: Entry) -> None:
        self._entries = entries
        self._extra = extra
        self._size = len(entries)

    def __len__(self) -> int:
        return self._size + 1

    @overload
    def __getitem__(self, item: int) -> Entry: ...

    @overload
    def __getitem__(self, item: slice) -> Sequence[Entry]: ...

    def __getitem__(self, item: int | slice) -> Entry | Sequence[Entry]:
        if isinstance(item, slice):
            return [*self._entries, self._extra][item]
        return self._extra if item == self._size else self._entries[item]
