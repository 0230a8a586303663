"""Lenient, streaming reading of another agent's JSONL transcript (spec importers §0).

Lines are split on LF only (a CR before the LF stays and JSON ignores it as whitespace), so the
physical line numbers match omp's. A line that is blank, not JSON, or JSON that is not an object is
skipped and *counted* (omp skips silently; we report it: docs/importers.md, "Diagnostics"). The
file is read in chunks, never modified, and never held in memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from omp_session.format.codec import decode_line

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
    remaining = limit
    with open(path, "rb") as handle:
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
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            if stats is not None:
                stats.end_offset = offset - len(pending)
            yield from parts
        if stats is not None:
            stats.end_offset = offset - len(pending)
            stats.torn_tail = bool(pending)
        if pending:
            yield pending


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
    for line in iter_lines(path, limit, start, stats):
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
        if raw is not None and raw[-1:] in _TRAILING_SPACE:
            raw = raw.rstrip()  # a CR before the LF (or other JSON whitespace) stays out of the copy
        if stats is not None:
            stats.records += 1
        yield number, value, raw
    if stats is not None:
        stats.lines = number


def lines_containing(path: str | Path, needle: bytes) -> Iterator[bytes]:
    """The lines holding ``needle``, the last first, read backwards in chunks (bounded memory, no
    mapping of the whole file into the process): a few records found without parsing the rest."""
    with open(path, "rb") as handle:
        position = handle.seek(0, 2)
        carry = b""  # the start of the line the previous (later) chunk began in the middle of
        while position > 0:
            start = max(0, position - _CHUNK)
            handle.seek(start)
            data = handle.read(position - start) + carry
            carry = b""
            if start > 0:  # the first line may begin in the chunk before: finish it there
                cut = data.find(b"\n")
                if cut < 0:
                    carry, position = data, start
                    continue
                carry, data = data[:cut], data[cut + 1 :]
            end = len(data)
            while (found := data.rfind(needle, 0, end)) >= 0:
                line_start = data.rfind(b"\n", 0, found) + 1
                line_end = data.find(b"\n", found)
                yield data[line_start : line_end if line_end >= 0 else len(data)]
                end = line_start
            position = start


def complete_length(path: str | Path) -> int:
    """The file's size up to and including its last LF (a line still being written excluded)."""
    with open(path, "rb") as handle:
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
    except OSError:
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
