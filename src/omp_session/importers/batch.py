"""Choosing which foreign sessions to import, and importing many with a per-session verdict.

The command line and the viewer call these; each session's failure is reported, never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from omp_session.errors import ForeignSessionError, SessionError
from omp_session.importers.base import ForeignSessionInfo, ForeignSessionStore
from omp_session.importers.formats import left_out
from omp_session.importers.persist import ImportOutcome, find_imports, import_session
from omp_session.importers.stores import make_store


@dataclass
class Selection:
    """The sessions to import, and the store that converts each."""

    sessions: list[tuple[ForeignSessionStore, ForeignSessionInfo]]
    #: Sessions left out, with why: too old for ``--since``, or a ``*.jsonl`` file of the store
    #: that its listing left out (a FIFO, an empty file, another agent's format, ...).
    skipped: list[tuple[ForeignSessionInfo, str]]


@dataclass
class Failure:
    info: ForeignSessionInfo
    reason: str


def select(
    source: str, paths: Sequence[str], *, all_sessions: bool, since_ms: float | None = None
) -> Selection:
    """``paths``: transcript files, or store roots (every session in them); ``all_sessions``: the
    default store. ``since_ms`` keeps sessions modified at or after that time."""
    found: list[tuple[ForeignSessionStore, ForeignSessionInfo]] = []
    left: list[tuple[ForeignSessionInfo, str]] = []
    default = make_store(source)

    def listed(store: ForeignSessionStore, root: Path) -> None:
        infos = store.list()
        found.extend((store, info) for info in infos)
        # The files the listing left out, with why (issue 25: `import --all` says what it skipped).
        names = {os.path.abspath(info.path) for info in infos}
        left.extend((_unlisted(source, path), reason) for path, reason in left_out(source, root, names))

    if all_sessions:
        listed(default, default.root)
    for path in paths:
        if os.path.isdir(path):
            listed(make_store(source, root=path), Path(os.path.abspath(path)))
        elif os.path.exists(path):
            found.append((default, default.info_for(path)))
        else:
            raise FileNotFoundError(2, "No such file or directory", path)
    unique: dict[str, tuple[ForeignSessionStore, ForeignSessionInfo]] = {}
    for store, info in found:
        unique.setdefault(info.path, (store, info))
    chosen: list[tuple[ForeignSessionStore, ForeignSessionInfo]] = []
    skipped: list[tuple[ForeignSessionInfo, str]] = []
    for store, info in unique.values():
        if since_ms is not None and info.modified_ms < since_ms:
            skipped.append((info, "older than --since"))
        else:
            chosen.append((store, info))
    skipped.extend(item for item in left if item[0].path not in unique)
    return Selection(chosen, skipped)


def _unlisted(source: str, path: Path) -> ForeignSessionInfo:
    """A placeholder info for a file the store's listing left out (for the report only)."""
    return ForeignSessionInfo(source, path.stem, os.fspath(path), "", 0, 0)  # type: ignore[arg-type]


def import_many(
    selection: Selection,
    *,
    root: Path,
    fallback_cwd: str | None,
    lossless: bool = True,
    dry_run: bool = False,
) -> Iterator[ImportOutcome | Failure]:
    """Import each selected session in turn (the sessions root is searched once for earlier imports)."""
    known = find_imports(root)
    for store, info in selection.sessions:
        try:
            yield import_session(
                store,
                info,
                root=root,
                fallback_cwd=fallback_cwd,
                lossless=lossless,
                dry_run=dry_run,
                known=known,
            )
        except (ForeignSessionError, SessionError, OSError) as error:
            yield Failure(info, " ".join(str(error).split()))


__all__ = ["Failure", "Selection", "import_many", "select"]
