"""Persisting an import as an omp session, idempotently (spec importers §3).

:func:`persist_new` is omp's ``persistForeignSession``: the conversion, a ``foreign_session_import``
custom entry (``{source, sourceId, sourcePath, sourceCwd}``, parented on the leaf), a fresh UUIDv7
session id, written atomically (temp file, fsync, link into place) in omp 18's layout: the
256-byte title slot line, the v3 header, the entries in ingestion order.

:func:`import_session` adds what omp lacks: an already imported source (found by the
``foreign_session_import`` entries of the sessions under the sessions root) is not imported
again; a source that grew gets only its new entries appended, plus a new ``foreign_session_import``
entry recording the sync. When entries already imported would now convert differently (a Codex
rollback renumbers later turns, an edited transcript), the source is imported afresh into a new
session instead, so nothing already written is ever changed.
"""

from __future__ import annotations

import itertools
import mmap
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import decode_line, encode_line
from omp_session.format.ids import now_iso
from omp_session.format.javascript import holds_float
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, encode_slot
from omp_session.importers.base import (
    ConvertedSession,
    ForeignSessionInfo,
    ForeignSessionStore,
    clean_title,
    fresh_entry_id,
)
from omp_session.store.file import fsync_directory
from omp_session.store.lock import try_lock
from omp_session.store.paths import (
    encode_session_dir_name,
    home_dir,
    session_file_path,
    sessions_root,
    temp_root,
)

Entry = dict[str, Any]
Status = Literal["imported", "updated", "unchanged", "reimported"]
IMPORT_TYPE = "foreign_session_import"
_MARKER = b'"customType":"foreign_session_import"'


@dataclass
class ImportOutcome:
    """What one import did. ``path`` is the omp session written (or that would be, on a dry run)."""

    info: ForeignSessionInfo
    status: Status
    path: Path | None
    added: int
    converted: ConvertedSession
    reason: str = ""
    dry_run: bool = False


@dataclass
class _Existing:
    path: Path
    ids: dict[str, Entry] = field(default_factory=dict)


def import_entry(
    info: ForeignSessionInfo,
    parent: str | None,
    existing: set[str],
    now: str,
    resume: dict[str, Any] | None = None,
) -> Entry:
    """omp's ``appendCustomEntry("foreign_session_import", …)``: ``sourceCwd`` is the *list* cwd.

    ``resume`` (ours; omp ignores the extra key) records how far the source was read, so that an
    update reads only what was appended since (:mod:`claude_resume`).
    """
    data: dict[str, Any] = {
        "source": info.source,
        "sourceId": info.id,
        "sourcePath": info.path,
        "sourceCwd": info.cwd,
    }
    if resume is not None:
        data["resume"] = resume
    return {
        "type": "custom",
        "customType": IMPORT_TYPE,
        "data": data,
        "id": fresh_entry_id(existing),
        "parentId": parent,
        "timestamp": now,
    }


def encode_entry(entry: Entry) -> bytes:
    """One entry as the line ``JSON.stringify`` writes, the fast way: a single ``orjson.dumps``.

    orjson and JavaScript write everything alike but some floats (spec §1.7), so the exact,
    slower :func:`encode_line` runs only for an entry holding a float (a walk of its values, far
    cheaper than scanning its bytes) or one orjson refuses (a lone surrogate, an integer beyond
    64 bits). A raw ``orjson.Fragment`` (a source record's own line) is written as it is.
    """
    try:
        line = orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE)
        if not holds_float(entry):
            return line
    except (TypeError, RecursionError):
        pass
    return encode_line(entry)


def _write_new(
    path: Path, lines: Iterable[bytes], spool: IO[bytes] | None = None, after: Iterable[bytes] = ()
) -> None:
    """Write a file that must not exist yet: temp, fsync, hard link into place (never replaces).

    ``spool`` (a file positioned at 0) goes between ``lines`` and ``after``, copied in the kernel.
    """
    temp = path.with_name(f".{path.name}.import.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            for line in lines:
                handle.write(line)
            handle.flush()
            if spool is not None:
                _copy_file(spool, handle)
                handle.writelines(after)
                handle.flush()
            os.fsync(handle.fileno())
        os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    fsync_directory(path.parent)


def _copy_file(source: IO[bytes], target: IO[bytes]) -> None:
    """Append the rest of ``source`` to ``target`` (both flushed files), in the kernel if it can."""
    size = os.fstat(source.fileno()).st_size - source.tell()
    try:
        while size > 0:
            done = os.copy_file_range(source.fileno(), target.fileno(), size)
            if done == 0:
                break
            size -= done
        if size == 0:
            return
    except OSError:
        pass  # a file system without it: copy by hand from where the kernel stopped
    source.seek(os.lseek(source.fileno(), 0, os.SEEK_CUR))
    target.seek(0, os.SEEK_END)
    while chunk := source.read(1 << 20):
        target.write(chunk)
    target.flush()


def write_view_copy(path: Path, converted: ConvertedSession) -> None:
    """``converted`` as a session file at ``path`` for reading only (the viewer's mirror): the header
    (with the title) first and no title slot or import marker, so every reader of this package
    lists it. Never used for a session the user keeps (:func:`persist_new` writes those)."""
    now = now_iso()
    entries, _ = converted.with_title(now)
    temp = path.with_name(f".{path.name}.tmp")
    with open(temp, "wb") as handle:
        handle.write(encode_line(converted.header(now=now)))
        handle.writelines(encode_line(entry) for entry in entries)
    os.replace(temp, path)


def persist_new(
    converted: ConvertedSession,
    info: ForeignSessionInfo,
    *,
    session_dir: str | os.PathLike[str] | None = None,
    root: Path | None = None,
    fallback_cwd: str | None = None,
    dry_run: bool = False,
) -> tuple[Path, int]:
    """Write ``converted`` as a new omp session; returns its path and the number of entries."""
    body = (encode_entry(entry) for entry in converted.entries)
    return _persist(converted, info, body, len(converted.entries), session_dir, root, fallback_cwd, dry_run)


def persist_streaming(
    store: ForeignSessionStore,
    info: ForeignSessionInfo,
    *,
    session_dir: str | os.PathLike[str] | None = None,
    root: Path | None = None,
    fallback_cwd: str | None = None,
    lossless: bool = True,
    dry_run: bool = False,
) -> tuple[Path, int, ConvertedSession]:
    """Convert and write a new omp session without holding the transcript's entries in memory.

    Entries are spooled to an unnamed temporary file as the conversion finishes them (the header,
    which needs the cwd and the title, can only be written at the end); the session file is then
    written from it as :func:`persist_new` would write it.
    """
    base = Path(session_dir) if session_dir is not None else (root if root is not None else sessions_root())
    written = 0
    if not dry_run:
        base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=None if dry_run else base) as spool:

        def sink(entries: list[Entry]) -> None:
            nonlocal written
            written += len(entries)
            if not dry_run:
                spool.write(b"".join([encode_entry(entry) for entry in entries]))

        converted = store.convert_streaming(info, sink, lossless=lossless)
        spool.flush()
        spool.seek(0)
        path, count = _persist(converted, info, (), written, session_dir, root, fallback_cwd, dry_run, spool)
    return path, count, converted


def _persist(
    converted: ConvertedSession,
    info: ForeignSessionInfo,
    body: Iterable[bytes],
    body_count: int,
    session_dir: str | os.PathLike[str] | None,
    root: Path | None,
    fallback_cwd: str | None,
    dry_run: bool,
    spool: IO[bytes] | None = None,
) -> tuple[Path, int]:
    """Write the session: the slot, the header, ``body`` (or the ``spool`` file), the tail."""
    now = now_iso()
    entries, leaf = converted.with_title(now)
    tail = entries[len(converted.entries) :]  # the title_change, if any
    ids = {*converted.source_lines, *(str(e.get("id")) for e in entries)}
    marker = import_entry(info, leaf, ids, now, _resume_state(converted))
    if fallback_cwd is not None and not os.path.isdir(converted.cwd):
        converted.cwd = fallback_cwd  # omp's moveTo(fallbackCwd) for a cwd that no longer exists
    header = converted.header(now=now)
    if session_dir is not None:
        directory = Path(session_dir)
    else:  # omp's per-project directory, computed without creating it (a dry run writes nothing)
        base = root if root is not None else sessions_root()
        directory = base / encode_session_dir_name(converted.cwd, home_dir(), temp_root())
    path = session_file_path(directory, now, header["id"])
    if not dry_run:
        directory.mkdir(parents=True, exist_ok=True)
        slot = encode_slot(TitleSlot(header.get("title") or "", now, header.get("titleSource")))
        head, end = (slot, encode_line(header)), [encode_line(e) for e in [*tail, marker]]
        if spool is not None:  # a spool file: copied in the kernel, not through Python
            _write_new(path, head, spool, end)
        else:
            _write_new(path, itertools.chain(head, body, end))
    return path, body_count + len(tail) + 1


def _read_existing(path: Path) -> _Existing:
    found = _Existing(path)
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = decode_line(line)
            except ValueError as error:
                raise CorruptSessionError(path, f"unreadable line: {error}", number) from error
            if (
                isinstance(value, dict)
                and isinstance(value.get("id"), str)
                and value.get("type") != "session"
            ):
                found.ids[value["id"]] = value
    return found


def find_imports(root: Path) -> dict[tuple[str, str], Path]:
    """``(source, sourcePath)`` → the newest omp session under ``root`` imported from it.

    Files are searched for the marker bytes (``mmap``) and only the marker lines are parsed.
    """
    found: dict[tuple[str, str], tuple[float, Path]] = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            path = Path(directory) / name
            try:
                markers = list(_import_markers(path))
                mtime = path.stat().st_mtime if markers else 0.0
            except OSError:
                continue
            for data in markers:
                key = (str(data.get("source")), str(data.get("sourcePath")))
                if key not in found or found[key][0] < mtime:
                    found[key] = (mtime, path)
    return {key: path for key, (_, path) in found.items()}


def _import_markers(path: Path) -> Iterator[dict[str, Any]]:
    """The ``data`` of each ``foreign_session_import`` entry of a session, the newest first."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            end = len(view)
            while (found := view.rfind(_MARKER, 0, end)) >= 0:
                start = view.rfind(b"\n", 0, found) + 1
                stop = view.find(b"\n", found)
                end = start
                try:
                    entry = orjson.loads(view[start : stop if stop >= 0 else len(view)])
                except orjson.JSONDecodeError:
                    continue
                data = entry.get("data") if isinstance(entry, dict) else None
                if entry.get("customType") == IMPORT_TYPE and isinstance(data, dict):
                    yield data


def _comparable(entry: Entry) -> Entry:
    """An entry without its timestamps (a re-read source may fall back to a new file mtime)."""
    out = {k: v for k, v in entry.items() if k != "timestamp"}
    message = out.get("message")
    if isinstance(message, dict):
        out["message"] = {k: v for k, v in message.items() if k != "timestamp"}
    return out


def _append_update(
    existing: _Existing, converted: ConvertedSession, info: ForeignSessionInfo, dry_run: bool
) -> int:
    """Append the entries ``existing`` lacks; returns how many were written (0: up to date)."""
    new = [e for e in converted.entries if e.get("id") not in existing.ids]
    title_entry: list[Entry] = []
    now = now_iso()
    if not new:
        return 0
    entries, leaf = converted.with_title(now)
    if len(entries) > len(converted.entries) and _last_title(existing) != entries[-1]["title"]:
        title_entry = [entries[-1]]
    else:
        leaf = converted.leaf_id
    marker = import_entry(info, leaf, set(existing.ids), now, _resume_state(converted))
    lines = [encode_line(e) for e in [*new, *title_entry, marker]]
    if not dry_run:
        _append_lines(existing.path, lines, title_entry[0] if title_entry else None, now)
    return len(lines)


def _resume_state(converted: ConvertedSession) -> dict[str, Any] | None:
    """The conversion's resume state plus the title it gave the session (an update compares it)."""
    if converted.resume is None:
        return None
    title = clean_title(converted.title) if converted.title else None
    return {**converted.resume, "title": title or None}


def _append_lines(path: Path, lines: list[bytes], title_change: Entry | None, now: str) -> None:
    """Append to an imported session in place (locked, fsynced; never onto a torn last line)."""
    with open(path, "r+b") as handle:
        try_lock(handle.fileno(), path)
        handle.seek(0, os.SEEK_END)
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")  # never glue onto a torn last line
        handle.write(b"".join(lines))
        if title_change is not None:
            _rewrite_slot(handle, title_change, now)
        handle.flush()
        os.fsync(handle.fileno())


def last_import_data(path: Path) -> dict[str, Any] | None:
    """The ``data`` of the last ``foreign_session_import`` entry of a session (one line parsed)."""
    return next(_import_markers(path), None)


def _resumed_update(
    store: ForeignSessionStore, info: ForeignSessionInfo, previous: Path, dry_run: bool
) -> ImportOutcome | None:
    """Bring an import up to date from where it stopped (``resume``), reading only what the
    source gained; ``None`` when that is not possible (no state, or the source was rewritten)."""
    data = last_import_data(previous)
    state = data.get("resume") if data is not None else None
    if not isinstance(state, dict):
        return None
    try:
        converted = store.convert_update(info, state, previous)
    except (KeyError, TypeError, ValueError):
        return None  # a state this version cannot read: the full update path decides
    if converted is None:
        return None
    now = now_iso()
    entries, leaf = converted.with_title(now)
    title_change = entries[-1] if len(entries) > len(converted.entries) else None
    if title_change is not None and title_change["title"] == state.get("title"):
        title_change, leaf = None, converted.leaf_id
    if not converted.entries and title_change is None:
        return ImportOutcome(info, "unchanged", previous, 0, converted, dry_run=dry_run)
    new = [*converted.entries, *([title_change] if title_change is not None else [])]
    ids = {*converted.source_lines, *(str(e.get("id")) for e in new)}
    marker = import_entry(info, leaf, ids, now, _resume_state(converted))
    lines = [encode_entry(e) for e in [*new, marker]]
    if not dry_run:
        _append_lines(previous, lines, title_change, now)
    return ImportOutcome(info, "updated", previous, len(lines), converted, dry_run=dry_run)


def _rewrite_slot(handle: Any, title_change: Entry, now: str) -> None:
    """omp 18 renames in place: the fixed-size slot line is overwritten, the header is not (§1)."""
    handle.seek(0)
    first = handle.read(SLOT_BYTES)
    if len(first) == SLOT_BYTES and first.endswith(b"\n") and first.startswith(b'{"type":"title"'):
        handle.seek(0)
        handle.write(encode_slot(TitleSlot(title_change["title"], now, title_change.get("source"))))


def _last_title(existing: _Existing) -> str | None:
    titles = [e.get("title") for e in existing.ids.values() if e.get("type") == "title_change"]
    return titles[-1] if titles and isinstance(titles[-1], str) else None


def _conflict(existing: _Existing, converted: ConvertedSession) -> str | None:
    for entry in converted.entries:
        old = existing.ids.get(str(entry.get("id")))
        if old is not None and _comparable(old) != _comparable(entry):
            return f"entry {entry['id']} now converts differently"
    return None


def import_session(
    store: ForeignSessionStore,
    info: ForeignSessionInfo,
    *,
    root: Path | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    fallback_cwd: str | None = None,
    lossless: bool = True,
    dry_run: bool = False,
    known: dict[tuple[str, str], Path] | None = None,
) -> ImportOutcome:
    """Import ``info`` unless already done; bring an earlier import up to date (module docstring)."""
    root = root if root is not None else sessions_root()
    imports = known if known is not None else find_imports(root)
    previous = imports.get((info.source, info.path))
    reason = ""
    if previous is not None and previous.exists():
        resumed = _resumed_update(store, info, previous, dry_run) if lossless else None
        if resumed is not None:
            return resumed
        converted = store.convert(info, lossless=lossless)
        existing = _read_existing(previous)
        conflict = _conflict(existing, converted)
        if conflict is None:
            added = _append_update(existing, converted, info, dry_run)
            status: Status = "updated" if added else "unchanged"
            return ImportOutcome(info, status, previous, added, converted, dry_run=dry_run)
        reason = conflict
        path, added = persist_new(
            converted, info, session_dir=session_dir, root=root, fallback_cwd=fallback_cwd, dry_run=dry_run
        )
    else:  # a first import streams: memory stays bounded whatever the transcript's size
        path, added, converted = persist_streaming(
            store,
            info,
            session_dir=session_dir,
            root=root,
            fallback_cwd=fallback_cwd,
            lossless=lossless,
            dry_run=dry_run,
        )
    if not dry_run:
        imports[(info.source, info.path)] = path
    return ImportOutcome(
        info, "reimported" if reason else "imported", path, added, converted, reason, dry_run
    )


__all__ = [
    "IMPORT_TYPE",
    "ImportOutcome",
    "find_imports",
    "import_entry",
    "import_session",
    "last_import_data",
    "persist_new",
    "persist_streaming",
    "write_view_copy",
]
