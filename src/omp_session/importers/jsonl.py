"""Lenient, streaming reading of another agent's JSONL transcript (spec importers §0).

Lines are split on LF only (a CR before the LF stays and JSON ignores it as whitespace), so the
physical line numbers match omp's. A line that is blank, not JSON, or JSON that is not an object is
skipped and *counted* (omp skips silently; we report it: docs/importers.md, "Diagnostics"). The
file is read in chunks, never modified, and never held in memory whole.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import decode_line
from omp_session.store.regular import regular_file
from omp_session.store.tuning import DEFAULT_TUNING

_CHUNK = 1 << 20
_TRAILING_SPACE = (b" ", b"\r", b"\t")


@dataclass
class ReadStats:
    """What a read skipped: physical line numbers of unreadable lines (blank lines are not listed)."""

    lines: int = 0
    records: int = 0
    skipped_lines: list[int] = field(default_factory=list)
    #: Byte offset just past the last LF read: where a later read of the grown file resumes.
    end_offset: int = 0
    #: Whether the file ended in a line without LF (still being written, or torn).
    torn_tail: bool = False


def iter_lines(
    path: str | Path, limit: int | None = None, start: int = 0, stats: ReadStats | None = None
) -> Iterator[bytes]:
    """The file's LF-separated lines (without the LF); a torn last line is yielded too.

    ``limit`` stops after that many bytes (a listing reads a bounded prefix, spec §1.1); ``start``
    is the byte offset of the first line to read (an update resuming where an import stopped).
    """
    for batch in _line_batches(path, limit, start, stats):
        yield from batch


def _line_batches(
    path: str | Path, limit: int | None, start: int, stats: ReadStats | None
) -> Iterator[list[bytes]]:
    """:func:`iter_lines` a chunk at a time: the lines completed by each chunk read."""
    remaining = limit
    with regular_file(path) as handle:  # the special-file rule: a FIFO never blocks an import
        if start:
            handle.seek(start)
        pending = b""
        offset = start
        while True:
            size = _CHUNK if remaining is None else min(_CHUNK, remaining)
            chunk = handle.read(size) if size > 0 else b""
            if remaining is not None:
                remaining -= len(chunk)
            if not chunk:
                break
            offset += len(chunk)
            parts = chunk.split(b"\n")
            if pending:  # the line the last chunk ended in: joined alone, not the whole chunk
                parts[0] = pending + parts[0]
            pending = parts.pop()
            if stats is not None:
                stats.end_offset = offset - len(pending)
            yield parts
        if stats is not None:
            stats.end_offset = offset - len(pending)
            stats.torn_tail = bool(pending)
        if pending:
            yield [pending]


def iter_records(
    path: str | Path, stats: ReadStats | None = None, limit: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(physical line number, record)`` for every line that parses to a JSON object."""
    for number, record, _ in iter_raw_records(path, stats, limit):
        yield number, record


def iter_raw_records(
    path: str | Path,
    stats: ReadStats | None = None,
    limit: int | None = None,
    *,
    start: int = 0,
    first_line: int = 1,
) -> Iterator[tuple[int, dict[str, Any], bytes | None]]:
    """``(line number, record, raw)``: ``raw`` is the line's own bytes when they are already
    valid, strict JSON that a writer may embed verbatim (an ``orjson.Fragment``), else ``None``.

    A line orjson refuses but JavaScript reads (invalid UTF-8 decoded as U+FFFD, a lone surrogate
    escape, an integer beyond 64 bits) is still read, through :func:`decode_line`; only its bytes
    are not reusable. Hot loop: one call per line, nothing else (issue 15, the import speed goal).
    """
    number = first_line - 1
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    skipped = stats.skipped_lines if stats is not None else []
    for batch in _line_batches(path, limit, start, stats):
        for line in batch:
            number += 1
            raw: bytes | None = line
            try:
                value = loads(line)
            except decode_error:
                raw = None
                try:
                    value = decode_line(line) if line.strip() else None
                except ValueError:
                    value = None
                if value is None and not line.strip():
                    continue  # a blank line: skipped, not listed
            if type(value) is not dict:
                skipped.append(number)
                continue
            if raw is not None and raw.endswith(_TRAILING_SPACE):
                raw = raw.rstrip()  # a CR before the LF (or other JSON whitespace) stays out of the copy
            if stats is not None:
                stats.records += 1
            yield number, value, raw
    if stats is not None:
        stats.lines = number


def lines_containing(
    path: str | Path,
    needle: bytes,
    last_bytes: int | None = None,
    *,
    window: int = DEFAULT_TUNING.search_window_bytes,
) -> Iterator[bytes]:
    """The lines holding ``needle``, the last first: a few records found without parsing the rest.

    The file is searched backwards through a memory map, one window at a time; each window's
    pages are released once searched, so the process never holds more than a window of the file
    (a whole-file mapping would count every page of it in the process's memory). ``last_bytes``
    searches only that much of the file's end (a match there is still yielded as its whole line);
    ``window``: the bytes mapped at once (``Tuning.search_window_bytes``).
    """
    with regular_file(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return
        bottom = 0 if last_bytes is None else max(0, size - last_bytes)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            end, window = size, max(window, 2 * len(needle))  # each step moves back
            while end > bottom:
                start = max(bottom, end - window)
                found = view.rfind(needle, start, end)
                if found < 0:
                    _release(view, start, end)
                    # the next window overlaps this one by the needle's length minus one byte
                    end = start + len(needle) - 1 if start > bottom else bottom
                    continue
                line_start = view.rfind(b"\n", 0, found) + 1
                line_end = view.find(b"\n", found)
                yield view[line_start : line_end if line_end >= 0 else size]
                _release(view, line_start, end)
                end = line_start


def _release(view: mmap.mmap, start: int, end: int) -> None:
    """Drop the searched pages from the process (they stay in the page cache)."""
    if hasattr(mmap, "MADV_DONTNEED") and end > start:
        aligned = start - start % mmap.PAGESIZE
        view.madvise(mmap.MADV_DONTNEED, aligned, end - aligned)


def complete_length(path: str | Path) -> int:
    """The file's size up to and including its last LF (a line still being written excluded)."""
    with regular_file(path) as handle:
        end = handle.seek(0, 2)
        while end > 0:
            start = max(0, end - _CHUNK)
            handle.seek(start)
            found = handle.read(end - start).rfind(b"\n")
            if found >= 0:
                return start + found + 1
            end = start
    return 0


def first_record(path: str | Path) -> dict[str, Any] | None:
    """The first readable record of a file, or ``None`` (a missing file included)."""
    try:
        for _, record in iter_records(path):
            return record
    except (OSError, CorruptSessionError):  # missing, unreadable, or not a regular file
        return None
    return None


__all__ = [
    "ReadStats",
    "complete_length",
    "first_record",
    "iter_lines",
    "iter_raw_records",
    "iter_records",
    "lines_containing",
]
