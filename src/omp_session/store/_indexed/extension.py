"""Extending a stored offset index over the lines appended since it was written (another
program, omp itself, appended): only the new lines are decoded and indexed, and the stored ids
stay in the stored id column (``StoredIdPositions``).

Internal module (part of ``SessionManager.open``, ``fast_open.py``); not part of the public API.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

from omp_session.format.codec import DecodedFile, LineIssue, decode_lines
from omp_session.gcpause import gc_paused
from omp_session.model.usage import UsageStatistics
from omp_session.store._indexed.builder import ComplexSession, IndexBuilder, State, line_spans
from omp_session.store._indexed.markers import Markers, marked_lines
from omp_session.store._indexed.offsets import OffsetIndex, file_state, fingerprint, write_index
from omp_session.store._indexed.stored_ids import StoredIdPositions
from omp_session.store.tuning import Tuning

__all__ = ["decode_after", "extend_index", "issue_row"]


def issue_row(issue: LineIssue, line_shift: int = 0, offset_shift: int = 0) -> list[Any]:
    return [issue.line + line_shift, issue.offset + offset_shift, issue.reason, issue.skipped, issue.preview]


def _builder_from(index: OffsetIndex) -> IndexBuilder:
    """A builder that goes on after ``index``'s entries: their columns copied, their ids left in
    the stored id column (``StoredIdPositions``, ``OffsetIndex.extended``)."""
    builder = IndexBuilder()
    builder.offsets, builder.lengths = list(index.offsets), list(index.lengths)
    builder.parents, builder.state_ids = list(index.parents), list(index.state_ids)
    builder.defaults = list(index.defaults)
    builder.base = len(index)
    builder.states = [State.from_json(part) for part in index.state_blob.split(b"\n")]
    builder._state_numbers = {state: number for number, state in enumerate(builder.states)}
    builder.id_positions = StoredIdPositions(index)
    meta = index.meta
    builder.dangling, builder.labels = set(meta["dangling"]), list(meta["labels"])
    builder.kept = {int(c): int(k) for c, k in meta["kept"]}
    builder.usage = UsageStatistics.from_state(json.loads(meta["usage"]))
    builder.has_assistant = bool(meta["has_assistant"])
    return builder


def decode_after(data: bytes) -> DecodedFile:
    # A leading blank line keeps decode_lines from taking a BOM in ``data`` as the file's own BOM;
    # its BLANK issue (always the first) is dropped by the callers.
    return decode_lines(b"\n" + data)


def _marked_after(
    marked: list[int] | None, chunk: bytes, builder: IndexBuilder, base: int
) -> list[int] | None:
    # The marked lines of the index extended by ``chunk``; ``None`` stays ``None`` (see LazyStore).
    if marked is None:
        return None
    return marked + marked_lines(b"\n" + chunk, 1, len(chunk) + 1, builder.offsets, builder.lengths, base)


def extend_index(
    path: Path,
    index: OffsetIndex,
    chunk: bytes,
    fd: int,
    header_line: bytes,
    stat: os.stat_result,
    tuning: Tuning,
) -> OffsetIndex:
    """Index the complete lines appended since ``index`` was written; store and return it."""
    decoded = decode_after(chunk)
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
    issues = index.meta["issues"] + [issue_row(i, index.lines - 1, base) for i in decoded.issues[1:]]
    markers = Markers(*index.meta["markers"]).merged(Markers.of(chunk))
    meta = {
        **{key: index.meta[key] for key in ("header", "version", "file")},
        "covered": covered,
        "lines": index.lines + chunk.count(b"\n"),
        "fingerprint": fingerprint(lambda n, at: os.pread(fd, n, at), covered, header_line, tuning),
        "markers": markers.to_list(),
        "marked": _marked_after(index.meta["marked"], chunk, builder, base),
        "issues": issues,
        "complex": None,
        # The prefix CRC carried on over the appended lines (the covered part was just verified).
        **file_state(stat, zlib.crc32(chunk, index.meta["prefix_crc"]), tuning),
    }
    extended = OffsetIndex.extended(index, builder, meta)
    write_index(path, extended)
    return extended
