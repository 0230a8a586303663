"""Listing sessions (spec §6.9): one :class:`SessionInfo` per valid session file of a store.

The listing core, below the manager: ``SessionManager.list``/``list_all`` and the newest session of
``continue_recent`` are these functions, and ``tools/listing.py`` (the command line's, the
viewer's and check's listing) is the same core with its metadata cache plugged in
(``summaries=``). Which files (:func:`session_files`), what each holds (the one summary,
``summary.py``; omp 18's prefix listing, ``omp18.py``), in what order.

Without a cache a file listing reads what its fields need: each file's first lines (the header)
when listed, the rest of the file once when a field that depends on every entry (the message
count, the texts, the cost, the last activity) is first read, its summary continued from the
head's (:func:`~.summary.summarize_head`). What
the heads said is kept in memory by file version (``heads.py``, :data:`HEADS`), so a second
listing in the same process reads only the files that changed.

**Side effects:** none but those named per function (omp 18 dialects rename an orphaned backup
into place, as omp 18 does) and that in-memory cache of heads; no function here writes a
session or a cache file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from omp_session.dialects import NEWEST, Dialect, DialectChoice, explicit_dialect
from omp_session.errors import SessionError
from omp_session.format.codec import BOM, decode_line
from omp_session.format.header import is_session_header
from omp_session.format.title_slot import split_slot
from omp_session.store import SessionStorage, StoredSession
from omp_session.store.file_sessions import FileSessionStorage
from omp_session.store.listing import omp18
from omp_session.store.listing.heads import HEADS, HeadCache
from omp_session.store.listing.info import FileKey, SessionInfo, SessionList, fold_slot_record
from omp_session.store.listing.summary import session_info, summarize_bytes
from omp_session.store.loading import read_header
from omp_session.store.orphans import promote_orphaned_backups
from omp_session.store.paths import is_within, sessions_root
from omp_session.store.pins import load_pinned_session_ids, sort_pinned_first

__all__ = [
    "HEADS",
    "FileKey",
    "HeadCache",
    "SessionInfo",
    "SessionList",
    "Summaries",
    "SummaryCache",
    "file_entries",
    "find_most_recent_session",
    "fold_slot_record",
    "for_picker",
    "head_summaries",
    "list_all_sessions",
    "list_every_stored_session",
    "list_sessions",
    "most_recent_non_empty",
    "picker_dialect",
    "session_files",
    "session_info",
    "stored_header",
    "stored_summaries",
    "summarize_bytes",
]

#: How a file listing summarises the ``*.jsonl`` entries it found: ``(entries, the directory
#: listed, skipped)`` to the infos of the sessions among them (unreadable files are added to
#: ``skipped``). The default reads heads (:func:`head_summaries`, through :data:`HEADS`; a
#: :class:`HeadCache` of one's own: its ``summaries``); ``tools/listing.py`` plugs in its cache.
Summaries = Callable[[Sequence[os.DirEntry[str]], Path, list[tuple[str, str]]], list[SessionInfo]]


# -- which files --------------------------------------------------------------------------------------


def _jsonl_entries(
    directory: Path, root: Path | None, skipped: list[tuple[str, str]] | None = None
) -> list[os.DirEntry[str]]:
    """``*.jsonl`` regular files directly in ``directory`` (symlinks only when they stay in ``root``),
    in path order; entries that cannot be used are added to ``skipped``. Their ``stat()`` is one
    system call, and the file type comes from the directory listing itself."""
    found: list[os.DirEntry[str]] = []
    try:
        with os.scandir(directory) as entries:
            for item in entries:
                if not item.name.endswith(".jsonl") or len(item.name) <= len(".jsonl"):
                    continue
                try:
                    if not item.is_file():
                        if skipped is not None and not item.is_dir():
                            skipped.append(
                                (item.path, "not a regular file (a broken link or a special file)")
                            )
                        continue
                    if root is not None and item.is_symlink() and not is_within(root, item.path):
                        continue
                except OSError as exc:  # a symlink loop or a vanished entry: skip only this one
                    if skipped is not None:
                        skipped.append((item.path, exc.strerror or str(exc)))
                    continue
                found.append(item)
    except OSError:
        return []
    found.sort(key=lambda item: item.name)  # one directory: the order of the paths
    return found


def file_entries(
    root: Path | None, directory: Path | None, include_root_files: bool, skipped: list[tuple[str, str]]
) -> Iterator[os.DirEntry[str]]:
    """:func:`session_files` of a file store, as directory entries."""
    if directory is not None:
        yield from _jsonl_entries(directory, None, skipped)
        return
    base = root if root is not None else sessions_root()
    if include_root_files:
        yield from _jsonl_entries(base, base, skipped)
    for folder in _project_dirs(base):
        yield from _jsonl_entries(folder, base, skipped)


def _project_dirs(root: Path) -> list[Path]:
    found: list[Path] = []
    try:
        with os.scandir(root) as entries:
            for item in entries:
                try:
                    if item.is_dir() and (not item.is_symlink() or is_within(root, item.path)):
                        found.append(Path(item.path))
                except OSError:
                    continue
    except OSError:
        return []
    return sorted(found)


def session_files(
    root: Path | None = None,
    directory: Path | None = None,
    *,
    include_root_files: bool = False,
    storage: SessionStorage | None = None,
    skipped: list[tuple[str, str]] | None = None,
) -> Iterator[Path]:
    """Every ``*.jsonl`` file of one project ``directory``, or of every project under ``root``
    (the sessions root by default), valid sessions or not (``check`` wants the broken ones too).

    Sub-agent sessions inside artifact directories are not included, as in omp's ``list``; symlinks
    that lead outside ``root`` are skipped. ``include_root_files`` adds files lying directly in
    ``root`` (the viewer accepts a root that is one project's directory). In a database
    ``storage`` (default: files): its rows at those paths.
    """
    store = chosen_store(storage)
    if store is not None:
        yield from _stored_files(store, root, directory, include_root_files)
        return
    for entry in file_entries(root, directory, include_root_files, skipped if skipped is not None else []):
        yield Path(entry.path)


def chosen_store(storage: SessionStorage | None) -> SessionStorage | None:
    """The database store to list, or ``None`` for files: the default, and a file storage given
    (its tuning only says how a session is opened, so it lists as files do: omp 18's backups
    promoted, the heads read; listed as rows it promoted nothing, and `list` after a dropped
    session missed the backup omp puts back). A caller's store is passed in, never configured
    for the process."""
    return None if isinstance(storage, FileSessionStorage) else storage


def _stored_files(
    store: SessionStorage, root: Path | None, directory: Path | None, include_root_files: bool
) -> Iterator[Path]:
    if directory is not None:
        folders = [directory]
    else:
        base = root if root is not None else sessions_root()
        folders = ([base] if include_root_files else []) + sorted(store.list_directories(base))
    for folder in folders:
        yield from sorted(found.path for found in store.list_sessions(folder))


# -- what they hold -----------------------------------------------------------------------------------


class SummaryCache(Protocol):
    """Summaries kept between listings by file version (``tools/listing_cache.ListingCache``)."""

    def infos(self, directory: str) -> dict[str, tuple[FileKey, SessionInfo | None]]: ...
    def store_infos(self, items: Iterable[tuple[FileKey, SessionInfo | None, str]]) -> None: ...


def stored_summaries(
    store: SessionStorage, paths: Sequence[Path], cache: SummaryCache | None = None, under: str = ""
) -> list[SessionInfo]:
    """Summaries of sessions in a database store, each read in full unless ``cache`` (only one
    given by the caller, such as the viewer's in-memory one) holds its summary for the row's size
    and ``mtime_ms``. Those keys carry inode -1, which no file has, so a row never passes for a
    file of the same path."""
    cached = cache.infos(under) if cache is not None else {}
    infos: list[SessionInfo] = []
    fresh: list[tuple[FileKey, SessionInfo | None, str]] = []
    for path in paths:
        stat = store.stat_session(path)
        if stat is None:
            continue  # removed since it was listed
        key = FileKey(stat.size, round(stat.mtime * 1e9), -1, -1)
        hit = cached.get(os.fspath(path))
        if hit is not None and hit[0] == key:
            if hit[1] is not None:
                infos.append(hit[1])
            continue
        try:
            data = store.read_session(path)
        except SessionError:
            continue
        info = summarize_bytes(path, data, stat.mtime, len(data))
        fresh.append((key, info, os.fspath(path)))
        if info is not None:
            infos.append(info)
    if cache is not None:
        cache.store_infos(fresh)
    return infos


def _list_stored(store: SessionStorage, paths: list[Path], dialect: Dialect | None) -> list[SessionInfo]:
    if dialect is not None and dialect.listing.prefix_bytes is not None:
        return omp18.list_stored(store, paths, dialect.listing.prefix_bytes, dialect.listing.assistant_turns)
    return _newest_first(stored_summaries(store, paths))


class EveryRowStore(SessionStorage, Protocol):
    """A database store that can name every session it holds (``PostgresStorage``)."""

    def all_sessions(self) -> list[StoredSession]: ...


def list_every_stored_session(store: EveryRowStore, *, dialect: Dialect | None = None) -> SessionList:
    """Every session row of a database store, whatever its path prefix (another machine's root,
    another home), newest first; sub-agent sessions inside artifact directories are left out, as
    in :func:`list_all_sessions`. Writes nothing."""
    paths = {row.path for row in store.all_sessions()}
    top = sorted(path for path in paths if path.parent.with_name(path.parent.name + ".jsonl") not in paths)
    return _pinned_first(SessionList(_list_stored(store, top, dialect)), dialect)


def stored_header(store: SessionStorage, path: Path) -> dict[str, Any] | None:
    """The header of a session in ``store`` (its first line, after an omp 18 slot), or ``None``."""
    try:
        data = store.read_session(path).removeprefix(BOM)
        _slot, start = split_slot(data)
        end = data.find(b"\n", start)
        value = decode_line(data[start : end if end >= 0 else len(data)])
    except (SessionError, ValueError):
        return None
    return value if is_session_header(value) else None


def head_summaries(
    entries: Sequence[os.DirEntry[str]], under: Path, skipped: list[tuple[str, str]]
) -> list[SessionInfo]:
    """The sessions among ``entries`` from their heads (:func:`~.summary.read_head`), through the
    heads this process keeps (:data:`~.heads.HEADS`): a file unchanged since a listing read its
    head is not read again (one ``stat``). The rest of each is read on first use. Writes nothing
    but that in-memory cache."""
    return HEADS.summaries(entries, under, skipped)


def _newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda info: info.modified, reverse=True)


def _pinned_first(found: SessionList, dialect: Dialect | None) -> SessionList:
    """omp 18 lists pinned sessions (``<agent dir>/session-pins.json``) first, each group in
    recency order; omp 13.19 has no pins. Reads the pins file only under such a dialect."""
    if dialect is None or not dialect.listing.pinned_first:
        return found
    return SessionList(sort_pinned_first(found, load_pinned_session_ids()), found.skipped)


def _listed_files(
    entries: list[os.DirEntry[str]],
    under: Path,
    skipped: list[tuple[str, str]],
    dialect: Dialect | None,
    summaries: Summaries | None,
) -> SessionList:
    if dialect is not None and dialect.listing.prefix_bytes is not None:
        files = [Path(entry.path) for entry in entries]
        listed = omp18.list_files(files, dialect.listing.prefix_bytes, dialect.listing.assistant_turns)
        return _pinned_first(SessionList(listed, skipped), dialect)
    infos = (summaries or head_summaries)(entries, under, skipped)
    return _pinned_first(SessionList(_newest_first(infos), skipped), dialect)


def list_sessions(
    directory: Path | str,
    *,
    dialect: Dialect | None = None,
    storage: SessionStorage | None = None,
    summaries: Summaries | None = None,
) -> SessionList:
    """Every valid ``*.jsonl`` directly inside ``directory``, newest first (by mtime).

    A dialect whose listing reads a prefix (omp 18) lists as that omp does (``omp18.py``).
    Sessions of a database ``storage`` (default: files) are read from it, each
    whole. Files are summarised by ``summaries`` (default: from their heads, the rest read on
    first use). Writes nothing (but omp 18's backup rename, and what ``summaries`` writes).
    """
    base = Path(directory)
    store = chosen_store(storage)
    if store is not None:
        stored = _list_stored(store, list(session_files(directory=base, storage=store)), dialect)
        return _pinned_first(SessionList(stored), dialect)
    skipped: list[tuple[str, str]] = []
    if dialect is not None and dialect.listing.promote_orphaned_backups:
        promote_orphaned_backups(base)
    entries = list(file_entries(None, base, False, skipped))
    return _listed_files(entries, base, skipped, dialect, summaries)


def list_all_sessions(
    root: Path | str | None = None,
    *,
    dialect: Dialect | None = None,
    storage: SessionStorage | None = None,
    summaries: Summaries | None = None,
) -> SessionList:
    """Sessions of every project directory under the sessions root (XDG-aware, unlike omp §9 #16),
    newest first. Only project directories are scanned, not sub-agent sessions inside artifact
    directories. Writes what :func:`list_sessions` writes."""
    base = Path(root) if root is not None else sessions_root()
    store = chosen_store(storage)
    if store is not None:
        return _pinned_first(
            SessionList(_list_stored(store, list(session_files(base, storage=store)), dialect)), dialect
        )
    skipped: list[tuple[str, str]] = []
    entries = list(file_entries(base, None, False, skipped))
    return _listed_files(entries, base, skipped, dialect, summaries)


def picker_dialect(choice: DialectChoice) -> Dialect:
    """The dialect a picker list is made under: the one chosen when its listing counts
    ``assistantTurns`` (what the empty-session rule needs), else the newest omp's (18.3)."""
    chosen = explicit_dialect(choice)
    return chosen if chosen is not None and chosen.listing.assistant_turns else NEWEST


def for_picker(found: SessionList) -> SessionList:
    """``found`` without omp 18.3's empty sessions, pinned ones kept (``filterSessionsForPicker``);
    the order is kept (pinned first, when ``found`` came from an omp 18 listing). Reads the pins."""
    return SessionList(omp18.for_picker(found, load_pinned_session_ids()), found.skipped)


def most_recent_non_empty(
    directory: Path, *, dialect: Dialect, storage: SessionStorage | None = None
) -> Path | None:
    """omp 18.3's ``findMostRecentNonEmptySession``: the newest session of ``directory`` (by mtime,
    pins not considered) that is not empty (:func:`~omp_session.store.listing.omp18.is_empty_session`),
    as the listing of ``dialect`` (an omp 18 one) sees it. Reads only."""
    prefix = dialect.listing.prefix_bytes if dialect.listing.prefix_bytes is not None else 4096
    ruled = dialect if dialect.listing.assistant_turns else NEWEST
    store = chosen_store(storage)
    if store is not None:
        infos = _list_stored(store, list(session_files(directory=directory, storage=store)), ruled)
    else:
        if dialect.listing.promote_orphaned_backups:
            promote_orphaned_backups(directory)  # omp's scan of the directory does
        files = [Path(entry.path) for entry in file_entries(None, directory, False, [])]
        infos = omp18.list_files(files, prefix, assistant_turns=True)
    return next((Path(info.path) for info in infos if not omp18.is_empty_session(info)), None)


def find_most_recent_session(directory: Path | str, *, storage: SessionStorage | None = None) -> Path | None:
    """The newest-mtime ``*.jsonl`` whose first line is a valid header (any length, §9 #18)."""
    store = chosen_store(storage)
    if store is not None:
        paths = session_files(directory=Path(directory), storage=store)
        stored = [store.stat_session(path) for path in paths]
        for found in sorted((s for s in stored if s is not None), key=lambda s: s.mtime, reverse=True):
            if stored_header(store, found.path) is not None:
                return found.path
        return None
    best: tuple[float, Path] | None = None
    for path in session_files(directory=Path(directory)):
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if (best is None or mtime > best[0]) and read_header(path) is not None:
            best = (mtime, path)
    return best[1] if best else None
