"""Check a session file without writing it (docs/durability.md, "Check and repair").

``check(path)`` reports what is wrong with a file as :class:`Problem` items, each naming its line:
lines that cannot be read, a damaged header or title slot, and the entry problems the collector of
:mod:`omp_session.tools.check_stream` finds (duplicate and missing ids, orphans, cycles, tool calls
and results that do not pair up). A file over ``STREAM_ABOVE_BYTES`` is decoded a chunk at a time.
Beyond ``SPILL_ABOVE_BYTES`` the collector's columns live in temporary files instead of memory
(:mod:`omp_session.tools.columns`), so the memory of ``check`` no longer grows with the file.
What omp itself writes in normal use (an older version, the tool calls of a turn that ended in an
error) is reported as information, never as damage, so ``check`` and ``repair`` agree.

The public names are also reachable as ``omp_session.tools.repair.check`` and ``Problem``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import (
    BLANK,
    NOT_OBJECT,
    TORN,
    DecodedFile,
    LineIssue,
    decode_lines,
)
from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.header import header_problem_line, peel_title_slot
from omp_session.format.migrate import header_version, migrate_records
from omp_session.format.title_slot import SLOT_BYTES, SLOT_TYPE, TITLE_SOURCES
from omp_session.store import SessionStorage
from omp_session.store.loading import read_session_bytes
from omp_session.store.regular import open_regular
from omp_session.tools.check_stream import EntryCollector, ToolIssue
from omp_session.tools.columns import ColumnStore

__all__ = ["SPILL_ABOVE_BYTES", "SPILL_ABOVE_VARIABLE", "STREAM_ABOVE_BYTES", "Problem", "check"]

Entry = dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a session file."""

    kind: str
    line: int | None
    entry_id: str | None
    message: str
    #: ``"problem"``, or ``"info"`` for what omp itself writes in normal use (an older version, the
    #: tool calls of a turn that ended in an error): reported, never counted as damage (item 13).
    severity: str = "problem"

    @property
    def is_problem(self) -> bool:
        return self.severity == "problem"

    def describe(self) -> str:
        where = f"line {self.line}" if self.line is not None else "file"
        return f"{where}: {self.kind}: {self.message}"


def _line_problems(decoded: DecodedFile) -> list[Problem]:
    problems = []
    if decoded.has_bom:
        problems.append(
            Problem("bom", 1, None, "the file starts with a UTF-8 byte order mark, which omp cannot read")
        )
    for issue in decoded.issues:
        if issue.reason == BLANK:
            continue
        kind = {TORN: "torn-tail", NOT_OBJECT: "not-object"}.get(issue.reason, "malformed-line")
        if not issue.skipped:
            kind = "invalid-utf8"
        problems.append(Problem(kind, issue.line, None, f"{issue.reason}: {issue.preview!r}"))
    return problems


def _entry_problems(records: list[Entry], line_of: dict[int, int], store: ColumnStore) -> list[Problem]:
    # One set of entry checks for a whole read and a streamed one (tools/check_stream.py).
    collector = EntryCollector(store=store)
    for position, entry in enumerate(records[1:], start=1):
        collector.add(entry, line_of.get(position, 0))
    return _collected_problems(collector)


def _collected_problems(collector: EntryCollector) -> list[Problem]:
    problems = [Problem(*found) for found in collector.id_problems]
    roots = collector.cycle_roots()
    problems += [Problem(*found) for found in collector.link_problems(roots)]
    tool_problems = [
        _tool_problem(issue, collector.line_of_id(issue.entry_id), issue.ended_in_error)
        for issue in collector.tool_issues(roots)
    ]
    return problems + sorted(tool_problems, key=_tool_problem_order)


def _tool_problem(unpaired: ToolIssue, line: int | None, errored: bool) -> Problem:
    what = (
        f"tool call {unpaired.tool_call_id} ({unpaired.tool_name}) has no result on a branch below it"
        if unpaired.kind == "call-without-result"
        else f"tool result for {unpaired.tool_call_id} has no matching call before it on its branch"
    )
    severity = "info" if errored else "problem"
    return Problem(f"tool-{unpaired.kind}", line, unpaired.entry_id, what, severity)


def _tool_problem_order(problem: Problem) -> tuple[int, str, str]:
    # By line: the walk's order depends on sibling order, which a streamed check does not keep.
    return (problem.line or 0, problem.kind, problem.message)


#: Files above this size are checked in chunks (item 14): what stays in memory is each id once and
#: a few integers per entry (tools/check_stream.py), not the entries.
STREAM_ABOVE_BYTES = 32 * 1024 * 1024
_CHUNK_BYTES = 2 * 1024 * 1024  # decoded, a chunk's entries are ~10× its size: kept small
# Spilled, the decoded chunk is most of what remains in memory: 2 MB chunks of small entries
# peaked at 81 MB, 256 KiB ones at 41 MB, for a CPU cost within the noise (docs/durability.md).
_SPILLED_CHUNK_BYTES = 256 * 1024
#: Files above this size keep the collector's columns in temporary files (item 14): the memory of
#: ``check`` then stays the same however large the file (docs/durability.md). Below it the columns
#: (about 90 bytes an entry, 6 MB at this size) cost less than the trims of a spilled store.
SPILL_ABOVE_BYTES = 64 * 1024 * 1024
#: The environment variable that overrides :data:`SPILL_ABOVE_BYTES` (a number of bytes; ``0``
#: spills every file): for tests, and for machines short of memory.
SPILL_ABOVE_VARIABLE = "OMP_SESSION_CHECK_SPILL_ABOVE"


def _spill_above() -> int:
    value = os.environ.get(SPILL_ABOVE_VARIABLE, "").strip()
    try:
        return int(value) if value else SPILL_ABOVE_BYTES
    except ValueError:  # a setting that is not a number is ignored, as an unset one
        return SPILL_ABOVE_BYTES


def check(
    path: Path | str,
    *,
    chunk_bytes: int | None = None,
    spill: bool | None = None,
    storage: SessionStorage | None = None,
) -> list[Problem]:
    """Every problem found in ``path``; never writes. Unusable paths raise ``CorruptSessionError``.

    A file over :data:`STREAM_ABOVE_BYTES` (or any file, with ``chunk_bytes``) is read in chunks
    and keeps only what the checks need of each entry; one over :data:`SPILL_ABOVE_BYTES` (or
    ``$OMP_SESSION_CHECK_SPILL_ABOVE``; or any file, with ``spill=True``) keeps that in temporary
    files, deleted before this returns or raises. The result is the same either way. A session of a
    database ``storage`` is checked from its row's bytes."""
    path = Path(path)
    if storage is not None:
        with ColumnStore(spill=bool(spill)) as store:
            return _from_bytes(storage.read_session(path), store)
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # (opening it below raises the error this deserves)
    if spill is None:
        spill = size > _spill_above()
    if chunk_bytes is None and size > STREAM_ABOVE_BYTES:
        chunk_bytes = _SPILLED_CHUNK_BYTES if spill else _CHUNK_BYTES
    with ColumnStore(spill=spill) as store:
        if chunk_bytes is not None:
            streamed = _check_in_chunks(path, chunk_bytes, store)
            if streamed is not None:
                return streamed
        return _from_bytes(read_session_bytes(path), store)


def _from_bytes(data: bytes, store: ColumnStore) -> list[Problem]:
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)  # omp 18's first line, folded into the header
    slot_size = data.find(b"\n") + 1
    slot_problem = _slot_problem(slot_size) if slot is not None and slot_size != SLOT_BYTES else None
    return _problems_of(decoded, slot_problem, store)


def _slot_problem(slot_size: int) -> Problem:
    return Problem(
        "title-slot",
        1,
        None,
        f"title slot is {slot_size} bytes, not {SLOT_BYTES}: omp 18 would overwrite the header "
        "line when it renames the session",
    )


def _header_message(decoded: DecodedFile, line: int) -> str:
    """Why the file does not start with a session header. A first line that is a title line omp 18
    does not accept as its slot (issue 30: an unknown ``source``, the header on line 2) is named as
    such: "the first line is not a session header" alone sent the reader looking at line 2."""
    first = decoded.records[0] if decoded.records and decoded.line_numbers[0] == line else None
    if isinstance(first, dict) and first.get("type") == SLOT_TYPE:
        source = first.get("source")
        why = (
            f"its source {source!r} is not one of {', '.join(repr(s) for s in TITLE_SOURCES)}"
            if "source" in first and source not in TITLE_SOURCES
            else 'it lacks a slot\'s fields ("v": 1, "title", "updatedAt", "pad")'
        )
        return (
            f"line {line} is a title line that is not an omp 18 title slot ({why}), "
            "so the file does not start with a session header"
        )
    return "the first line is not a session header"


def _problems_of(decoded: DecodedFile, slot_problem: Problem | None, store: ColumnStore) -> list[Problem]:
    problems = _line_problems(decoded)
    if slot_problem is not None:
        problems.insert(0, slot_problem)
    bad_header = header_problem_line(decoded)
    if bad_header is not None:  # the same rule as open(): it would refuse this file
        problems.insert(0, Problem("header", bad_header, None, _header_message(decoded, bad_header)))
        return problems
    version = header_version(decoded.records[0])
    if version < CURRENT_VERSION:
        problems.append(
            Problem(
                "old-version",
                decoded.line_numbers[0],
                None,
                f"version {version}; current is 3 (omp upgrades it on its next write; `migrate` does it now)",
                "info",
            )
        )
    records = decoded.records
    migrate_records(records)  # in memory only; stable ids: the same ones every tool shows
    line_of = {position: decoded.line_numbers[position] for position in range(1, len(records))}
    return problems + _entry_problems(records, line_of, store)


def _chunks(path: Path, chunk_bytes: int) -> Iterator[bytes]:
    """The file in pieces that end after a newline (the last one may not)."""
    try:
        handle = os.fdopen(open_regular(path), "rb")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CorruptSessionError(path, f"cannot be read: {exc.strerror or exc}") from exc
    with handle:
        pending = b""
        while block := handle.read(chunk_bytes):
            pending += block
            cut = pending.rfind(b"\n") + 1
            if cut:
                yield pending[:cut]
                pending = pending[cut:]
        if pending:
            yield pending


def _check_in_chunks(path: Path, chunk_bytes: int, store: ColumnStore) -> list[Problem] | None:
    """:func:`check` reading ``chunk_bytes`` at a time, keeping of each entry only what the checks
    need (tools/check_stream.py); ``None`` for a file older than version 3 (its migration needs
    every record whole: checked the ordinary way)."""
    whole = DecodedFile()  # the line issues, and the records up to the header
    collector = EntryCollector(store=store)
    lines = offset = 0
    slot_problem: Problem | None = None
    header_checked = bad_header = False
    for chunk in _chunks(path, chunk_bytes):
        # A leading newline keeps a BOM inside the file from being taken for the file's own.
        part = decode_lines(chunk) if offset == 0 else decode_lines(b"\n" + chunk)
        issues = part.issues if offset == 0 else part.issues[1:]
        shift_line, shift_offset = (lines, offset) if offset == 0 else (lines - 1, offset - 1)
        if offset == 0:
            whole.has_bom = part.has_bom
        whole.ends_with_newline = part.ends_with_newline
        whole.issues += [
            LineIssue(i.line + shift_line, i.offset + shift_offset, i.reason, i.skipped, i.preview)
            for i in issues
        ]
        numbers = [number + shift_line for number in part.line_numbers]
        records = part.records
        if not header_checked:  # whole until the header is decided (title slot, header)
            taken = 2 - len(whole.records) if offset == 0 else 1 - len(whole.records)
            taken = max(taken, 0)
            whole.records += records[:taken]
            whole.line_numbers += numbers[:taken]
            records, numbers = records[taken:], numbers[taken:]
        if offset == 0:
            slot = peel_title_slot(whole, chunk)
            slot_size = chunk.find(b"\n") + 1
            if slot is not None and slot_size != SLOT_BYTES:
                slot_problem = _slot_problem(slot_size)
            if slot is None and len(whole.records) > 1:  # the second record is an entry
                records, numbers = [whole.records.pop(), *records], [whole.line_numbers.pop(), *numbers]
        lines += chunk.count(b"\n")
        offset += len(chunk)
        if not header_checked and whole.records:  # the first record decides (as header_problem_line)
            header_checked = True
            bad_header = header_problem_line(whole) is not None  # then only line issues matter
            if not bad_header and header_version(whole.records[0]) < CURRENT_VERSION:
                return None
        if not bad_header:
            for record, number in zip(records, numbers, strict=True):
                collector.add(record, number)
    if bad_header or not header_checked:
        return _problems_of(whole, slot_problem, store)
    return _streamed_problems(whole, slot_problem, collector)


def _streamed_problems(
    whole: DecodedFile, slot_problem: Problem | None, collector: EntryCollector
) -> list[Problem]:
    """What :func:`_problems_of` reports, from the collected skeleton (the header is current)."""
    problems = _line_problems(whole)
    if slot_problem is not None:
        problems.insert(0, slot_problem)
    return problems + _collected_problems(collector)
