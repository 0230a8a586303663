"""Turning what a user types into a session file or an entry id.

A SESSION argument is an existing file path, a session id, or a unique prefix of one, matched the
way omp's ``resolveResumableSession`` does (spec §6.9): case-insensitively against the header id,
the file base name, or the part of the base name after its last ``_``. The sessions of the
project directory of ``cwd`` are searched first, then every project under the sessions root.

Unlike omp, which silently takes the newest match, an ambiguous prefix raises
:class:`AmbiguousSessionError` listing the candidates: opening the wrong session is worse than
asking for two more characters.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omp_session.errors import (  # defined in errors; importable from here as before
    AmbiguousEntryError,
    AmbiguousSessionError,
    EntryNotFoundError,
    NoMatchingSessionError,
    SessionNotFoundError,
    UnstableEntryIdError,
)
from omp_session.store import SessionStorage
from omp_session.store.loading import read_header
from omp_session.store.paths import encode_session_dir_name, home_dir, sessions_root, temp_root
from omp_session.tools.catalog import Catalog
from omp_session.tools.listing import session_files, stored_header

__all__ = [
    "AmbiguousEntryError",
    "AmbiguousSessionError",
    "NoMatchingSessionError",
    "SessionCandidate",
    "UnstableEntryIdError",
    "project_dir",
    "resolve_entry_id",
    "resolve_session",
    "session_candidates",
    "short_entry_ids",
]


@dataclass(frozen=True)
class SessionCandidate:
    """A session file found while resolving: its path, header id and mtime."""

    path: Path
    id: str
    mtime: float

    def matches(self, query: str) -> bool:
        """omp's rule: a case-insensitive prefix of the id, the base name or the part after ``_``."""
        needle = query.lower()
        base = self.path.name.removesuffix(".jsonl").lower()
        tail = base.rsplit("_", 1)[-1]
        return any(name.startswith(needle) for name in (self.id.lower(), base, tail))


def project_dir(cwd: str | os.PathLike[str], root: Path | None = None) -> Path:
    """The session directory omp uses for ``cwd`` under ``root`` (§1.2), computed without side effects.

    Unlike :func:`omp_session.store.paths.default_session_dir` nothing is created or migrated: a reader
    must not change the store it reads.
    """
    base = root if root is not None else sessions_root()
    return base / encode_session_dir_name(cwd, home_dir(), temp_root())


def session_candidates(
    files: Iterable[Path], *, storage: SessionStorage | None = None
) -> list[SessionCandidate]:
    """Valid sessions among ``files`` (first line a session header; rows of a database
    ``storage``), newest mtime first. The ids of sessions the store catalog holds up to date come
    from it (nothing is indexed here); the others' first lines are read."""
    found: list[SessionCandidate] = []
    store = storage
    files = list(files)
    with Catalog(storage=storage) as catalog:
        known = catalog.known_ids(files)
    for path in files:
        hit = known.get(os.fspath(path))
        if hit is not None:
            found.append(SessionCandidate(path, hit[0], hit[1]))
            continue
        if store is not None:  # a database store: the row's first line and its mtime
            header, stat = stored_header(store, path), store.stat_session(path)
            if header is not None and stat is not None:
                found.append(SessionCandidate(path, str(header["id"]), stat.mtime))
            continue
        header = read_header(path)
        if header is None:
            continue
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        found.append(SessionCandidate(path, str(header["id"]), mtime))
    found.sort(key=lambda candidate: candidate.mtime, reverse=True)
    return found


def _pick(query: str, candidates: list[SessionCandidate]) -> Path | None:
    """The one candidate ``query`` names; an exact id wins over longer ids it prefixes."""
    exact = [c for c in candidates if c.id.lower() == query.lower()]
    if len({c.path for c in exact}) == 1:
        return exact[0].path
    matches = exact or [c for c in candidates if c.matches(query)]
    if not matches:
        return None
    if len({c.path for c in matches}) > 1:
        raise AmbiguousSessionError(query, matches)
    return matches[0].path


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.endswith(".jsonl") or text.startswith(("~", "."))


def resolve_session(
    query: str | os.PathLike[str],
    root: Path | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    storage: SessionStorage | None = None,
) -> Path:
    """The session file ``query`` names: an existing path, a session id or a unique prefix (in a
    database ``storage``: a row's path, id or prefix).

    Raises :class:`SessionNotFoundError` when nothing matches and :class:`AmbiguousSessionError`
    when a prefix matches several sessions.

    >>> resolve_session("/no/such/file.jsonl")
    Traceback (most recent call last):
    ...
    omp_session.errors.SessionNotFoundError: /no/such/file.jsonl: no such session file
    """
    text = os.fspath(query)
    path = Path(text).expanduser()
    store = storage
    if store is not None and store.session_exists(path.absolute()):
        return path.absolute()
    if store is None and path.exists():
        return path
    if not text or _looks_like_path(text):
        raise SessionNotFoundError(path)
    base = root if root is not None else sessions_root()
    local_dir = project_dir(cwd if cwd is not None else os.getcwd(), base)
    local = _pick(text, session_candidates(session_files(directory=local_dir, storage=store), storage=store))
    if local is not None:
        return local
    found = _pick(text, session_candidates(session_files(base, storage=store), storage=store))
    if found is None:
        raise NoMatchingSessionError(text, base)
    return found


#: Ids up to this long are shown whole; omp's own are 8 hex digits.
SHORT_ID = 12
#: The shortest tail shown for a long id (``…message-12``): shorter ones say too little.
_MIN_TAIL = 5


def _tails(entry_id: str) -> list[str]:
    """The tails of ``entry_id`` that start after one of its ``-``, shortest first."""
    return [entry_id[i + 1 :] for i in range(len(entry_id) - 1, -1, -1) if entry_id[i] == "-"]


def short_entry_ids(ids: Iterable[str]) -> dict[str, str]:
    """How to show each long id of one session (issue 30 #5): ``…`` and its shortest tail, starting
    after a ``-``, of at least 5 characters that no other id of the session ends with (Claude Code
    imports write ids like ``claude-c1a0de07-0000-4000-8000-000000000001-message-1``, half of every
    ``tree`` line). Ids of up to :data:`SHORT_ID` characters, and those with no such tail, are
    absent: shown whole. :func:`resolve_entry_id` accepts what is shown."""
    every = list(ids)
    long_ids = [entry_id for entry_id in every if len(entry_id) > SHORT_ID]
    if not long_ids:
        return {}
    counts: dict[str, int] = {}
    for entry_id in every:  # short ids too: the tail must name one id when typed back
        for tail in _tails(entry_id.lower()):
            counts[tail] = counts.get(tail, 0) + 1
    shown: dict[str, str] = {}
    for entry_id in long_ids:
        for tail in _tails(entry_id):
            if len(tail) >= _MIN_TAIL and counts[tail.lower()] == 1 and len(tail) + 1 < len(entry_id):
                shown[entry_id] = "…" + tail
                break
    return shown


def resolve_entry_id(
    entries_by_id: Mapping[str, Any], query: str, *, migrated_from: int | None = None
) -> str:
    """The entry id ``query`` names: an exact id, a unique (case-insensitive) id prefix, or a
    shortened id as :func:`short_entry_ids` shows it (``…message-1``: the id ending in
    ``-message-1``, the ``…`` optional).

    Raises :class:`EntryNotFoundError` (:class:`UnstableEntryIdError` when ``migrated_from`` says
    the file was version 1) or :class:`AmbiguousEntryError`.
    """
    if query in entries_by_id:
        return query
    needle = query.lower()
    matches = (
        [entry_id for entry_id in entries_by_id if entry_id.lower().startswith(needle)] if needle else []
    )
    tail = needle.removeprefix("…")
    if not matches and len(tail) >= _MIN_TAIL:
        matches = [entry_id for entry_id in entries_by_id if entry_id.lower().endswith("-" + tail)]
    if not matches:
        raise UnstableEntryIdError(query) if migrated_from == 1 else EntryNotFoundError(query)
    if len(matches) > 1:
        raise AmbiguousEntryError(query, matches)
    return matches[0]
