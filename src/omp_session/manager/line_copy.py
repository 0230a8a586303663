"""The lines of a whole-file rewrite: unchanged entries copied from the file byte for byte, only
changed or new ones encoded (issue 11 item 6, docs/durability.md "Full rewrites").

A rewrite (a migration's first write, ``set_session_name``, ``move_to``, a fork...) used to encode
every entry again: slow for a large session, and not always the same bytes (a line another writer
formatted its own way, invalid UTF-8 read with replacement characters). Now each entry whose line
the :class:`~omp_session.store.line_table.LineTable` knows is copied from the current file, in runs
of adjacent lines read with one ``pread`` each.

A line is encoded again anyway when a transform may touch it: the persistence transform (images,
streaming scratch fields, strings over omp's limit: what it would write may differ) or a load
transform (blob references resolved, OpenAI replay data dropped in memory), and a line ending in
CR (rewrites write LF). A run that does not look as the table says (a newline missing where a line
should end) is encoded, and the table is not used again for this rewrite.

Internal module (part of :class:`~omp_session.SessionManager`, which is the API); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from omp_session.errors import SessionChangedError
from omp_session.format.transform import MAX_STRING_UNITS
from omp_session.store.file import FileStorage
from omp_session.store.line_table import LineTable

__all__ = ["LineCopier"]

Entry = dict[str, Any]

#: Bytes read at once when copying adjacent lines.
_RUN_BYTES = 4 << 20
#: What a line holds when a transform may make its entry's line differ from it (see above).
_ENCODE_MARKERS = (
    b'"image',
    b'"partialJson"',
    b'"jsonlEvents"',
    b"blob:sha256:",
    b"openaiResponsesHistory",
    b"\r",
)


def _must_encode(data: bytes) -> bool:
    return any(marker in data for marker in _ENCODE_MARKERS)


class LineCopier:
    """Produce the lines of a rewrite and, as it goes, the line table of the file it writes."""

    def __init__(
        self, source: FileStorage | None, table: LineTable | None, encode: Callable[[Entry], bytes]
    ) -> None:
        """``source``: the file the table describes (copies are read from it); ``encode``: the
        line (with its newline) written for an entry that is not copied."""
        self._source = source
        self._table = table if source is not None else None
        self._encode = encode
        self._written = 0
        self._offsets: list[int] = []
        self._lengths: list[int] = []
        self._entries: list[Entry] = []
        #: Entries copied rather than encoded (for tests and measurements).
        self.copied = 0

    def new_table(self) -> LineTable:
        """Where each entry's line is in the file written (valid once the rewrite succeeded)."""
        return LineTable(self._offsets, self._lengths, self._entries)

    def lines(self, head: Iterable[bytes], entries: Iterable[Entry]) -> Iterator[bytes]:
        """``head`` (title slot, header: always encoded), then one line per entry."""
        for line in head:
            self._written += len(line)
            yield line
        source = self._source
        if self._table is not None and source is not None and not source.unchanged():
            self._table = None  # the file is not the one the table describes
        run: list[tuple[Entry, int, int]] = []
        run_start = run_end = 0
        for position, entry in enumerate(entries):
            table = self._table  # a failed copy stops using it
            span = table.span(position, entry) if table is not None else None
            if span is None:
                if run:
                    yield from self._copy(run, run_start, run_end)
                    run = []
                yield self._encoded(entry)
                continue
            offset, length = span
            if run and (offset != run_end + 1 or offset + length - run_start > _RUN_BYTES):
                yield from self._copy(run, run_start, run_end)
                run = []
            if not run:
                run_start = offset
            run.append((entry, offset, length))
            run_end = offset + length
        if run:
            yield from self._copy(run, run_start, run_end)
        if self.copied and source is not None and not source.unchanged():
            # Changed while we copied from it (a fork reads another file than it writes).
            raise SessionChangedError(str(source.path), "the file changed while it was copied")

    def _encoded(self, entry: Entry) -> bytes:
        line = self._encode(entry)
        self._note(entry, self._written, len(line) - 1)
        self._written += len(line)
        return line

    def _note(self, entry: Entry, offset: int, length: int) -> None:
        self._offsets.append(offset)
        self._lengths.append(length)
        self._entries.append(entry)

    def _copy(self, run: list[tuple[Entry, int, int]], start: int, end: int) -> Iterator[bytes]:
        """The lines of ``run`` (adjacent in the file, ``start``..``end`` plus a newline)."""
        assert self._source is not None
        data = self._source.read_range(start, end + 1 - start)
        if len(data) != end + 1 - start or not data.endswith(b"\n") or data.count(b"\n") != len(run):
            self._table = None  # not the lines the table says: encode them, and all after
            for entry, _offset, _length in run:
                yield self._encoded(entry)
            return
        if not _must_encode(data) and max(length for _entry, _offset, length in run) <= MAX_STRING_UNITS:
            base = self._written - start
            for entry, offset, length in run:
                self._note(entry, base + offset, length)
            self._written += len(data)
            self.copied += len(run)
            yield data
            return
        for entry, offset, length in run:  # some lines need encoding: line by line
            line = data[offset - start : offset - start + length]
            if length > MAX_STRING_UNITS or _must_encode(line):
                yield self._encoded(entry)
            else:
                self._note(entry, self._written, length)
                self._written += length + 1
                self.copied += 1
                yield line + b"\n"
