"""Repair damaged session files (docs/durability.md, "Check and repair"); ``check`` is in
:mod:`omp_session.tools.check` and re-exported here, its documented home.

``repair(path)`` takes the writer lock, keeps a backup of the file
it replaces (a hard link, ``<name>.repair.bak``), moves every line it drops to a sidecar
``<name>.rejected`` (byte for byte), and rewrites atomically. Lines it does not change are written
back byte for byte. Running it twice changes nothing the second time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError, NotASessionError, PersistenceError
from omp_session.format.codec import (
    BLANK,
    BOM,
    decode_lines,
    encode_line,
)
from omp_session.format.entries import CURRENT_VERSION
from omp_session.format.header import header_problem_line, is_session_header, peel_title_slot
from omp_session.format.ids import new_entry_id, new_session_id, now_iso
from omp_session.format.migrate import migrate_records
from omp_session.format.title_slot import SLOT_BYTES, encode_slot
from omp_session.model.tree import SessionIndex
from omp_session.store.atomic_files import replace_file
from omp_session.store.file import FileStorage
from omp_session.store.regular import read_regular
from omp_session.tools.check import Problem, check

# check, Problem: tools/check.py
__all__ = ["NotASessionError", "Problem", "RepairReport", "check", "migrate_file", "repair"]

Entry = dict[str, Any]


@dataclass
class RepairReport:
    """What :func:`repair` did; ``changes`` is empty when the file needed nothing."""

    path: Path
    backup: Path | None = None
    sidecar: Path | None = None
    changes: list[str] = field(default_factory=list)


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


def _is_session_line(record: Entry) -> bool:
    """A session header, or an entry: a typed record with a string id and a ``parentId`` key
    (v2/v3 entries; v1 messages have ``type: message`` and a ``message``)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return False
    if is_session_header(record):
        return True
    return (isinstance(record.get("id"), str) and "parentId" in record) or (
        kind == "message" and isinstance(record.get("message"), dict)
    )


def _plan(path: Path, data: bytes, *, force: bool = False) -> _Plan:
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)
    if not force and slot is None and not any(_is_session_line(r) for r in decoded.records):
        # A binary, a text file, someone else's JSON: "repairing" it would move every line to the
        # sidecar and leave a header of our own (issue 25). Refused unless forced.
        what = "is empty" if not data else "has no line that is a session header or entry"
        raise NotASessionError(path, f"is not a session: it {what}; nothing was changed")
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
        first_rejected = bool(raw) and any(i.line == 1 for i in decoded.skipped)
        where = (
            "the old first line is in the sidecar"
            if first_rejected
            else "the file was empty"
            if not records and not rejected
            else "the first line was kept as an entry"
        )
        changes.append(f"missing or corrupt header replaced by a new one ({where})")
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


def repair(path: Path | str, *, force: bool = False) -> RepairReport:
    """Fix what can be fixed in ``path`` (see the module docstring); returns what changed.

    A file in which no line is a session header or entry (an empty file, a binary, a text file,
    JSON that is not a session) raises :class:`NotASessionError` and is not touched, unless
    ``force``: then every line goes to the sidecar and a new header is written."""
    path = Path(path)
    if not path.exists():
        raise CorruptSessionError(path, "no such file")
    storage = FileStorage(path, blobs=_NoBlobs())
    storage.lock()  # no other omp-session writer while we rewrite
    try:
        data = storage.read()
        report = RepairReport(path)
        plan = _plan(path, data, force=force)
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
