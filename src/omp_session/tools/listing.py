"""Listing sessions with the metadata cache (spec §6.9): the command line's, the viewer's and
check's listing, which show every field of every session.

It is the listing core (:mod:`omp_session.store.listing`: which files, the one summary, omp 18's
prefix listing; ``SessionManager.list`` is that core without a cache file) with the cache of
``listing_cache.py`` plugged in: a summary is computed in one pass over the file and kept until the
file's size, mtime, ctime or inode change, so a warm listing of thousands of sessions costs one
``stat`` per file. **Side effects:** listing writes that cache (``<agent dir>/cache/session-list.sqlite3``,
or the ``cache`` argument); it never writes a session.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from omp_session.dialects import Dialect
from omp_session.gcpause import gc_paused
from omp_session.model.message_text import message_text
from omp_session.store import SessionStorage
from omp_session.store import listing as core
from omp_session.store.listing import (
    SessionInfo,
    SessionList,
    find_most_recent_session,
    fold_slot_record,
    for_picker,
    list_every_stored_session,
    most_recent_non_empty,
    picker_dialect,
    session_files,
    session_info,
    stored_header,
)
from omp_session.store.listing.summary import read_file, summarize_bytes
from omp_session.tools.listing_cache import FileKey, ListingCache

__all__ = [
    "SessionInfo",
    "SessionList",
    "StoreState",
    "find_most_recent_session",
    "fold_slot_record",
    "for_picker",
    "list_all_sessions",
    "list_every_stored_session",
    "list_sessions",
    "list_store",
    "message_text",
    "most_recent_non_empty",
    "picker_dialect",
    "session_files",
    "session_info",
    "store_state",
    "stored_header",
]


def _cached(cache: ListingCache | None) -> core.Summaries:
    """The core's file summaries through ``cache`` (default: the agent dir's, opened and closed
    around the listing)."""

    def summaries(
        entries: Sequence[os.DirEntry[str]], under: Path, skipped: list[tuple[str, str]]
    ) -> list[SessionInfo]:
        return _summaries(entries, under, cache, skipped)

    return summaries


def _summaries(
    entries: Sequence[os.DirEntry[str]],
    under: Path,
    cache: ListingCache | None,
    skipped: list[tuple[str, str]],
) -> list[SessionInfo]:
    own_cache = cache is None
    cache = cache if cache is not None else ListingCache()
    try:
        with gc_paused():  # thousands of acyclic objects at once: see gcpause.py
            infos, fresh = _cached_or_summarized(entries, cache.infos(os.fspath(under)), skipped)
        cache.store_infos(fresh)
    finally:
        if own_cache:
            cache.close()
    return infos


def _cached_or_summarized(
    entries: Sequence[os.DirEntry[str]],
    cached: dict[str, tuple[FileKey, SessionInfo | None]],
    skipped: list[tuple[str, str]],
) -> tuple[list[SessionInfo], list[tuple[FileKey, SessionInfo | None, str]]]:
    """The infos of ``entries`` (the cached one where the file is unchanged), and the new ones."""
    infos: list[SessionInfo] = []
    fresh: list[tuple[FileKey, SessionInfo | None, str]] = []
    for entry in entries:
        text_path = entry.path
        try:
            stat = entry.stat()
        except OSError:
            continue
        key = FileKey.of(stat)
        hit = cached.get(text_path)
        if hit is not None and hit[0] == key:
            if hit[1] is not None:
                infos.append(hit[1])
            continue
        read = read_file(text_path)
        if read is None:
            skipped.append((text_path, "cannot be read"))
            continue
        data, read_stat = read
        info = summarize_bytes(text_path, data, read_stat.st_mtime, read_stat.st_size)
        fresh.append((FileKey.of(read_stat), info, text_path))
        if info is not None:
            infos.append(info)
    return infos, fresh


def list_sessions(
    directory: Path | str,
    *,
    cache: ListingCache | None = None,
    dialect: Dialect | None = None,
    storage: SessionStorage | None = None,
) -> SessionList:
    """Every valid ``*.jsonl`` directly inside ``directory``, newest first. Writes the listing cache.

    A dialect whose listing reads a prefix (omp 18) lists as that omp does (``store/listing/omp18.py``),
    without the cache: it then writes nothing. Sessions of a database ``storage`` (default:
    files) are read from it.
    """
    return core.list_sessions(directory, dialect=dialect, storage=storage, summaries=_cached(cache))


def list_all_sessions(
    root: Path | str | None = None,
    *,
    cache: ListingCache | None = None,
    dialect: Dialect | None = None,
    storage: SessionStorage | None = None,
) -> SessionList:
    """Sessions of every project directory under the sessions root (XDG-aware, unlike omp §9 #16),
    newest first. Only project directories are scanned, not sub-agent sessions inside artifact
    directories. Writes the listing cache (not under omp 18's prefix listing)."""
    return core.list_all_sessions(root, dialect=dialect, storage=storage, summaries=_cached(cache))


def list_store(
    root: Path | str, *, cache: ListingCache | None = None, storage: SessionStorage | None = None
) -> SessionList:
    """Sessions under a viewer root: files in ``root`` itself and in its project directories,
    most recent activity first (mtime breaks ties). Writes the listing cache."""
    base = Path(root)
    store = storage
    skipped: list[tuple[str, str]] = []
    if store is not None:
        paths = list(session_files(base, include_root_files=True, storage=store))
        infos = core.stored_summaries(store, paths, cache, os.fspath(base))
    else:
        infos = _summaries(list(core.file_entries(base, None, True, skipped)), base, cache, skipped)
    ordered = sorted(
        infos, key=lambda info: (info.last_activity or info.modified, info.modified), reverse=True
    )
    return SessionList(ordered, skipped)


#: What :func:`list_store` of a root read, without reading it: see :func:`store_state`.
StoreState = tuple[tuple[tuple[str, FileKey | None], ...], tuple[tuple[str, str], ...]]


def store_state(root: Path | str, storage: SessionStorage | None = None) -> StoreState | None:
    """What :func:`list_store` of ``root`` depends on, found with one ``stat`` per file and no
    read: the files it would list with their :class:`FileKey`, and the entries its scan skips.
    Two equal states list the same sessions, so a long-lived reader (the viewer) can keep a
    listing until the state changes. ``None`` for a database store (its rows are listed afresh)."""
    if storage is not None:
        return None
    skipped: list[tuple[str, str]] = []
    files: list[tuple[str, FileKey | None]] = []
    for entry in core.file_entries(Path(root), None, True, skipped):
        try:
            files.append((entry.path, FileKey.of(entry.stat())))
        except OSError:
            files.append((entry.path, None))
    return tuple(files), tuple(skipped)
