"""Reading a session file into a header and v3 entries (spec §7.5), without ever writing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import BLANK, BOM, DecodedFile, LineIssue, decode_line, decode_lines
from omp_session.format.migrate import migrate_records
from omp_session.format.transform import resolve_blob_refs, sanitize_openai_replay
from omp_session.gcpause import gc_paused
from omp_session.store.blobs import BlobSink


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


def is_session_header(value: Any) -> bool:
    """``{type: "session", id: <string>}``: the only validity test omp applies (§7.5 step 3)."""
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def read_session_bytes(path: Path) -> bytes:
    """The file's bytes, or a :class:`CorruptSessionError` naming the path for anything unusable."""
    if path.is_dir():
        raise CorruptSessionError(path, "is a directory, not a session file")
    try:
        return path.read_bytes()
    except PermissionError as exc:
        raise CorruptSessionError(path, f"cannot be read: {exc.strerror}") from exc
    except OSError as exc:
        if not path.exists():
            raise
        raise CorruptSessionError(path, f"cannot be read: {exc.strerror or exc}") from exc


def is_blank(data: bytes) -> bool:
    """True for a file with no data at all (empty or whitespace only): safe to start afresh."""
    return not data.strip(b" \t\r\n\xef\xbb\xbf")


def header_problem_line(decoded: DecodedFile) -> int | None:
    """``None`` when the first JSON value of the file is a session header (§7.5 step 3), else the
    line where the header was expected: the first line that holds anything."""
    records = decoded.records
    if records and decoded.first_value_line() == decoded.line_numbers[0] and is_session_header(records[0]):
        return None
    non_blank = [issue.line for issue in decoded.issues if issue.reason != BLANK]
    return min(non_blank + decoded.line_numbers[:1], default=1)


def parse_session(path: Path, data: bytes, blobs: BlobSink | None) -> LoadedSession:
    """Decode, validate the header, migrate, resolve blobs. Raises ``CorruptSessionError``."""
    with gc_paused():  # acyclic objects only: see gcpause.py
        decoded = decode_lines(data)
    bad_line = header_problem_line(decoded)
    if bad_line is not None:
        raise CorruptSessionError(
            path,
            'the first line is not a session header ({"type":"session","id":"…"}); file left untouched',
            bad_line,
        )
    records = decoded.records
    migrated_from = migrate_records(records)
    entries = records[1:]
    if blobs is not None and b"blob:sha256:" in data:
        image_urls = b"image_url" in data
        for entry in entries:
            resolve_blob_refs(entry, blobs, image_urls=image_urls)
    if b"openaiResponsesHistory" in data:
        for entry in entries:
            sanitize_openai_replay(entry)
    return LoadedSession(records[0], entries, migrated_from, decoded.issues, decoded, len(data))


def load_session(path: Path | str, blobs: BlobSink | None = None) -> LoadedSession:
    """Read and parse ``path`` (a file, or a session of the configured store); a missing one raises
    ``FileNotFoundError``."""
    from omp_session.store.configured import configured_storage  # (it imports this module)

    path = Path(path)
    store = configured_storage()
    data = store.read_session(path) if store is not None else read_session_bytes(path)
    return parse_session(path, data, blobs)


def read_header(path: Path, limit: int | None = None) -> dict[str, Any] | None:
    """The header of ``path`` from its first line only (no size limit by default, §9 #18)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline() if limit is None else handle.readline(limit)
    except OSError:
        return None
    try:
        value = decode_line(first.removeprefix(BOM))
    except ValueError:
        return None
    return value if is_session_header(value) else None
