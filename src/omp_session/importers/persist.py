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
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from omp_session.dialects import OMP_18_2
from omp_session.errors import ForeignSessionError
from omp_session.format.codec import encode_line
from omp_session.format.ids import now_iso
from omp_session.format.title_slot import TitleSlot, encode_slot
from omp_session.importers.base import ConvertedSession, ForeignSessionInfo, ForeignSessionStore
from omp_session.importers.formats import require_format
from omp_session.importers.session_file import (
    IMPORT_TYPE,
    encode_entries,
    encode_entry,
    find_imports,
    import_entry,
    resume_state,
    write_all,
    write_new,
)
from omp_session.importers.updates import (
    ImportOutcome,
    Status,
    append_update,
    conflict,
    read_existing,
    resumed_update,
)
from omp_session.store.atomic_files import fsync_directory
from omp_session.store.paths import (
    encode_session_dir_name,
    home_dir,
    session_file_path,
    sessions_root,
    temp_root,
)

Entry = dict[str, Any]


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

    When the store can tell the header beforehand (``header_hint``), the slot and the header are
    written first and each entry goes straight after them as the conversion finishes it. Else
    (or when the hint proves wrong: a transcript growing meanwhile) the entries are spooled to a
    temporary file and copied after the header in the kernel. Either way the file is what
    :func:`persist_new` writes.
    """
    base = Path(session_dir) if session_dir is not None else (root if root is not None else sessions_root())
    hint = None if dry_run else store.header_hint(info)
    written = 0
    if not dry_run:
        base.mkdir(parents=True, exist_ok=True)
    now, session_id = now_iso(), OMP_18_2.new_session_id()
    planned: _Planned | None = None
    if hint is not None:
        guess = ConvertedSession(info.source, hint.cwd, [], None, hint.title, hint.title_source)
        planned = _plan(guess, session_dir, root, fallback_cwd, now, session_id)
        planned.path.parent.mkdir(parents=True, exist_ok=True)
    temp = planned.temp if planned is not None else None
    spool_dir = None if dry_run else base
    # Unbuffered: each batch of lines goes to the kernel in one writev, never copied into a buffer.
    with tempfile.TemporaryFile(dir=spool_dir, buffering=0) if temp is None else _create(temp) as out:
        fd = out.fileno()
        if planned is not None:
            write_all(fd, [planned.head])

        def sink(entries: list[Entry]) -> None:
            nonlocal written
            written += len(entries)
            if not dry_run:
                write_all(fd, encode_entries(entries))

        try:
            converted = store.convert_streaming(info, sink, lossless=lossless)
            final = _plan(converted, session_dir, root, fallback_cwd, now, session_id)
            if planned is not None and final == planned:  # the hint was right: finish in place
                end = _tail(converted, info, now)
                write_all(fd, end)
                os.fsync(fd)
                os.link(planned.temp, planned.path)
                fsync_directory(planned.path.parent)
                return planned.path, written + len(end), converted
            out.seek(len(planned.head) if planned is not None else 0)
            path, count = _persist(
                converted, info, (), written, session_dir, root, fallback_cwd, dry_run, out, now, session_id
            )
        finally:
            if temp is not None:
                temp.unlink(missing_ok=True)
    return path, count, converted


def _create(path: Path) -> IO[bytes]:
    """A new file for writing and reading that must not exist yet (a session's temp file)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    return os.fdopen(fd, "w+b", buffering=0)


@dataclass(frozen=True)
class _Planned:
    """Where a session goes and how it starts: the title slot and header lines, its path."""

    head: bytes
    path: Path

    @property
    def temp(self) -> Path:
        return self.path.with_name(f".{self.path.name}.stream.tmp")


def _plan(
    converted: ConvertedSession,
    session_dir: str | os.PathLike[str] | None,
    root: Path | None,
    fallback_cwd: str | None,
    now: str,
    session_id: str,
) -> _Planned:
    """The session's path and first two lines (omp 18: the 256-byte title slot, the v3 header)."""
    if fallback_cwd is not None and not os.path.isdir(converted.cwd):
        converted.cwd = fallback_cwd  # omp's moveTo(fallbackCwd) for a cwd that no longer exists
    header = converted.header(session_id, now)
    if session_dir is not None:
        directory = Path(session_dir)
    else:  # omp's per-project directory, computed without creating it (a dry run writes nothing)
        base = root if root is not None else sessions_root()
        directory = base / encode_session_dir_name(converted.cwd, home_dir(), temp_root())
    slot = encode_slot(TitleSlot(header.get("title") or "", now, header.get("titleSource")))
    return _Planned(slot + encode_line(header), session_file_path(directory, now, header["id"]))


def _tail(converted: ConvertedSession, info: ForeignSessionInfo, now: str) -> list[bytes]:
    """The lines after the entries: the ``title_change`` (if titled) and the import marker."""
    entries, leaf = converted.with_title(now)
    tail = entries[len(converted.entries) :]
    ids = {*converted.source_lines, *(str(e.get("id")) for e in entries)}
    marker = import_entry(info, leaf, ids, now, resume_state(converted))
    return [encode_line(e) for e in [*tail, marker]]


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
    now: str | None = None,
    session_id: str | None = None,
) -> tuple[Path, int]:
    """Write the session: the slot, the header, ``body`` (or the rest of ``spool``), the tail."""
    now = now or now_iso()
    end = _tail(converted, info, now)
    planned = _plan(converted, session_dir, root, fallback_cwd, now, session_id or OMP_18_2.new_session_id())
    if not dry_run:
        planned.path.parent.mkdir(parents=True, exist_ok=True)
        if spool is not None:  # a spool file: copied in the kernel, not through Python
            write_new(planned.path, [planned.head], spool, end)
        else:
            write_new(planned.path, itertools.chain([planned.head], body, end))
    return planned.path, body_count + len(end)


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
    """Import ``info`` unless already done; bring an earlier import up to date (module docstring).

    Raises :class:`ForeignSessionError` (naming the source) when the source is recognisably
    another agent's format (``importers/formats.py``, naming that format), cannot be read, or the
    session cannot be written, for example under a project directory whose name the recorded cwd
    makes too long for the file system."""
    try:
        require_format(info.source, info.path)  # a Codex rollout is not imported as Claude's (issue 25)
        return _import_session(store, info, root, session_dir, fallback_cwd, lossless, dry_run, known)
    except OSError as error:
        raise ForeignSessionError(info.path, f"Unable to import {info.path}: {error}") from error


def _import_session(
    store: ForeignSessionStore,
    info: ForeignSessionInfo,
    root: Path | None,
    session_dir: str | os.PathLike[str] | None,
    fallback_cwd: str | None,
    lossless: bool,
    dry_run: bool,
    known: dict[tuple[str, str], Path] | None,
) -> ImportOutcome:
    root = root if root is not None else sessions_root()
    imports = known if known is not None else find_imports(root)
    previous = imports.get((info.source, info.path))
    reason = ""
    if previous is not None and previous.exists():
        resumed = resumed_update(store, info, previous, dry_run) if lossless else None
        if resumed is not None:
            return resumed
        converted = store.convert(info, lossless=lossless)
        existing = read_existing(previous)
        changed = conflict(existing, converted)
        if changed is None:
            added = append_update(existing, converted, info, dry_run)
            status: Status = "updated" if added else "unchanged"
            return ImportOutcome(info, status, previous, added, converted, dry_run=dry_run)
        reason = changed
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
    "persist_new",
    "persist_streaming",
    "write_view_copy",
]
