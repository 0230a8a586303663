"""The sessions under a root, as the index page lists them, and safe lookup of one session by URL.

A root is laid out as omp lays out its sessions directory: ``<root>/<encoded cwd>/<file>.jsonl``;
files directly in the root are listed too (``--dir`` may point at one project's directory). Each
file is parsed once and its summary cached until its size or mtime changes, so listing thousands of
sessions costs a ``stat`` per file after the first request.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omp_session.errors import SessionError
from omp_session.format.codec import decode_lines
from omp_session.format.ids import iso_to_ms
from omp_session.model.usage import UsageStatistics
from omp_session.store.configured import configured_storage, session_storage, stored_session_exists
from omp_session.store.paths import is_within, validate_name
from omp_session.tools.listing import summarize_records

__all__ = ["SessionCatalog", "SessionSummary", "resolve_ref"]

#: A session URL names at most ``<project>/<sub-dir>/<file>`` (sub-agent sessions live one level down).
_MAX_REF_PARTS = 3


@dataclass(frozen=True)
class SessionSummary:
    """One row of the index."""

    ref: str
    project: str
    path: Path
    id: str
    cwd: str
    title: str
    first_message: str
    created: datetime | None
    modified: datetime
    #: The newest entry timestamp, else ``modified``: copies and checkouts reset mtimes, entries keep
    #: their times, so this is what the index sorts by (mtime breaks ties).
    last_activity: datetime
    mtime_ns: int
    message_count: int
    size: int
    cost: float
    parent_session: str | None


def resolve_ref(root: Path, ref: str) -> Path | None:
    """The session file a URL's ``ref`` names, or ``None`` if it could leave ``root``.

    Refused: empty parts, ``.``/``..``, backslashes, NUL, more than three parts, anything not ending in
    ``.jsonl``, and paths whose real location (symlinks followed) is outside ``root``.
    """
    parts = ref.split("/")
    if not 1 <= len(parts) <= _MAX_REF_PARTS or not parts[-1].endswith(".jsonl"):
        return None
    try:
        for part in parts:
            validate_name(part)
    except ValueError:
        return None
    candidate = root.joinpath(*parts)
    if not is_within(root, candidate) or not stored_session_exists(candidate):
        return None
    return candidate


def _last_activity(records: list[dict[str, Any]]) -> datetime | None:
    stamps = [ms for record in records[1:] if (ms := iso_to_ms(record.get("timestamp"))) is not None]
    return datetime.fromtimestamp(max(stamps) / 1000, timezone.utc) if stamps else None


def summarize_file(root: Path, path: Path, data: bytes, mtime_ns: int) -> SessionSummary | None:
    """Summarise one session file (``None`` if it has no valid header)."""
    records = decode_lines(data).records
    info = summarize_records(path, records, mtime_ns / 1e9)
    if info is None:
        return None
    ref = path.relative_to(root).as_posix()
    project = ref.rsplit("/", 1)[0] if "/" in ref else ""
    title = info.title or info.first_message
    return SessionSummary(
        ref=ref,
        project=project,
        path=path,
        id=info.id,
        cwd=info.cwd,
        title=title,
        first_message=info.first_message,
        created=info.created,
        modified=info.modified,
        last_activity=_last_activity(records) or info.modified,
        mtime_ns=mtime_ns,
        message_count=info.message_count,
        size=len(data),
        cost=UsageStatistics.of(records[1:]).cost,
        parent_session=info.parent_session_path,
    )


class SessionCatalog:
    """Cached summaries of every session under ``root`` (thread-safe; never writes)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[Path, tuple[int, int, SessionSummary | None]] = {}
        self._lock = threading.Lock()

    def _candidates(self) -> list[Path]:
        """``*.jsonl`` files in the root and in its project directories, symlinks kept inside."""
        store = configured_storage()
        if store is not None:  # a database store: its rows under the root
            folders = [self.root, *store.list_directories(self.root)]
            return [found.path for folder in folders for found in store.list_sessions(folder)]
        found: list[Path] = []
        directories = [self.root]
        try:
            with os.scandir(self.root) as top:
                for item in top:
                    if item.is_dir() and (not item.is_symlink() or is_within(self.root, item.path)):
                        directories.append(Path(item.path))
        except OSError:
            return []
        for directory in directories:
            try:
                with os.scandir(directory) as listing:
                    for item in listing:
                        if not item.name.endswith(".jsonl") or not item.is_file():
                            continue
                        if item.is_symlink() and not is_within(self.root, item.path):
                            continue
                        found.append(Path(item.path))
            except OSError:
                continue
        return found

    def _summary(self, path: Path) -> SessionSummary | None:
        store = session_storage()
        stat = store.stat_session(path)
        if stat is None:
            return None
        mtime_ns = round(stat.mtime * 1e9)
        with self._lock:
            cached = self._cache.get(path)
        if cached is not None and cached[0] == mtime_ns and cached[1] == stat.size:
            return cached[2]
        try:
            data = store.read_session(path)
        except (OSError, SessionError):
            return None
        summary = summarize_file(self.root, path, data, mtime_ns)
        with self._lock:
            self._cache[path] = (mtime_ns, stat.size, summary)
        return summary

    def sessions(self) -> list[SessionSummary]:
        """Every valid session under the root, newest (by file mtime) first."""
        summaries = [s for path in self._candidates() if (s := self._summary(path)) is not None]
        return sorted(summaries, key=lambda s: (s.last_activity, s.modified), reverse=True)

    def locate(self, ref: str) -> Path | None:
        """The file of ``ref`` if it is a session inside the root (see :func:`resolve_ref`)."""
        return resolve_ref(self.root, ref)

    def ref_of(self, path: str | os.PathLike[str]) -> str | None:
        """The URL ref of a path inside the root, else ``None``."""
        candidate = Path(path)
        if not candidate.is_absolute() or not is_within(self.root, candidate):
            return None
        try:
            ref = Path(os.path.realpath(candidate)).relative_to(os.path.realpath(self.root)).as_posix()
        except ValueError:
            return None
        return ref if resolve_ref(self.root, ref) is not None else None

    def parent_ref(self, parent_session: str) -> str | None:
        """The ref of a header's ``parentSession``: a file path (branched sessions; also found by its
        ``<project>/<file>`` when the tree was copied from another machine) or a session id (forks)."""
        if "/" in parent_session:
            found = self.ref_of(parent_session)
            if found is None:
                tail = "/".join(Path(parent_session).parts[-2:])
                found = tail if resolve_ref(self.root, tail) is not None else None
            return found
        return next((s.ref for s in self.sessions() if s.id == parent_session), None)
