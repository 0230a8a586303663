"""Check and repair damaged session files (docs/durability.md, "Check and repair").

``check(path)`` never writes. ``repair(path)`` takes the writer lock, keeps a backup of the file
it replaces (a hard link, ``<name>.repair.bak``), moves every line it drops to a sidecar
``<name>.rejected`` (byte for byte), and rewrites atomically. Lines it does not change are written
back byte for byte. Running it twice changes nothing the second time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import BLANK, BOM, NOT_OBJECT, TORN, DecodedFile, decode_lines, encode_line
from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.ids import new_entry_id, new_session_id, now_iso
from omp_session.format.migrate import header_version, migrate_records
from omp_session.format.title_slot import SLOT_BYTES, encode_slot
from omp_session.model.toolcalls import find_unpaired
from omp_session.model.tree import SessionIndex
from omp_session.store.configured import configured_storage
from omp_session.store.file import FileStorage, fsync_directory
from omp_session.store.loading import (
    header_problem_line,
    is_session_header,
    peel_title_slot,
    read_session_bytes,
)

__all__ = ["Problem", "RepairReport", "check", "migrate_file", "repair"]

Entry = dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a session file."""

    kind: str
    line: int | None
    entry_id: str | None
    message: str

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
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    entries = records[1:]
    for position, entry in enumerate(entries, start=1):
        line = line_of.get(position)
        entry_id = entry.get("id")
        if not isinstance(entry_id, str):
            problems.append(
                Problem("missing-id", line, None, "the entry has no string id, so nothing can refer to it")
            )
            continue
        if entry_id in seen:
            problems.append(
                Problem(
                    "duplicate-id", line, entry_id, f"id {entry_id} was already used on line {seen[entry_id]}"
                )
            )
        seen[entry_id] = line or 0
    index = SessionIndex(entries)
    line_by_id = {
        e.get("id"): line_of.get(p) for p, e in enumerate(entries, start=1) if isinstance(e.get("id"), str)
    }
    problems += _link_problems(index, entries, line_of)
    for unpaired in find_unpaired(index):
        what = (
            f"tool call {unpaired.tool_call_id} ({unpaired.tool_name}) has no result on a branch below it"
            if unpaired.kind == "call-without-result"
            else f"tool result for {unpaired.tool_call_id} has no matching call before it on its branch"
        )
        line = line_by_id.get(unpaired.entry_id) if unpaired.entry_id else None
        problems.append(Problem(f"tool-{unpaired.kind}", line, unpaired.entry_id, what))
    return problems


def _link_problems(index: SessionIndex, entries: list[Entry], line_of: dict[int, int]) -> list[Problem]:
    problems = []
    cycle_roots = index.cycle_roots()
    for position, entry in enumerate(entries, start=1):
        entry_id, parent, line = entry.get("id"), entry.get("parentId"), line_of.get(position)
        if isinstance(parent, str) and parent:
            if parent == entry_id:
                problems.append(Problem("self-parent", line, entry_id, "the entry is its own parent"))
            elif parent not in index.by_id:
                problems.append(Problem("orphan", line, entry_id, f"parent {parent} does not exist"))
            elif entry_id in cycle_roots and index.by_id.get(entry_id) is entry:
                problems.append(
                    Problem("cycle", line, entry_id, f"parent links from {entry_id} loop back to it")
                )
        kind = entry.get("type")
        if kind == "compaction" and entry.get("firstKeptEntryId") not in index.by_id:
            kept = entry.get("firstKeptEntryId")
            problems.append(
                Problem("missing-kept-entry", line, entry_id, f"firstKeptEntryId {kept} does not exist")
            )
        if kind == "label" and entry.get("targetId") not in index.by_id:
            problems.append(
                Problem(
                    "label-target-missing",
                    line,
                    entry_id,
                    f"label target {entry.get('targetId')} does not exist",
                )
            )
    return problems


def check(path: Path | str) -> list[Problem]:
    """Every problem found in ``path``; never writes. Unusable paths raise ``CorruptSessionError``."""
    path = Path(path)
    store = configured_storage()  # a database store (the command line's --store), else the file
    data = store.read_session(path) if store is not None else read_session_bytes(path)
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)  # omp 18's first line, folded into the header
    problems = _line_problems(decoded)
    slot_size = data.find(b"\n") + 1
    if slot is not None and slot_size != SLOT_BYTES:
        problems.insert(
            0,
            Problem(
                "title-slot",
                1,
                None,
                f"title slot is {slot_size} bytes, not {SLOT_BYTES}: omp 18 would overwrite the header "
                "line when it renames the session",
            ),
        )
    bad_header = header_problem_line(decoded)
    if bad_header is not None:  # the same rule as open(): it would refuse this file
        problems.insert(0, Problem("header", bad_header, None, "the first line is not a session header"))
        return problems
    version = header_version(decoded.records[0])
    if version < CURRENT_VERSION:
        problems.append(
            Problem("old-version", decoded.line_numbers[0], None, f"version {version}; current is 3")
        )
    records = decoded.records
    migrate_records(records)  # in memory only; stable ids: the same ones every tool shows
    line_of = {position: decoded.line_numbers[position] for position in range(1, len(records))}
    return problems + _entry_problems(records, line_of)


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
        changes.append(f"upgraded from version {migrated_from} to {CURRENT_VERSION}")
        header_raw = None
    lines: list[tuple[Entry, bytes | None]] = [
        (record, None if migrated_from is not None else keep_raw[i])
        for i, record in enumerate(records)
        if i > 0
    ]
    _rename_duplicates(lines, changes)
    _break_cycles(lines, changes)
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
        if entry_id in roots and index.by_id.get(entry_id) is entry:
            lines[position] = ({**entry, "parentId": None}, None)
            what = "self-parent" if entry.get("parentId") == entry_id else "parent cycle"
            changes.append(f"{what} broken: {entry_id} is now a root")


def _write_sidecar(path: Path, rejected: list[bytes]) -> Path:
    sidecar = path.with_name(path.name + ".rejected")
    with open(sidecar, "ab") as handle:  # a second repair adds to it, never replaces it
        handle.write(b"".join(line + b"\n" for line in rejected))
        handle.flush()
        os.fsync(handle.fileno())
    fsync_directory(path.parent)
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
