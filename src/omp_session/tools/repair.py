"""Check and repair damaged session files (docs/durability.md, "Check and repair").

``check(path)`` never writes. ``repair(path)`` takes the writer lock, keeps a backup of the file
it replaces (a hard link, ``<name>.repair.bak``), moves every line it drops to a sidecar
``<name>.rejected`` (byte for byte), and rewrites atomically. Lines it does not change are written
back byte for byte. Running it twice changes nothing the second time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError, PersistenceError
from omp_session.format.codec import (
    BLANK,
    BOM,
    NOT_OBJECT,
    TORN,
    DecodedFile,
    LineIssue,
    decode_lines,
    encode_line,
)
from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.ids import new_entry_id, new_session_id, now_iso
from omp_session.format.migrate import header_version, migrate_records
from omp_session.format.title_slot import SLOT_BYTES, encode_slot
from omp_session.model.tree import SessionIndex
from omp_session.store.atomic_files import replace_file
from omp_session.store.configured import configured_storage
from omp_session.store.file import FileStorage
from omp_session.store.loading import (
    header_problem_line,
    is_session_header,
    peel_title_slot,
    read_session_bytes,
)
from omp_session.store.regular import open_regular, read_regular
from omp_session.tools.check_stream import EntryCollector, ToolIssue

__all__ = ["Problem", "RepairReport", "check", "migrate_file", "repair"]

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


@dataclass
class RepairReport:
    """What :func:`repair` did; ``changes`` is empty when the file needed nothing."""

    path: Path
    backup: Path | None = None
    sidecar: Path | None = None
    changes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ check


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


def _entry_problems(records: list[Entry], line_of: dict[int, int]) -> list[Problem]:
    # One set of entry checks for a whole read and a streamed one (tools/check_stream.py).
    collector = EntryCollector()
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


def check(path: Path | str, *, chunk_bytes: int | None = None) -> list[Problem]:
    """Every problem found in ``path``; never writes. Unusable paths raise ``CorruptSessionError``.

    A file over :data:`STREAM_ABOVE_BYTES` (or any file, with ``chunk_bytes``) is read in chunks
    and keeps only what the checks need of each entry; the result is the same."""
    path = Path(path)
    store = configured_storage()  # a database store (the command line's --store), else the file
    if store is not None:
        return _from_bytes(store.read_session(path))
    if chunk_bytes is None:
        try:
            large = os.stat(path).st_size > STREAM_ABOVE_BYTES
        except OSError:
            large = False
        if large:
            chunk_bytes = _CHUNK_BYTES
    if chunk_bytes is not None:
        streamed = _check_in_chunks(path, chunk_bytes)
        if streamed is not None:
            return streamed
    return _from_bytes(read_session_bytes(path))


def _from_bytes(data: bytes) -> list[Problem]:
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)  # omp 18's first line, folded into the header
    slot_size = data.find(b"\n") + 1
    slot_problem = _slot_problem(slot_size) if slot is not None and slot_size != SLOT_BYTES else None
    return _problems_of(decoded, slot_problem)


def _slot_problem(slot_size: int) -> Problem:
    return Problem(
        "title-slot",
        1,
        None,
        f"title slot is {slot_size} bytes, not {SLOT_BYTES}: omp 18 would overwrite the header "
        "line when it renames the session",
    )


def _problems_of(decoded: DecodedFile, slot_problem: Problem | None) -> list[Problem]:
    problems = _line_problems(decoded)
    if slot_problem is not None:
        problems.insert(0, slot_problem)
    bad_header = header_problem_line(decoded)
    if bad_header is not None:  # the same rule as open(): it would refuse this file
        problems.insert(0, Problem("header", bad_header, None, "the first line is not a session header"))
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
    return problems + _entry_problems(records, line_of)


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


def _check_in_chunks(path: Path, chunk_bytes: int) -> list[Problem] | None:
    """:func:`check` reading ``chunk_bytes`` at a time, keeping of each entry only what the checks
    need (tools/check_stream.py); ``None`` for a file older than version 3 (its migration needs
    every record whole: checked the ordinary way)."""
    whole = DecodedFile()  # the line issues, and the records up to the header
    collector = EntryCollector()
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
        return _problems_of(whole, slot_problem)
    return _streamed_problems(whole, slot_problem, collector)


def _streamed_problems(
    whole: DecodedFile, slot_problem: Problem | None, collector: EntryCollector
) -> list[Problem]:
    """What :func:`_problems_of` reports, from the collected skeleton (the header is current)."""
    problems = _line_problems(whole)
    if slot_problem is not None:
        problems.insert(0, slot_problem)
    return problems + _collected_problems(collector)


# ------------------------------------------------------------------------------------ repair


@dataclass
class _Plan:
    """The repaired file as (record, raw bytes or None when it must be re-encoded) pairs."""

    header: Entry
    header_raw: bytes | None
    lines: list[tuple[Entry, bytes | None]]
    rejected: list[bytes]
    changes: list[str]
    #: omp 18's title slot line (kept, padded to 256 bytes if it was not), or ``None``.
    slot_line: bytes | None = None


def _raw_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _plan(path: Path, data: bytes) -> _Plan:
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)
    raw = _raw_lines(data)
    changes: list[str] = []
    slot_line = None
    if slot is not None:
        slot_line = raw[0].removeprefix(BOM) + b"\n"
        if len(slot_line) != SLOT_BYTES:
            slot_line = encode_slot(slot)
            changes.append(f"title slot rewritten to its fixed {SLOT_BYTES} bytes")
    rejected = [raw[i.line - 1] for i in decoded.issues if i.skipped and i.reason != BLANK]
    for issue in decoded.issues:
        if issue.skipped and issue.reason != BLANK:
            changes.append(f"line {issue.line}: {issue.reason}; moved to the sidecar")
    if any(i.reason == BLANK for i in decoded.issues):
        changes.append("blank lines removed")
    records = decoded.records
    numbers = decoded.line_numbers
    keep_raw = [raw[n - 1].removesuffix(b"\r") + b"\n" for n in numbers]
    if decoded.has_bom:
        changes.append("byte order mark removed")
        if numbers and numbers[0] == 1:  # else line 1 was dropped into the sidecar, BOM and all
            keep_raw[0] = keep_raw[0].removeprefix(BOM)
    if any(raw[n - 1].endswith(b"\r") for n in numbers):
        changes.append("CRLF line endings changed to LF")
    if not records or not is_session_header(records[0]):
        header: Entry = {
            "type": "session",
            "version": CURRENT_VERSION,
            "id": new_session_id(),
            "timestamp": now_iso(),
            "cwd": "",
        }
        changes.append(
            "missing or corrupt header replaced by a new one (the old first line is in the sidecar)"
        )
        records, keep_raw = [header, *records], [b"", *keep_raw]
        header_raw: bytes | None = None
    else:
        header_raw = keep_raw[0]
    migrated_from = migrate_records(records)
    if migrated_from is not None:
        header_raw = None
    lines: list[tuple[Entry, bytes | None]] = [
        (record, None if migrated_from is not None else keep_raw[i])
        for i, record in enumerate(records)
        if i > 0
    ]
    _rename_duplicates(lines, changes)
    _break_cycles(lines, changes)
    if migrated_from is not None and changes:
        # Only together with a real repair: an old version alone is not damage (check calls it
        # information), and `migrate` is the command that upgrades (item 13).
        changes.append(f"upgraded from version {migrated_from} to {CURRENT_VERSION}")
    return _Plan(records[0], header_raw, lines, rejected, changes, slot_line)


def _rename_duplicates(lines: list[tuple[Entry, bytes | None]], changes: list[str]) -> None:
    # omp's index keeps the LAST entry of a duplicated id, so references resolve to it; the earlier
    # ones get fresh ids, which keeps exactly the tree omp shows.
    last_position: dict[str, int] = {}
    for position, (entry, _raw) in enumerate(lines):
        if isinstance(entry.get("id"), str):
            last_position[entry["id"]] = position
    used = set(last_position)
    for position, (entry, _raw) in enumerate(lines):
        entry_id = entry.get("id")
        if isinstance(entry_id, str) and last_position[entry_id] != position:
            fresh = new_entry_id(used)
            used.add(fresh)
            lines[position] = ({**entry, "id": fresh}, None)
            changes.append(f"duplicate id {entry_id} renamed to {fresh}")


def _break_cycles(lines: list[tuple[Entry, bytes | None]], changes: list[str]) -> None:
    index = SessionIndex(entry for entry, _raw in lines)
    roots = index.cycle_roots()
    for position, (entry, _raw) in enumerate(lines):
        entry_id = entry.get("id")
        if isinstance(entry_id, str) and entry_id in roots and index.by_id.get(entry_id) is entry:
            lines[position] = ({**entry, "parentId": None}, None)
            what = "self-parent" if entry.get("parentId") == entry_id else "parent cycle"
            changes.append(f"{what} broken: {entry_id} is now a root")


def _write_sidecar(path: Path, rejected: list[bytes]) -> Path:
    """Add the dropped lines to ``<name>.rejected`` (never replacing what it holds). Atomic: a
    full disk leaves the old sidecar whole (issue 11 item 7). Idempotent: when the sidecar already
    ends with exactly these lines, a repair killed before its rewrite is being run again, and
    they are not added a second time (item 12)."""
    sidecar = path.with_name(path.name + ".rejected")
    chunk = b"".join(line + b"\n" for line in rejected)
    try:
        old = read_regular(sidecar) if os.path.lexists(sidecar) else b""
        if not old.endswith(chunk):
            replace_file(sidecar, old + chunk)
    except OSError as exc:
        raise PersistenceError(sidecar, exc) from exc
    return sidecar


def repair(path: Path | str) -> RepairReport:
    """Fix what can be fixed in ``path`` (see the module docstring); returns what changed."""
    path = Path(path)
    if not path.exists():
        raise CorruptSessionError(path, "no such file")
    storage = FileStorage(path, blobs=_NoBlobs())
    storage.lock()  # no other omp-session writer while we rewrite
    try:
        data = storage.read()
        report = RepairReport(path)
        plan = _plan(path, data)
        if not plan.changes:
            return report
        if plan.rejected:
            report.sidecar = _write_sidecar(path, plan.rejected)
        chunks = [plan.slot_line] if plan.slot_line is not None else []
        chunks.append(plan.header_raw if plan.header_raw is not None else encode_line(plan.header))
        chunks += [raw if raw is not None else encode_line(entry) for entry, raw in plan.lines]
        storage.rewrite(chunks, backup_suffix=".repair.bak")
        report.backup = _newest_backup(path)
        report.changes = plan.changes
        return report
    finally:
        storage.close()


def _newest_backup(path: Path) -> Path | None:
    candidates = sorted(path.parent.glob(path.name + ".repair.bak*"), key=lambda p: p.stat().st_mtime_ns)
    return candidates[-1] if candidates else None


class _NoBlobs:
    """Repair writes records as they are on disk: nothing is externalised or resolved."""

    def put(self, data: bytes) -> str:
        raise RuntimeError("repair never externalises blobs")

    def get(self, digest: str) -> bytes | None:
        return None

    def put_sidecar(self, digest: str, extension: str) -> None:
        raise RuntimeError("repair never externalises blobs")


def migrate_file(path: Path | str, dry_run: bool = False) -> int | None:
    """Upgrade ``path`` to version 3 in place (backup ``<name>.v<old>.bak``); returns the old version.

    ``None`` when the file is already current. With ``dry_run`` nothing is written.
    """
    path = Path(path)
    storage = FileStorage(path, blobs=_NoBlobs(), read_only=dry_run)
    if not dry_run:
        storage.lock()
    try:
        data = storage.read()
        decoded = decode_lines(data)
        slot = peel_title_slot(decoded, data)  # kept as it is: migration is about the entries
        bad_header = header_problem_line(decoded)
        if bad_header is not None:
            raise CorruptSessionError(path, "the first line is not a session header", bad_header)
        records = decoded.records
        old = migrate_records(records)
        if old is None or dry_run:
            return old
        chunks = [data[: data.find(b"\n") + 1]] if slot is not None else []
        chunks += [encode_line(record) for record in records]
        storage.rewrite(chunks, backup_suffix=f".v{old}.bak")
        return old
    finally:
        storage.close()
