"""Reading a session file into a header and v3 entries (spec §7.5), without ever writing it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError
from omp_session.format import markers
from omp_session.format.blob_refs import BlobSink
from omp_session.format.codec import BOM, decode_line, decode_lines
from omp_session.format.header import (
    header_problem_line,
    is_blank,
    is_session_header,
    is_slot_only,
    peel_title_slot,
)
from omp_session.format.migrate import migrate_records
from omp_session.format.title_slot import TitleSlot, fold_into_header, parse_slot_line
from omp_session.format.transform import (
    KeepReplay,
    drop_replay,
    resolve_blob_refs,
    sanitize_openai_replay,
)
from omp_session.gcpause import gc_paused
from omp_session.store import LoadedSession, SessionStorage, scanner
from omp_session.store.regular import open_regular, read_regular

__all__ = [
    "LoadedSession",
    "SessionLoadResult",
    "header_problem_line",
    "is_blank",
    "is_session_header",
    "is_slot_only",
    "load_session",
    "load_session_file",
    "parse_session",
    "peel_title_slot",
    "read_header",
    "read_session_bytes",
    "transform_loaded",
]


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


def parse_session(
    path: Path, data: bytes, blobs: BlobSink | None, keep_replay: KeepReplay = drop_replay
) -> LoadedSession:
    """Decode, fold the title slot, validate the header, migrate, resolve blobs, sanitise OpenAI
    replay history (``keep_replay``: the opening dialect's rule, asked with whether the file has a
    title slot). Raises ``CorruptSessionError``."""
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
    dropped = transform_loaded(entries, data, blobs, keep_replay(slot is not None))
    loaded = LoadedSession(records[0], entries, migrated_from, decoded.issues, decoded, len(data), slot)
    loaded.replay_dropped = dropped
    return loaded


def transform_loaded(
    entries: list[dict[str, Any]], data: bytes, blobs: BlobSink | None, keep_replay: bool
) -> bool:
    """What a load does to entries decoded from ``data`` (in place, §7.5 step 6): blob references
    resolved, OpenAI replay sanitised by the dialect's rule (``keep_replay``); the markers of
    ``data`` decide, as omp tests the whole file. The entries a follower's ``refresh`` reads get
    the same. Returns whether a kept replay was dropped all the same (``replay_dropped``)."""
    found = markers.current()
    if blobs is not None and found.finds("blob", data, find=scanner.find):
        image_urls = found.finds("image_url", data, find=scanner.find)
        for entry in entries:
            resolve_blob_refs(entry, blobs, image_urls=image_urls)
    dropped = False
    if found.finds("openai", data, find=scanner.find):
        for entry in entries:
            dropped = sanitize_openai_replay(entry, keep_replay) or dropped
    return dropped and keep_replay


def load_session(
    path: Path | str, blobs: BlobSink | None = None, *, storage: SessionStorage | None = None
) -> LoadedSession:
    """Read and parse ``path`` (a file, or a session of ``storage``); a missing one raises
    ``FileNotFoundError``."""
    path = Path(path)
    store = storage
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


def load_session_file(
    path: Path | str, *, throw_if_missing: bool = False, storage: SessionStorage | None = None
) -> SessionLoadResult:
    """Load and check a session file keeping the malformed-line count (omp 18's free function
    ``loadSessionFile``; a session of ``storage`` too). A missing file gives an empty
    result with ``source_size`` ``None`` (``FileNotFoundError`` with ``throw_if_missing``).
    Reads only."""
    from omp_session.errors import SessionNotFoundError
    from omp_session.format.codec import MALFORMED, TORN
    from omp_session.format.title_slot import split_slot

    path = Path(path)
    store = storage
    try:
        data = store.read_session(path) if store is not None else read_session_bytes(path)
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
