"""The fast paths of ``SessionManager.open`` for large sessions, in the order ``auto`` tries them
(docs/performance.md, "How open reads a file"; ``strategies.py`` names each way and picks them):

1. ``open_indexed``: through the stored offset index (the warm open, reading a few lines);
2. ``open_cold``: no usable index: one pass that indexes every line, writes the index and serves
   the open from the entries it decoded. How the lines are indexed is a :class:`ColdPass`: through
   a scanner (``THROUGH_COMPILED`` where it is built, ``THROUGH_PURE``: store/scanner.py), or,
   without one, from a skim of each line or by decoding them all (``WITHOUT_SCANNER``);
3. otherwise the caller parses the file in full and ``remember_index`` stores an index if the
   file can have one.

Both fast paths return ``None`` whenever they cannot serve the file exactly (a stale or damaged
index, a file that needs migration or has a shape the index does not model). The building
helper ``_build`` comes last; extending a stored index over appended lines is ``index_extension.py``.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple, Protocol, cast

import orjson

from omp_session.errors import CorruptSessionError, SessionChangedError
from omp_session.format.blob_refs import BlobSink
from omp_session.format.codec import DecodedFile, LineIssue
from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.migrate import header_version
from omp_session.format.title_slot import TitleSlot, fold_into_header, split_slot
from omp_session.format.transform import KeepReplay, drop_replay
from omp_session.gcpause import gc_paused
from omp_session.model.usage import UsageStatistics
from omp_session.store import scanner
from omp_session.store._indexed.builder import ComplexSession, IndexBuilder, line_spans
from omp_session.store._indexed.extension import decode_after, extend_index, issue_row
from omp_session.store._indexed.lazy_index import LazyEntries, LazySessionIndex
from omp_session.store._indexed.lazy_store import LazyStore, StaleIndex
from omp_session.store._indexed.line_table import LineTable
from omp_session.store._indexed.markers import Markers, marked_lines
from omp_session.store._indexed.offsets import (
    OffsetIndex,
    changed_in_place,
    file_state,
    fingerprint,
    read_index,
    write_index,
)
from omp_session.store._indexed.skim_open import COMPACTION_MARK, skim_lines
from omp_session.store.loading import LoadedSession, is_session_header
from omp_session.store.regular import open_regular
from omp_session.store.tuning import DEFAULT_TUNING, ReadStrategy, Tuning

__all__ = [
    "AUTO_COLD",
    "THROUGH_COMPILED",
    "THROUGH_PURE",
    "WITHOUT_SCANNER",
    "ColdPass",
    "IndexedOpen",
    "open_cold",
    "open_indexed",
    "remember_index",
]

Entry = dict[str, Any]
_FALLBACK = (
    OverflowError,
    StaleIndex,
    ComplexSession,
    SessionChangedError,
    OSError,
    ValueError,
)


class OpenTarget(Protocol):
    """The storage an open serves (``FileStorage``): its blobs resolve references, and it learns
    the state of the file read through another descriptor (its rewrites then still refuse to
    overwrite changes made since)."""

    blobs: BlobSink

    def adopt_read_state(self, stat: os.stat_result) -> None: ...


class IndexedOpen(NamedTuple):
    """A session opened through its index: what ``parse_session`` would give, and the offset of
    the first byte after the last complete line (where ``refresh`` continues)."""

    loaded: LoadedSession
    read_offset: int
    #: Where each entry's line is (the file storage keeps it for rewrites, line_table.py).
    lines: LineTable | None = None

    def close(self) -> None:
        """Close the session file's descriptor this open reads through (an open that is
        discarded: the warm strategy's build, strategies.py)."""
        cast("LazySessionIndex", self.loaded.index).close()


Kept = list[dict[str, Any]] | dict[int, dict[str, Any]]


class ColdPass(NamedTuple):
    """How a cold open indexes the lines of ``data[start:end]`` (whole lines) in about ``chunk``
    bytes at a time: ``run(data, start, end, chunk)`` gives the builder that indexed them and
    the entries the open keeps (every one in a list, or some by position); ``read_by`` is the
    strategy it is (``LazySessionIndex.read_by``)."""

    read_by: ReadStrategy
    run: Callable[[bytes, int, int, int], tuple[IndexBuilder, Kept]]


# -- opening -------------------------------------------------------------------------------------


def open_indexed(
    path: Path, storage: OpenTarget, keep_replay: KeepReplay = drop_replay, tuning: Tuning = DEFAULT_TUNING
) -> IndexedOpen | None:
    """Open ``path`` through its offset index, or ``None`` to say "load it in full"
    (``keep_replay``: as for ``parse_session``; ``tuning``: the thresholds and sizes of the read)."""
    try:
        if os.stat(path).st_size < tuning.min_indexed_bytes:
            return None
        index = read_index(path)
        if index is None or index.meta.get("complex") or index.meta.get("version", 0) < CURRENT_VERSION:
            return None
        fd = open_regular(path)
    except (OSError, CorruptSessionError):
        return None
    holder: list[LazyStore] = []
    try:
        opened = _open_with(path, fd, index, storage, holder, keep_replay, tuning)
    except _FALLBACK:
        opened = None
    except BaseException:
        holder[0].close() if holder else os.close(fd)
        raise
    if opened is None:
        holder[0].close() if holder else os.close(fd)
    return opened


def _open_with(
    path: Path,
    fd: int,
    index: OffsetIndex,
    storage: OpenTarget,
    holder: list[LazyStore],
    keep_replay: KeepReplay,
    tuning: Tuning,
) -> IndexedOpen:
    stat = os.fstat(fd)
    covered = index.covered
    header_offset, header_length = index.header_span
    header_line = os.pread(fd, header_length, header_offset)
    if [stat.st_dev, stat.st_ino] != index.meta.get("file"):
        raise StaleIndex("another file at this path (replaced by a rewrite)")
    read = lambda n, at: os.pread(fd, n, at)  # noqa: E731
    if stat.st_size < covered or fingerprint(read, covered, header_line, tuning) != index.meta.get(
        "fingerprint"
    ):
        raise StaleIndex("the file changed")
    if changed_in_place(index.meta, stat, read):
        raise StaleIndex("the file was changed in place since it was indexed")
    if index.meta.get("racy_crc") is not None and stat.st_size == index.meta["stat"][0]:
        # Verified in full once; no longer recent, it need not be again (a later edit changes the times).
        settled = file_state(stat, index.meta["racy_crc"], tuning)  # the CRC changed_in_place just verified
        if settled["racy_crc"] is None:
            index.meta.update(settled)
            write_index(path, index)
    header = orjson.loads(header_line)
    if not is_session_header(header):
        raise StaleIndex("no header")
    # An omp 18 title slot ahead of the header is folded in as a full load does. omp 18 rewrites
    # it in place on a rename, which changes the sampled first block: the index is then stale.
    slot = split_slot(os.pread(fd, header_offset, 0))[0] if header_offset else None
    if slot is not None:
        fold_into_header(header, slot)
    rest = os.pread(fd, stat.st_size - covered, covered) if stat.st_size > covered else b""
    cut = rest.rfind(b"\n") + 1
    if cut:
        index = extend_index(path, index, rest[:cut], fd, header_line, stat, tuning)
    tail = rest[cut:]
    markers = Markers(*index.meta["markers"]).merged(Markers.of(tail))
    keep = _keep_replay(markers, keep_replay, slot)
    store = LazyStore(path, fd, index, storage.blobs, markers, keep_replay=keep, tuning=tuning)
    holder.append(store)
    usage = UsageStatistics.from_state(json.loads(index.meta["usage"]))
    # FileStorage.read() records what it read, to refuse rewrites over someone else's changes;
    # we read through our own descriptor, so record the same state it would have.
    storage.adopt_read_state(stat)
    lines = LineTable(index.offsets, index.lengths)  # for rewrites (line_table.py)
    return _opened(header, store, usage, bool(index.meta["has_assistant"]), tail, stat.st_size, slot, lines)


def open_cold(
    path: Path,
    data: bytes,
    storage: OpenTarget,
    keep_replay: KeepReplay = drop_replay,
    tuning: Tuning = DEFAULT_TUNING,
    cold: ColdPass | None = None,
) -> IndexedOpen | None:
    """Open a large file without an index in one pass over ``data`` (the whole file, just read):
    index every line (``cold``: how; by default as ``auto`` does), store the index for the next
    ``open`` and serve this one lazily from the entries decoded (each line is decoded once).

    ``None`` for anything but a plain current-version file (a blank, malformed or non-object line,
    a BOM, a file that needs migration, a shape the index does not model): it is then loaded with
    ``parse_session`` and indexed by ``remember_index``, as before this path existed.
    """
    covered = data.rfind(b"\n") + 1
    if len(data) < tuning.min_indexed_bytes or covered == 0:
        return None
    if cold is None:
        cold = AUTO_COLD
    chunk = tuning.decode_chunk_bytes
    slot, header_start = split_slot(data)  # an omp 18 title slot comes before the header
    header_end = data.find(b"\n", header_start)
    tail = data[covered:]  # b"" when the file ends with a newline
    if header_end < 0:
        return None
    try:
        header = orjson.loads(data[header_start:header_end])
        if not is_session_header(header) or header_version(header) < CURRENT_VERSION:
            return None
        stat = os.stat(path)
        if stat.st_size != len(data):
            return None  # changed since it was read: the index would describe another file
        header_span = (header_start, header_end - header_start)
        if slot is not None:
            fold_into_header(header, slot)
        crc = _PrefixCrc(data, covered, background=covered >= tuning.parallel_crc_bytes)
        with gc_paused():  # the entries are acyclic: see gcpause.py
            builder, kept = cold.run(data, header_end + 1, covered, chunk)
        line_count = len(builder) + (2 if slot is not None else 1)
        meta = _meta(data, covered, header_span, builder, [], stat, tuning, lines=line_count, crc=crc)
        index = OffsetIndex.from_builder(builder, meta)
    except (orjson.JSONDecodeError, AttributeError, ComplexSession, OverflowError, OSError):
        # AttributeError: a line that is not an object (it has no ``get``).
        return None
    write_index(path, index)
    try:
        fd = open_regular(path)
    except (OSError, CorruptSessionError):
        return None
    markers = Markers(*meta["markers"]).merged(Markers.of(tail))
    try:
        keep = _keep_replay(markers, keep_replay, slot)
    except ComplexSession:
        return None
    every, some = (kept, None) if isinstance(kept, list) else (None, kept)
    # A cold open's builder: a plain dict, or none at all when the scanner built the id column.
    positions = None if builder.id_column is not None else cast("dict[str, int]", builder.id_positions)
    store = LazyStore(
        path,
        fd,
        index,
        storage.blobs,
        markers,
        every,
        positions,
        cached=some,
        keep_replay=keep,
        tuning=tuning,
        read_by=cold.read_by,
    )
    try:
        for position in store.marked:  # what parse_session's transforms change (lazy_store.py)
            entry = every[position] if every is not None else some.get(position) if some else None
            if entry is not None:  # (an entry not kept is transformed when it is read)
                offset = index.offsets[position]
                store.transform(entry, data[offset : offset + index.lengths[position]])
        # For rewrites (line_table.py): checked by identity where every entry was kept, else
        # trusted like the lazy open's (the entries are decoded from these very lines on demand).
        lines = LineTable(index.offsets, index.lengths, every)
        return _opened(header, store, builder.usage, builder.has_assistant, tail, len(data), slot, lines)
    except BaseException:
        store.close()
        raise


def _keep_replay(markers: Markers, keep_replay: KeepReplay, slot: TitleSlot | None) -> bool:
    """The opening dialect's OpenAI replay rule for this file. Where it keeps replay (omp 18) but a
    ``github-copilot`` one may still be dropped, which makes omp 18 rewrite the file at its next
    write, only a full load can tell (``LoadedSession.replay_dropped``): ``ComplexSession``."""
    keep = keep_replay(slot is not None)
    if keep and markers.replay_needs_full_load:
        raise ComplexSession("OpenAI replay that omp 18 may drop (github-copilot)")
    return keep


def _index_lines(
    data: bytes, start: int, end: int, builder: IndexBuilder, chunk: int
) -> list[Entry] | dict[int, Entry]:
    """Decode and index the lines of ``data[start:end]`` chunk by chunk (of about ``chunk``
    bytes). Returns every entry (a list) while the file has no compaction: the leaf's context is
    its whole path then. Once it has one, only what the leaf's context most likely reads is kept
    (by position): the entries
    from the first kept entry of the latest compaction on, and the state entries and labels
    before it (the builder lists their positions); the others are dropped chunk by chunk, a run
    at a time, and read through the index if a caller asks (issue 12 item 5: the open of a
    compacted 50 MB session peaks at 2.9× the file's size, one of them its bytes, instead of 6.6×)."""
    recent: list[Entry] = []  # the entries from position ``floor`` on
    states: dict[int, Entry] = {}  # state entries and labels before ``floor``
    floor = 0
    for entries, lengths in _line_chunks(data, start, end, chunk):
        # Offsets in C too: each line starts one byte (its newline) after the previous one ends.
        offsets = list(accumulate(map((1).__add__, lengths[:-1]), initial=start))
        start += sum(lengths) + len(lengths)
        builder.add_all(entries, offsets, lengths)
        recent.extend(entries)
        if not builder.kept:
            continue
        latest = max(builder.kept)
        new_floor = max(floor, builder.kept[latest] if builder.kept[latest] >= 0 else latest)
        if new_floor > floor:
            stateful = builder.stateful
            for at in stateful[bisect_left(stateful, floor) : bisect_left(stateful, new_floor)]:
                states[at] = recent[at - floor]
            del recent[: new_floor - floor]
            floor = new_floor
    if not builder.kept:
        return recent
    states.update(zip(range(floor, floor + len(recent)), recent, strict=True))
    return states


def _scanned(
    scan: Scan, data: bytes, start: int, end: int, builder: IndexBuilder, chunk: int
) -> list[Entry] | dict[int, Entry]:
    """``_index_lines`` through a scanner (store/scanner.py): the index is built from the
    bytes, and only the lines the leaf's context reads are decoded: every line of a linear
    session without compaction, else the path to the last entry (or, with a compaction, the
    lines from the latest one's first kept entry on) and the state entries and labels before it."""
    found = scan(data, start, end, builder, builder.stateful_types)
    builder.adopt(found)
    count = len(builder)
    parents = builder.parents
    if not builder.kept:
        if parents == _linear(count):  # (a comparison in C)
            entries: list[Entry] = []
            for begin, stop in _chunk_ranges(data, start, end, chunk):
                entries.extend(map(orjson.loads, data[begin : stop - 1].split(b"\n")))
            return entries
        floor = count
        path: list[int] = []
        at = count - 1
        while at >= 0:  # the path to the leaf a load ends on (the last entry)
            path.append(at)
            at = parents[at]
        wanted = sorted({*path, *builder.stateful})
    else:
        latest = max(builder.kept)
        floor = builder.kept[latest] if builder.kept[latest] >= 0 else latest
        stateful = builder.stateful
        wanted = stateful[: bisect_left(stateful, floor)]
    special, offsets, lengths = found.special, builder.offsets, builder.lengths
    kept = {
        p: special[p] if p in special else orjson.loads(data[offsets[p] : offsets[p] + lengths[p]])
        for p in wanted
    }
    if floor < count:
        tail = data[offsets[floor] : end - 1].split(b"\n")
        kept.update(zip(range(floor, count), map(orjson.loads, tail), strict=True))
    return kept


def _linear(count: int) -> array[int]:
    # The parent column of a session whose entries each follow the one before.
    column = array("i", range(-1, count - 1))
    return column


def _skimmed(data: bytes, start: int, end: int, builder: IndexBuilder, chunk: int) -> dict[int, Entry] | None:
    """``_index_lines`` for a file whose last quarter has a compaction line: index a skim of each
    line and decode only what is kept (skim_open.py); ``None`` if the file has none there or
    the skim cannot serve it exactly (then ``builder`` is half-filled: the caller starts again).
    Only the last quarter is searched: a file without compaction pays a quarter of a scan, and
    one whose latest compaction is earlier keeps most of its entries anyway."""
    if data.rfind(COMPACTION_MARK, max(start, end - (end - start) // 4), end) < 0:
        return None
    return skim_lines(data, start, end, builder, _chunk_ranges(data, start, end, chunk))


Scan = Callable[[bytes, int, int, scanner.ScanHooks, Collection[str]], scanner.Scanned]


def _through(scan: Scan, read_by: ReadStrategy) -> ColdPass:
    def run(data: bytes, start: int, end: int, chunk: int) -> tuple[IndexBuilder, Kept]:
        builder = IndexBuilder()
        return builder, _scanned(scan, data, start, end, builder, chunk)

    return ColdPass(read_by, run)


def _without_scanner(data: bytes, start: int, end: int, chunk: int) -> tuple[IndexBuilder, Kept]:
    # The skim where the file has a compaction in its last quarter, else (or where the skim gives
    # up, its builder half-filled) every line decoded.
    builder = IndexBuilder()
    skimmed = _skimmed(data, start, end, builder, chunk)
    if skimmed is not None:
        return builder, skimmed
    builder = IndexBuilder()
    return builder, _index_lines(data, start, end, builder, chunk)


#: The cold open through the compiled scanner (``None`` where it is not built) ...
THROUGH_COMPILED = _through(scanner.c_scan, ReadStrategy.COLD_COMPILED) if scanner.c_scan else None
#: ... through its pure-Python reference ...
THROUGH_PURE = _through(scanner.py_scan, ReadStrategy.COLD_PURE)
#: ... and without a scanner: the paths that are faster than the reference scan in pure Python.
WITHOUT_SCANNER = ColdPass(ReadStrategy.COLD_SKIM, _without_scanner)
#: ``auto``'s: the compiled scanner where ``scan`` is bound to it (store/scanner.py), else none.
AUTO_COLD = THROUGH_COMPILED if scanner.COMPILED and THROUGH_COMPILED is not None else WITHOUT_SCANNER


def _line_chunks(data: bytes, start: int, end: int, chunk: int) -> Iterator[tuple[list[Entry], list[int]]]:
    """The values of the lines of ``data[start:end]`` (which ends with a newline) and their
    lengths, a chunk of about ``chunk`` bytes at a time: split and decoded with the per-line
    loops in C (``map``)."""
    for begin, stop in _chunk_ranges(data, start, end, chunk):
        lines = data[begin : stop - 1].split(b"\n")
        yield list(map(orjson.loads, lines)), list(map(len, lines))


def _chunk_ranges(data: bytes, start: int, end: int, chunk: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of each run of whole lines of about ``chunk`` bytes (newline included)
    in ``data[start:end]``: ``Tuning.decode_chunk_bytes``, split into lines at a time by the cold
    open (a copy of all of them would cost a file size). 256 KiB (about 500 entries): measured in
    CPU time against 2 MiB, the same for a session without compaction and 15% faster for one with
    compactions, whose entries before the latest compaction are then dropped sooner
    (docs/performance.md, "The cold open")."""
    while start < end:
        stop = data.rfind(b"\n", start, min(start + chunk, end)) + 1 if start + chunk < end else end
        if stop <= start:  # one line longer than a chunk
            stop = data.find(b"\n", start, end) + 1
        yield start, stop
        start = stop


def _opened(
    header: Entry,
    store: LazyStore,
    usage: UsageStatistics,
    has_assistant: bool,
    tail: bytes,
    size: int,
    slot: TitleSlot | None,
    lines: LineTable | None = None,
) -> IndexedOpen:
    """The ``IndexedOpen`` of ``store`` plus ``tail``, a last line without its newline yet (read
    leniently, as ``parse_session`` would, and kept out of the index until it is complete)."""
    index = store.index
    lazy = LazySessionIndex(store, usage, has_assistant)
    issues = index.issues()
    if tail:
        decoded = decode_after(tail)
        shift = index.covered - 1
        issues += [LineIssue(*issue_row(i, index.lines - 1, shift)) for i in decoded.issues[1:]]
        for record in decoded.records:
            store.transform(record, tail)
            lazy.add(record)
    # Only SessionManager.open consumes this LoadedSession, and it reads ``entries`` as a Sequence.
    entries = cast("list[Entry]", LazyEntries(lazy))
    loaded = LoadedSession(header, entries, None, issues, None, size, slot, index=lazy)
    return IndexedOpen(loaded, index.covered, lines)


# -- building ------------------------------------------------------------------------------------


def _build(
    data: bytes,
    decoded: DecodedFile,
    covered: int,
    version: int,
    stat: os.stat_result,
    tuning: Tuning,
) -> OffsetIndex:
    lines = data.count(b"\n", 0, covered)
    builder = IndexBuilder()
    header = (0, 0)
    numbers = decoded.line_numbers
    if not numbers or numbers[0] > lines:
        raise ComplexSession("the header line is not complete yet")
    with gc_paused():
        for number, (record, (offset, length)) in enumerate(
            zip(decoded.records, line_spans(data, numbers), strict=True)
        ):
            if numbers[number] > lines:
                break  # the last line has no newline yet: not covered
            if number == 0:
                skip = len(b"\xef\xbb\xbf") if decoded.has_bom and numbers[0] == 1 else 0
                header = (offset + skip, length - skip)
            else:
                builder.add(record, offset, length)
    issues = [issue_row(issue) for issue in decoded.issues if issue.offset < covered]
    meta = _meta(data, covered, header, builder, issues, stat, tuning, version)
    return OffsetIndex.from_builder(builder, meta)


def _meta(
    data: bytes,
    covered: int,
    header: tuple[int, int],
    builder: IndexBuilder,
    issues: list[list[Any]],
    stat: os.stat_result,
    tuning: Tuning,
    version: int = CURRENT_VERSION,
    lines: int | None = None,
    crc: _PrefixCrc | None = None,
) -> dict[str, Any]:
    # The file-level part of a new index of ``data[:covered]`` (the header line at ``header``),
    # ``lines`` its number of lines when the caller has counted them, ``crc`` its CRC-32 when
    # the caller has it under way.
    markers = Markers.of(data, covered)
    return {
        "covered": covered,
        "lines": data.count(b"\n", 0, covered) if lines is None else lines,
        "header": list(header),
        "fingerprint": fingerprint(
            lambda n, at: data[at : at + n], covered, data[header[0] : sum(header)], tuning
        ),
        "markers": markers.to_list(),
        # The lines a transform may change; without any marker, none (and no scan for them).
        "marked": marked_lines(
            data, 0, covered, builder.offsets, builder.lengths, 0, markers, builder.escape_lines
        )
        if markers.any
        else None,
        "issues": issues,
        "version": version,
        "file": [stat.st_dev, stat.st_ino],
        "complex": None,
        **file_state(stat, (crc or _PrefixCrc(data, covered)).result(), tuning),
    }


class _PrefixCrc:
    """The CRC-32 of ``data[:covered]`` (the index's ``prefix_crc``), computed on a thread of its
    own when ``background``: ``zlib.crc32`` releases the GIL, so on a second core it runs while the
    scan does (13 ms of a 50 MB cold open's wall time otherwise). The same call either way."""

    def __init__(self, data: bytes, covered: int, background: bool = False) -> None:
        self._view = memoryview(data)[:covered]
        self._value: int | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._compute, name="omp-session-crc", daemon=True)
            self._thread.start()

    def _compute(self) -> None:
        self._value = zlib.crc32(self._view)

    def result(self) -> int:
        if self._thread is not None:
            self._thread.join()
        elif self._value is None:
            self._compute()
        assert self._value is not None
        self._view.release()
        return self._value


def remember_index(path: Path, data: bytes, loaded: LoadedSession, tuning: Tuning = DEFAULT_TUNING) -> None:
    """After a full load of ``data``, store an offset index for the next ``open`` (best effort)."""
    covered = data.rfind(b"\n") + 1
    decoded = loaded.decoded
    if len(data) < tuning.min_indexed_bytes or decoded is None or covered == 0:
        return
    version = header_version(loaded.header)
    if loaded.migrated_from is not None or version < CURRENT_VERSION:
        return  # the first write rewrites the file anyway
    try:
        stat = os.stat(path)
    except OSError:
        return
    if stat.st_size != len(data):
        return  # changed since it was read: this index would describe the wrong file
    existing = read_index(path)
    if existing is not None and existing.meta.get("complex") and existing.covered == covered:
        return  # known not to be indexable: building again would find the same
    try:
        index = _build(data, decoded, covered, version, stat, tuning)
    except ComplexSession as exc:
        index = OffsetIndex.from_builder(IndexBuilder(), {"covered": covered, "complex": str(exc)})
    except (OverflowError, ValueError):
        return  # beyond the format (a line over 4 GB): such a file is simply loaded in full
    write_index(path, index)
