"""The fast path of ``SessionManager.open``: open a large session through its offset index.

``open_indexed`` returns ``None`` whenever it cannot serve the file exactly (no index, a stale or
damaged one, a file that needs migration or has a shape the index does not model); the manager
then loads the file in full as before and ``remember_index`` writes a fresh index for next time.
The helpers at the end let the manager treat a lazily loaded session like a loaded one.

Internal module (part of ``SessionManager.open``); not part of the public API.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import orjson

from omp_session.dialects import OMP_13_19, ContextRules
from omp_session.errors import CorruptSessionError, SessionChangedError
from omp_session.format.codec import DecodedFile, LineIssue, decode_lines
from omp_session.format.entries import CURRENT_VERSION, is_assistant_entry
from omp_session.format.migrate import header_version
from omp_session.format.title_slot import fold_into_header, split_slot
from omp_session.gcpause import gc_paused
from omp_session.model.context import SessionContext, context_from_path
from omp_session.model.tree import SessionIndex
from omp_session.model.usage import UsageStatistics
from omp_session.store import offset_index
from omp_session.store.file import FileStorage
from omp_session.store.index_builder import ComplexSession, IndexBuilder, State, line_spans
from omp_session.store.lazy_index import LazyEntries, LazySessionIndex
from omp_session.store.lazy_store import LazyStore, Markers, StaleIndex, marked_lines
from omp_session.store.loading import LoadedSession, is_session_header
from omp_session.store.offset_index import OffsetIndex, fingerprint, read_index, write_index
from omp_session.store.regular import open_regular

__all__ = [
    "IndexedOpen",
    "context_at",
    "has_assistant",
    "index_for",
    "open_indexed",
    "remember_index",
    "usage_of",
]

Entry = dict[str, Any]
_FALLBACK = (
    OverflowError,
    StaleIndex,
    ComplexSession,
    SessionChangedError,
    OSError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
)


class IndexedOpen(NamedTuple):
    """A session opened through its index: what ``parse_session`` would give, and the offset of
    the first byte after the last complete line (where ``refresh`` continues)."""

    loaded: LoadedSession
    read_offset: int


# -- building ------------------------------------------------------------------------------------


def _issue_row(issue: LineIssue, line_shift: int = 0, offset_shift: int = 0) -> list[Any]:
    return [issue.line + line_shift, issue.offset + offset_shift, issue.reason, issue.skipped, issue.preview]


def _build(
    data: bytes,
    decoded: DecodedFile,
    covered: int,
    version: int,
    usage: UsageStatistics | None,
    file_id: list[int],
) -> OffsetIndex:
    lines = data.count(b"\n", 0, covered)
    builder = IndexBuilder(usage)
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
    meta = {
        "covered": covered,
        "lines": lines,
        "header": list(header),
        "fingerprint": fingerprint(lambda n, at: data[at : at + n], covered, data[header[0] : sum(header)]),
        "markers": Markers.of(data, covered).to_list(),
        "marked": marked_lines(data, 0, covered, builder.offsets, builder.lengths, 0),
        "issues": [_issue_row(issue) for issue in decoded.issues if issue.offset < covered],
        "version": version,
        "file": file_id,
        "complex": None,
    }
    return OffsetIndex.from_builder(builder, meta)


def remember_index(path: Path, data: bytes, loaded: LoadedSession, usage: UsageStatistics) -> None:
    """After a full load of ``data``, store an offset index for the next ``open`` (best effort).

    ``usage`` is the usage total of the loaded entries (the manager has just added it up)."""
    covered = data.rfind(b"\n") + 1
    decoded = loaded.decoded
    if len(data) < offset_index.MIN_INDEXED_BYTES or decoded is None or covered == 0:
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
        # The totals cover the whole file; a last line without newline is not covered: count again.
        counted = usage.copy() if covered == len(data) else None
        index = _build(data, decoded, covered, version, counted, [stat.st_dev, stat.st_ino])
    except ComplexSession as exc:
        index = OffsetIndex.from_builder(IndexBuilder(), {"covered": covered, "complex": str(exc)})
    except (OverflowError, ValueError):
        return  # beyond the format (a line over 4 GB): such a file is simply loaded in full
    write_index(path, index)


def _builder_from(index: OffsetIndex) -> IndexBuilder:
    builder = IndexBuilder()
    builder.offsets, builder.lengths = list(index.offsets), list(index.lengths)
    builder.parents, builder.state_ids = list(index.parents), list(index.state_ids)
    builder.defaults = list(index.defaults)
    builder.ids = index.all_ids()
    ends = index.id_ends
    builder.id_sizes = [ends[p] - (ends[p - 1] + 1 if p else 0) for p in range(len(index))]
    builder.states = [State.from_json(part) for part in index.state_blob.split(b"\n")]
    builder._state_numbers = {state: number for number, state in enumerate(builder.states)}
    positions: dict[Any, int] = dict(zip(builder.ids, range(len(index)), strict=True))
    positions.pop(None, None)
    builder.id_positions = positions
    meta = index.meta
    builder.dangling, builder.labels = set(meta["dangling"]), list(meta["labels"])
    builder.kept = {int(c): int(k) for c, k in meta["kept"]}
    builder.usage = UsageStatistics.from_state(json.loads(meta["usage"]))
    builder.has_assistant = bool(meta["has_assistant"])
    return builder


def _decode_after(data: bytes) -> DecodedFile:
    # A leading blank line keeps decode_lines from taking a BOM in ``data`` as the file's own BOM;
    # its BLANK issue (always the first) is dropped by the callers.
    return decode_lines(b"\n" + data)


def _extend(path: Path, index: OffsetIndex, chunk: bytes, fd: int, header_line: bytes) -> OffsetIndex:
    """Index the complete lines appended since ``index`` was written; store and return it."""
    decoded = _decode_after(chunk)
    base = index.covered - 1
    builder = _builder_from(index)
    try:
        with gc_paused():
            spans = line_spans(b"\n" + chunk, decoded.line_numbers)
            for record, (offset, length) in zip(decoded.records, spans, strict=True):
                builder.add(record, base + offset, length)
    except ComplexSession as exc:
        write_index(path, OffsetIndex.from_builder(IndexBuilder(), {"covered": 0, "complex": str(exc)}))
        raise
    covered = index.covered + len(chunk)
    issues = index.meta["issues"] + [_issue_row(i, index.lines - 1, base) for i in decoded.issues[1:]]
    markers = Markers(*index.meta["markers"]).merged(Markers.of(chunk))
    meta = {
        **{key: index.meta[key] for key in ("header", "version", "file")},
        "covered": covered,
        "lines": index.lines + chunk.count(b"\n"),
        "fingerprint": fingerprint(lambda n, at: os.pread(fd, n, at), covered, header_line),
        "markers": markers.to_list(),
        "marked": index.meta["marked"]
        + marked_lines(b"\n" + chunk, 1, len(chunk) + 1, builder.offsets, builder.lengths, base),
        "issues": issues,
        "complex": None,
    }
    extended = OffsetIndex.from_builder(builder, meta)
    write_index(path, extended)
    return extended


# -- opening -------------------------------------------------------------------------------------


def open_indexed(path: Path, storage: FileStorage) -> IndexedOpen | None:
    """Open ``path`` through its offset index, or ``None`` to say "load it in full"."""
    try:
        if os.stat(path).st_size < offset_index.MIN_INDEXED_BYTES:
            return None
        index = read_index(path)
        if index is None or index.meta.get("complex") or index.meta.get("version", 0) < CURRENT_VERSION:
            return None
        fd = open_regular(path)
    except (OSError, CorruptSessionError):
        return None
    holder: list[LazyStore] = []
    try:
        opened = _open_with(path, fd, index, storage, holder)
    except _FALLBACK:
        opened = None
    except BaseException:
        holder[0].close() if holder else os.close(fd)
        raise
    if opened is None:
        holder[0].close() if holder else os.close(fd)
    return opened


def _open_with(
    path: Path, fd: int, index: OffsetIndex, storage: FileStorage, holder: list[LazyStore]
) -> IndexedOpen:
    stat = os.fstat(fd)
    covered = index.covered
    header_offset, header_length = index.header_span
    header_line = os.pread(fd, header_length, header_offset)
    if [stat.st_dev, stat.st_ino] != index.meta.get("file"):
        raise StaleIndex("another file at this path (replaced by a rewrite)")
    if stat.st_size < covered or fingerprint(
        lambda n, at: os.pread(fd, n, at), covered, header_line
    ) != index.meta.get("fingerprint"):
        raise StaleIndex("the file changed")
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
        index = _extend(path, index, rest[:cut], fd, header_line)
    tail = rest[cut:]
    markers = Markers(*index.meta["markers"]).merged(Markers.of(tail))
    store = LazyStore(path, fd, index, storage.blobs, markers)
    holder.append(store)
    lazy = LazySessionIndex(store)
    usage = UsageStatistics.from_state(json.loads(index.meta["usage"]))
    has_assistant = bool(index.meta["has_assistant"])
    issues = index.issues()
    if tail:
        decoded = _decode_after(tail)
        issues += [LineIssue(*_issue_row(i, index.lines - 1, covered + cut - 1)) for i in decoded.issues[1:]]
        for record in decoded.records:
            store.transform(record, tail)
            lazy.add(record)
            usage.add_entry(record)
            has_assistant = has_assistant or is_assistant_entry(record)
    # FileStorage.read() records what it read, to refuse rewrites over someone else's changes;
    # we read through our own descriptor, so record the same state it would have.
    storage.adopt_read_state(stat)
    # Only SessionManager.open consumes this LoadedSession, and it reads ``entries`` as a Sequence.
    entries = cast("list[Entry]", LazyEntries(lazy, usage, has_assistant))
    loaded = LoadedSession(header, entries, None, issues, None, stat.st_size, slot)
    return IndexedOpen(loaded, covered + cut)


# -- the manager's view of a loaded session ------------------------------------------------------


def index_for(entries: Sequence[Entry]) -> SessionIndex | LazySessionIndex:
    """The index a manager keeps: the lazy one of a lazily opened file, else a ``SessionIndex``."""
    if isinstance(entries, LazyEntries):
        return entries.lazy_index
    with gc_paused():  # right after a load: the collector would walk every new entry (gcpause.py)
        return SessionIndex(entries)


def usage_of(entries: Sequence[Entry]) -> UsageStatistics:
    """Usage totals over ``entries`` (without reading them for a lazily opened file)."""
    if isinstance(entries, LazyEntries):
        return entries.usage.copy()
    with gc_paused():
        return UsageStatistics.of(entries)


def has_assistant(entries: Sequence[Entry]) -> bool:
    """Whether any entry is an assistant message (spec §7.2)."""
    if isinstance(entries, LazyEntries):
        return entries.has_assistant
    return any(is_assistant_entry(entry) for entry in entries)


def context_at(
    index: SessionIndex | LazySessionIndex, leaf_id: str, rules: ContextRules = OMP_13_19.context
) -> SessionContext:
    """``context_from_path(index.branch(leaf_id))``, reading as little as possible.

    The offset index precomputes the state scan of rules that only replay state; other rules
    (omp 18's reset boundaries and filters) read the whole path."""
    if isinstance(index, LazySessionIndex) and not rules.needs_full_path:
        return index.context(leaf_id)
    return context_from_path(index.branch(leaf_id), rules=rules)
