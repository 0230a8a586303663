"""An imported omp session on disk: writing it new, appending to it, finding its import markers.

The ``foreign_session_import`` custom entry (omp's ``appendCustomEntry``, spec importers §3) marks
a session as imported from a source; :func:`find_imports` and :func:`last_import_data` find those
entries by a byte search (``mmap``), parsing only the marker lines. Entries are encoded by
:func:`encode_entry`, which writes raw source lines verbatim.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from omp_session.errors import CorruptSessionError
from omp_session.format.codec import encode_line
from omp_session.format.entries import (
    FOREIGN_SESSION_IMPORT,
    IMPORT_MARKER_BYTES,
    import_origin,
    import_origin_of,
)
from omp_session.format.javascript import holds_float
from omp_session.format.title_slot import SLOT_BYTES, TitleSlot, encode_slot
from omp_session.importers.base import ConvertedSession, ForeignSessionInfo, clean_title, fresh_entry_id
from omp_session.store.atomic_files import fsync_directory
from omp_session.store.lock import try_lock
from omp_session.store.regular import regular_file

Entry = dict[str, Any]
IMPORT_TYPE = FOREIGN_SESSION_IMPORT
MARKER = IMPORT_MARKER_BYTES


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


def encode_entries(entries: list[Entry]) -> list[bytes]:
    """The lines of ``entries`` (:func:`encode_entry`); an entry its converter proved float-free
    (an :class:`~omp_session.importers.base.EntryBatch`) is written with ``orjson.dumps`` alone,
    without the float walk."""
    flags = getattr(entries, "float_free", None)
    if flags is None:
        return [encode_entry(entry) for entry in entries]
    dumps, option = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    lines: list[bytes] = []
    for entry, float_free in zip(entries, flags, strict=True):
        if float_free:
            try:
                lines.append(dumps(entry, option=option))
                continue
            except (TypeError, RecursionError):
                pass  # a lone surrogate or an integer beyond 64 bits: the exact encoder below
        lines.append(encode_entry(entry))
    return lines


_IOV_MAX = 1024  # POSIX guarantees at least 16; Linux allows 1024


def write_all(fd: int, chunks: list[bytes]) -> None:
    """Write ``chunks`` in order at the file's offset with ``writev`` (no joined copy of them),
    in batches the kernel accepts, going on after a partial write."""
    pending: list[bytes | memoryview] = list(chunks)
    while pending:
        batch = pending[:_IOV_MAX]
        written = os.writev(fd, batch)
        done = 0
        for chunk in batch:
            if written < len(chunk):
                break
            written -= len(chunk)
            done += 1
        if done < len(batch) and written:
            pending[done] = memoryview(pending[done])[written:]
        del pending[:done]


def write_new(
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


def find_imports(root: Path) -> dict[tuple[str, str], Path]:
    """``(source, sourcePath)`` → the newest omp session under ``root`` imported from it.

    The store catalog answers for the files it holds up to date (:func:`_catalogued_imports`);
    the others are searched for the marker bytes (``mmap``), only the marker lines parsed.
    """
    paths = [
        Path(directory) / name
        for directory, _, names in os.walk(root)
        for name in names
        if name.endswith(".jsonl")
    ]
    catalogued = _catalogued_imports(paths)
    found: dict[tuple[str, str], tuple[float, Path]] = {}
    for path in paths:
        held = catalogued.get(os.fspath(path))
        if held is not None:
            keys, mtime = held
        else:
            try:
                markers = list(import_markers(path))
                mtime = path.stat().st_mtime if markers else 0.0
            except (OSError, CorruptSessionError):  # gone, unreadable, or not a regular file
                continue
            keys = [import_origin_of(data) for data in markers]
        for key in keys:
            if key not in found or found[key][0] < mtime:
                found[key] = (mtime, path)
    return {key: path for key, (_, path) in found.items()}


def _catalogued_imports(paths: list[Path]) -> dict[str, tuple[list[tuple[str, str]], float]]:
    """The import markers the store catalog noted of the files of ``paths`` it holds up to date
    (``Catalog.known_imports``: one ``stat`` each, nothing read); ``{}`` without a catalog: an
    import never creates one (building it would cost far more than the scan)."""
    from omp_session.tools.catalog import Catalog  # (the catalog's imports, only when one exists)
    from omp_session.tools.listing_cache import ListingCache, cache_path

    if not paths or not cache_path().is_file():
        return {}
    cache = ListingCache()
    try:
        with Catalog(cache) as catalog:
            return catalog.known_imports(paths)
    finally:
        cache.close()


def import_markers(path: Path) -> Iterator[dict[str, Any]]:
    """The ``data`` of each ``foreign_session_import`` entry of a session, the newest first."""
    with regular_file(path) as handle:  # a FIFO under the sessions root never blocks an import
        if os.fstat(handle.fileno()).st_size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            end = len(view)
            while (found := view.rfind(MARKER, 0, end)) >= 0:
                start = view.rfind(b"\n", 0, found) + 1
                stop = view.find(b"\n", found)
                end = start
                try:
                    entry = orjson.loads(view[start : stop if stop >= 0 else len(view)])
                except orjson.JSONDecodeError:
                    continue
                if isinstance(entry, dict) and import_origin(entry) is not None:
                    yield entry["data"]


def resume_state(converted: ConvertedSession) -> dict[str, Any] | None:
    """The conversion's resume state plus the title it gave the session (an update compares it)."""
    if converted.resume is None:
        return None
    title = clean_title(converted.title) if converted.title else None
    return {**converted.resume, "title": title or None}


def append_lines(path: Path, lines: list[bytes], title_change: Entry | None, now: str) -> None:
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
            rewrite_slot(handle, title_change, now)
        handle.flush()
        os.fsync(handle.fileno())


def last_import_data(path: Path) -> dict[str, Any] | None:
    """The ``data`` of the last ``foreign_session_import`` entry of a session (one line parsed)."""
    return next(import_markers(path), None)


def rewrite_slot(handle: Any, title_change: Entry, now: str) -> None:
    """omp 18 renames in place: the fixed-size slot line is overwritten, the header is not (§1)."""
    handle.seek(0)
    first = handle.read(SLOT_BYTES)
    if len(first) == SLOT_BYTES and first.endswith(b"\n") and first.startswith(b'{"type":"title"'):
        handle.seek(0)
        handle.write(encode_slot(TitleSlot(title_change["title"], now, title_change.get("source"))))


__all__ = [
    "IMPORT_TYPE",
    "MARKER",
    "append_lines",
    "encode_entries",
    "encode_entry",
    "find_imports",
    "import_entry",
    "import_markers",
    "last_import_data",
    "resume_state",
    "rewrite_slot",
    "write_all",
    "write_new",
]
