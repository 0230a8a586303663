"""Reading a session file into a header and v3 entries (spec §7.5), without ever writing it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import BLANK, BOM, DecodedFile, LineIssue, decode_line, decode_lines
from omp_session.format.migrate import migrate_records
from omp_session.format.title_slot import TitleSlot, fold_into_header, parse_slot_line, slot_from_value
from omp_session.format.transform import resolve_blob_refs, sanitize_openai_replay
from omp_session.gcpause import gc_paused
from omp_session.model.tree import EntryIndex, SessionIndex
from omp_session.store.blobs import BlobSink
from omp_session.store.line_table import LineTable
from omp_session.store.regular import open_regular, read_regular

__all__ = [
    "LoadedSession",
    "SessionLoadResult",
    "header_problem_line",
    "is_blank",
    "is_session_header",
    "load_session",
    "load_session_file",
    "parse_session",
    "read_header",
    "read_session_bytes",
]


@dataclass
class LoadedSession:
    """A parsed, migrated session: what a manager or a tool builds on."""

    header: dict[str, Any]
    entries: list[dict[str, Any]]
    #: The version the file had before in-memory migration, or ``None`` if it needed none.
    migrated_from: int | None = None
    issues: list[LineIssue] = field(default_factory=list)
    decoded: DecodedFile | None = None
    size: int = 0
    #: The omp 18 title slot of the file's first line (already folded into ``header``), if any.
    title_slot: TitleSlot | None = None
    #: The index over ``entries``: given by an open path that builds its own (the lazy one of an
    #: indexed file), else built on the first ``entry_index()``.
    index: EntryIndex | None = None
    #: Where each entry's line is in the file (``None`` after a migration): rewrites copy the
    #: lines of unchanged entries from there (store/line_table.py, issue 11 item 6).
    lines: LineTable | None = None

    def entry_index(self) -> EntryIndex:
        """The index a manager reads this session through (built once, then kept)."""
        if self.index is None:
            with gc_paused():  # right after a load: the collector would walk every new entry
                self.index = SessionIndex(self.entries)
        return self.index


def is_session_header(value: Any) -> bool:
    """``{type: "session", id: <string>}``: the only validity test omp applies (§7.5 step 3)."""
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def read_session_bytes(path: Path) -> bytes:
    """The file's bytes, or a :class:`CorruptSessionError` naming the path for anything unusable."""
    if path.is_dir():
        raise CorruptSessionError(path, "is a directory, not a session file")
    try:
        return read_regular(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CorruptSessionError(path, f"cannot be read: {exc.strerror or exc}") from exc


_NOT_BLANK = re.compile(rb"[^ \t\r\n\xef\xbb\xbf]")


def is_blank(data: bytes) -> bool:
    """True for a file with no data at all (empty or whitespace only): safe to start afresh."""
    return _NOT_BLANK.search(data) is None  # stops at the first byte of data (no copy)


def header_problem_line(decoded: DecodedFile) -> int | None:
    """``None`` when the first JSON value of the file is a session header (§7.5 step 3), else the
    line where the header was expected: the first line that holds anything."""
    records = decoded.records
    if records and decoded.first_value_line() == decoded.line_numbers[0] and is_session_header(records[0]):
        return None
    non_blank = [issue.line for issue in decoded.issues if issue.reason != BLANK]
    return min(non_blank + decoded.line_numbers[:1], default=1)


def peel_title_slot(decoded: DecodedFile, data: bytes) -> TitleSlot | None:
    """Remove an omp 18 title slot from the decoded records (omp18-differences §1.3) and return it.

    Only line 1 can be a slot, and only when a newline ends it (omp parses the text before the
    first ``\n``). Line numbers of everything else stay physical, so errors name real lines.
    """
    if not decoded.records or decoded.line_numbers[0] != 1 or b"\n" not in data:
        return None
    slot = slot_from_value(decoded.records[0])
    if slot is not None:
        del decoded.records[0]
        del decoded.line_numbers[0]
        del decoded.offsets[:1]  # (empty where a caller collects records without their spans)
        del decoded.lengths[:1]
    return slot


def is_slot_only(data: bytes) -> bool:
    """A title slot and nothing else (blank lines aside): omp 18 starts a fresh session there."""
    decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)
    return slot is not None and not decoded.records and not decoded.skipped


def parse_session(path: Path, data: bytes, blobs: BlobSink | None) -> LoadedSession:
    """Decode, fold the title slot, validate the header, migrate, resolve blobs.
    Raises ``CorruptSessionError``."""
    with gc_paused():  # acyclic objects only: see gcpause.py
        decoded = decode_lines(data)
    slot = peel_title_slot(decoded, data)
    bad_line = header_problem_line(decoded)
    if bad_line is not None:
        raise CorruptSessionError(
            path,
            'the first line is not a session header ({"type":"session","id":"…"}); file left untouched',
            bad_line,
        )
    records = decoded.records
    if slot is not None:
        fold_into_header(records[0], slot)
    migrated_from = migrate_records(records)
    entries = records[1:]
    if blobs is not None and b"blob:sha256:" in data:
        image_urls = b"image_url" in data
        for entry in entries:
            resolve_blob_refs(entry, blobs, image_urls=image_urls)
    if b"openaiResponsesHistory" in data:
        for entry in entries:
            sanitize_openai_replay(entry)
    lines = LineTable(decoded.offsets[1:], decoded.lengths[1:], entries) if migrated_from is None else None
    return LoadedSession(
        records[0], entries, migrated_from, decoded.issues, decoded, len(data), slot, lines=lines
    )


def load_session(path: Path | str, blobs: BlobSink | None = None) -> LoadedSession:
    """Read and parse ``path`` (a file, or a session of the configured store); a missing one raises
    ``FileNotFoundError``."""
    from omp_session.store.configured import configured_storage  # (it imports this module)

    path = Path(path)
    store = configured_storage()
    data = store.read_session(path) if store is not None else read_session_bytes(path)
    return parse_session(path, data, blobs)


def read_header(path: Path, limit: int | None = None) -> dict[str, Any] | None:
    """The header of ``path`` from its first line (the second behind an omp 18 title slot, which
    is folded in); no size limit by default (§9 #18)."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            first = handle.readline() if limit is None else handle.readline(limit)
            slot = parse_slot_line(first.removeprefix(BOM).rstrip(b"\n")) if first.endswith(b"\n") else None
            if slot is not None:
                first = handle.readline() if limit is None else handle.readline(limit)
    except (OSError, CorruptSessionError):
        return None
    try:
        value = decode_line(first.removeprefix(BOM))
    except ValueError:
        return None
    if not is_session_header(value):
        return None
    header: dict[str, Any] = value
    if slot is not None:
        fold_into_header(header, slot)
    return header


@dataclass
class SessionLoadResult:
    """omp 18's ``loadSessionFile`` result: the file's records as written (the header first, its
    title slot folded in; not migrated), the slot, how many lines were malformed, the size read
    (``None`` for a missing file) and whether the first record is not a session header (then
    ``entries`` is empty)."""

    entries: list[dict[str, Any]]
    title_slot: TitleSlot | None
    malformed_records: int
    source_size: int | None
    invalid_header: bool

    def to_dict(self) -> dict[str, Any]:
        """omp's JSON shape (``titleSlot`` only when there is one)."""
        out: dict[str, Any] = {"entries": self.entries}
        if self.title_slot is not None:
            slot = self.title_slot
            out["titleSlot"] = {
                "title": slot.title,
                **({"source": slot.source} if slot.source is not None else {}),
                "updatedAt": slot.updated_at,
            }
        out.update(
            malformedRecords=self.malformed_records,
            sourceSize=self.source_size,
            invalidHeader=self.invalid_header,
        )
        return out


def load_session_file(path: Path | str, *, throw_if_missing: bool = False) -> SessionLoadResult:
    """Load and check a session file keeping the malformed-line count (omp 18's free function
    ``loadSessionFile``; a session of the configured store too). A missing file gives an empty
    result with ``source_size`` ``None`` (``FileNotFoundError`` with ``throw_if_missing``).
    Reads only."""
    from omp_session.errors import SessionNotFoundError
    from omp_session.format.codec import MALFORMED, TORN
    from omp_session.format.title_slot import split_slot
    from omp_session.store.configured import session_storage  # (it imports this module)

    path = Path(path)
    try:
        data = session_storage().read_session(path)
    except (SessionNotFoundError, FileNotFoundError):
        if throw_if_missing:
            raise FileNotFoundError(f"ENOENT: no such file or directory, open '{path}'") from None
        return SessionLoadResult([], None, 0, None, False)
    slot, start = split_slot(data.removeprefix(BOM))
    decoded = decode_lines(data.removeprefix(BOM)[start:])
    malformed = sum(1 for issue in decoded.issues if issue.reason in (MALFORMED, TORN))
    records = decoded.records
    if records and slot is not None:
        fold_into_header(records[0], slot)
    invalid = not is_session_header(records[0]) if records else malformed > 0
    return SessionLoadResult([] if invalid else records, slot, malformed, len(data), invalid)
