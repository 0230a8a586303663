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

_CHUNK = 1 << 20


@dataclass
class ReadStats:
    """What a read skipped: physical line numbers of unreadable lines (blank lines are not listed)."""

    lines: int = 0
    records: int = 0
    skipped_lines: list[int] = field(default_factory=list)


def _decode(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses invalid UTF-8; JS decodes it to U+FFFD first and then parses.
        text = line.decode("utf-8", errors="replace")
        return orjson.loads(text.encode("utf-8"))


def iter_lines(path: str | Path, limit: int | None = None) -> Iterator[bytes]:
    """The file's LF-separated lines (without the LF); a torn last line is yielded too.

    ``limit`` stops after that many bytes (a listing reads a bounded prefix, spec §1.1).
    """
    remaining = limit
    with open(path, "rb") as handle:
        pending = b""
        while True:
            size = _CHUNK if remaining is None else min(_CHUNK, remaining)
            chunk = handle.read(size) if size > 0 else b""
            if remaining is not None:
                remaining -= len(chunk)
            if not chunk:
                break
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            yield from parts
        if pending:
            yield pending


def iter_records(
    path: str | Path, stats: ReadStats | None = None, limit: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(physical line number, record)`` for every line that parses to a JSON object."""
    number = 0
    for line in iter_lines(path, limit):
        number += 1
        value: Any = None
        if line.strip():
            try:
                value = _decode(line)
            except orjson.JSONDecodeError:
                value = None
            if not isinstance(value, dict) and stats is not None:
                stats.skipped_lines.append(number)
        if isinstance(value, dict):
            if stats is not None:
                stats.records += 1
            yield number, value
    if stats is not None:
        stats.lines = number


def first_record(path: str | Path) -> dict[str, Any] | None:
    """The first readable record of a file, or ``None`` (a missing file included)."""
    try:
        for _, record in iter_records(path):
            return record
    except OSError:
        return None
    return None


__all__ = ["ReadStats", "first_record", "iter_lines", "iter_records"]
