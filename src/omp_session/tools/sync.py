"""Copy sessions between a directory of files and a database store, byte for byte (push, pull).

A session keeps its path: the file ``<root>/<project>/<name>.jsonl`` is the row of that path, as
omp's own SQL storage names it. Copies are idempotent: a session already identical at the target
is skipped, one whose target holds an older copy (a prefix of it: the source was appended to) is
brought up to date, and one that differs otherwise is never overwritten: it is reported as a
conflict. Every write is conditional on what was read (size-checked for rows, a locked, checked
rename for files), so a writer that appends meanwhile is never overwritten either.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from omp_session.errors import NoRowsUnderRootError, SessionError, SessionLockedError
from omp_session.store import StoredSession
from omp_session.store.blobs import MemoryBlobStore
from omp_session.store.file import FileStorage
from omp_session.store.regular import open_regular

#: Called once per session with (index, total, path) before it is copied.
Progress = Callable[[int, int, Path], None]


class DatabaseStore(Protocol):
    """What push and pull need of a database store (``PostgresStorage``)."""

    def list_directories(self, root: Path) -> list[Path]: ...

    def list_sessions(self, directory: Path) -> list[StoredSession]: ...

    def read_session(self, path: Path) -> bytes: ...

    def stat_session(self, path: Path) -> StoredSession | None: ...

    def write_session(
        self, path: Path, data: bytes, *, expected_size: int | None, mtime_ms: int | None = None
    ) -> None: ...

    def all_sessions(self) -> list[StoredSession]: ...


@dataclass
class SyncReport:
    """What a push or pull did: copied (new at the target), updated (the target was an older
    copy), identical (nothing to do), and skipped sessions with the reason."""

    copied: list[Path] = field(default_factory=list)
    updated: list[Path] = field(default_factory=list)
    identical: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "copied": [os.fspath(p) for p in self.copied],
            "updated": [os.fspath(p) for p in self.updated],
            "identical": [os.fspath(p) for p in self.identical],
            "skipped": [{"path": os.fspath(p), "reason": reason} for p, reason in self.skipped],
        }


def _outcome(source: bytes, target: bytes | None) -> str:
    if target is None:
        return "copy"
    if target == source:
        return "identical"
    return "update" if source.startswith(target) else "conflict"


def local_session_files(root: Path) -> list[Path]:
    """Every ``*.jsonl`` file under ``root`` (projects and the sub-agent sessions inside them)."""
    try:
        return sorted(path for path in root.rglob("*.jsonl") if path.is_file())
    except OSError:
        return []


def stored_sessions(store: DatabaseStore, root: Path) -> list[StoredSession]:
    """Every session row under ``root``: the root, its projects and their sub-directories."""
    folders: set[Path] = {root}
    pending = [root]
    while pending:  # directories nest (sub-agent sessions live inside a session's artifact dir)
        for folder in store.list_directories(pending.pop()):
            if folder not in folders:
                folders.add(folder)
                pending.append(folder)
    found = [row for folder in folders for row in store.list_sessions(folder)]
    return sorted(found, key=lambda row: row.path)


def stored_session_paths(store: DatabaseStore, root: Path) -> list[Path]:
    """The paths of :func:`stored_sessions`."""
    return [row.path for row in stored_sessions(store, root)]


def host_root(path: Path) -> Path:
    """The sessions root a stored session's path is under: up to its last ``sessions``
    directory (omp's roots end so: ``~/.omp/agent/sessions``, ``$XDG_DATA_HOME/omp/sessions``),
    else its project directory's parent. Used to group rows by host path and in hints."""
    for parent in path.parents:
        if parent.name == "sessions":
            return parent
    return path.parent.parent


def _re_rooted(path: Path, source_root: Path, target_root: Path) -> Path:
    return target_root / path.relative_to(source_root)


def push(
    root: Path, store: DatabaseStore, progress: Progress | None = None, *, as_root: Path | None = None
) -> SyncReport:
    """Copy every session file under ``root`` into ``store`` (see the module docstring). Each
    row keeps the file's mtime (``mtime_ms``). ``as_root``: the rows are named under that root
    instead of ``root`` (``<as_root>/<project>/<name>.jsonl``)."""
    local_root = Path(os.path.abspath(root))
    row_root = Path(os.path.abspath(as_root)) if as_root is not None else local_root

    def push_one(path: Path) -> str:
        key = _re_rooted(Path(os.path.abspath(path)), local_root, row_root)
        with os.fdopen(open_regular(path), "rb") as handle:  # the special-file rule: never blocks
            mtime_ms = os.fstat(handle.fileno()).st_mtime_ns // 1_000_000
            source = handle.read()
        target = store.read_session(key) if store.stat_session(key) is not None else None
        outcome = _outcome(source, target)
        if outcome in ("copy", "update"):
            expected = None if target is None else len(target)
            store.write_session(key, source, expected_size=expected, mtime_ms=mtime_ms)
        return outcome

    files = local_session_files(local_root)
    return _copy_each(files, push_one, "a writer has the session open in the database", progress)


def pull(
    root: Path, store: DatabaseStore, progress: Progress | None = None, *, as_root: Path | None = None
) -> SyncReport:
    """Copy every session row under ``root`` from ``store`` into files at their paths, each
    file given its row's mtime. ``as_root``: copy the rows under that root instead, into the same
    places under ``root``. Raises :class:`NoRowsUnderRootError` when there is no row under the
    root but rows under others (without ``as_root`` nothing could be restored)."""
    local_root = Path(os.path.abspath(root))
    row_root = Path(os.path.abspath(as_root)) if as_root is not None else local_root
    rows = stored_sessions(store, row_root)
    if not rows:
        counts = Counter(host_root(row.path) for row in store.all_sessions())
        if counts:
            raise NoRowsUnderRootError(row_root, sorted(counts.items(), key=lambda item: -item[1]))
    mtimes = {row.path: row.mtime for row in rows}

    def pull_one(path: Path) -> str:
        target = _re_rooted(path, row_root, local_root)
        outcome = _pull_one(target, store.read_session(path))
        if outcome in ("copy", "update"):
            stamp = round(mtimes[path] * 1000) * 1_000_000  # the row's mtime_ms, exactly
            os.utime(target, ns=(stamp, stamp))
        return outcome

    return _copy_each([row.path for row in rows], pull_one, "a writer has the file open", progress)


def _copy_each(
    paths: list[Path], copy_one: Callable[[Path], str], when_locked: str, progress: Progress | None
) -> SyncReport:
    """``copy_one`` for every path, its outcome recorded; a failure skips that session only."""
    report = SyncReport()
    for number, path in enumerate(paths):
        if progress is not None:
            progress(number, len(paths), path)
        try:
            outcome = copy_one(path)
        except SessionLockedError:
            report.skipped.append((path, when_locked))
            continue
        except (SessionError, OSError) as exc:
            report.skipped.append((path, str(exc)))
            continue
        _record(report, outcome, path)
    return report


def _pull_one(path: Path, source: bytes) -> str:
    storage = FileStorage(path, MemoryBlobStore())
    try:
        if path.exists():
            storage.lock()  # no omp-session writer appends while we compare and replace
            target: bytes | None = storage.read()
        else:
            target = None
        outcome = _outcome(source, target)
        if outcome in ("copy", "update"):
            storage.rewrite([source])  # temp file, fsync, checked rename
        return outcome
    finally:
        storage.close()


def _record(report: SyncReport, outcome: str, path: Path) -> None:
    if outcome == "copy":
        report.copied.append(path)
    elif outcome == "update":
        report.updated.append(path)
    elif outcome == "identical":
        report.identical.append(path)
    else:
        report.skipped.append((path, "differs from the target, which is not an older copy of it"))


__all__ = [
    "NoRowsUnderRootError",
    "SyncReport",
    "host_root",
    "local_session_files",
    "pull",
    "push",
    "stored_session_paths",
    "stored_sessions",
]
