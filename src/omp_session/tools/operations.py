"""Small write operations on a session file, each one ``SessionManager`` call behind an open/close.

They are what ``omp-session fork`` and ``omp-session label`` run. Opening for writing takes the
session's writer lock, so they fail with ``SessionLockedError`` instead of racing another
omp-session writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omp_session.errors import SessionError, SessionNotFoundError
from omp_session.manager.session_manager import SessionManager
from omp_session.store import SessionStorage
from omp_session.store.file_sessions import stored_session_exists
from omp_session.tools.resolve import resolve_entry_id

__all__ = ["fork_session", "set_label"]


def _open_existing(path: Path | str, storage: SessionStorage | None) -> tuple[SessionManager, int | None]:
    """The session opened for writing, and the version it was migrated from (``None``: current).

    SessionManager.open would start a new session at a missing path (as omp does); an explicit
    command on a file that is not there is a mistake, so reading it first reports that.
    """
    # A directory is not "missing": the open below says what it is, as every reading command does.
    if not stored_session_exists(Path(path), storage) and not Path(path).is_dir():
        raise SessionNotFoundError(path)
    # throw_if_missing: an empty or blank file is an error here, never a new session written
    # into it (issue 25: fork of an empty file wrote a header into its source).
    session = SessionManager.open(path, throw_if_missing=True, storage=storage)
    return session, session.get_migrated_from()


def _ids(session: SessionManager) -> dict[str, Any]:
    return {e["id"]: e for e in session.get_entries() if isinstance(e.get("id"), str)}


def fork_session(
    path: Path | str, leaf_id: str | None = None, *, storage: SessionStorage | None = None
) -> Path:
    """A new session file next to ``path`` (a row of ``storage`` next to it, when given) holding the
    branch to ``leaf_id`` (default: the leaf).

    ``createBranchedSession`` semantics (spec §6.5): fresh session id, ``parentSession`` = the
    source path, the path's entries with their ids, labels of kept entries re-created. The source
    file is not modified (an empty one is refused). The new header keeps the source's recorded
    cwd. ``leaf_id`` may be a unique id prefix.
    """
    session, migrated_from = _open_existing(path, storage)
    with session:
        ids = _ids(session)
        leaf = (
            resolve_entry_id(ids, leaf_id, migrated_from=migrated_from) if leaf_id else session.get_leaf_id()
        )
        if leaf is None:
            raise SessionError(f"{path}: the session has no entries to fork")
        recorded = session.get_header().get("cwd")
        # The fork is filed beside its source, so its header keeps the source's recorded cwd (as
        # `export -f jsonl` does), even where omp 18 would work in the process cwd instead.
        new_path = session.create_branched_session(leaf, cwd=recorded if isinstance(recorded, str) else None)
    if new_path is None:  # only in-memory sessions return None
        raise SessionError(f"{path}: the branched session was not written")
    return Path(new_path)


def set_label(
    path: Path | str, entry_id: str, label: str | None, *, storage: SessionStorage | None = None
) -> tuple[str, str]:
    """Set (or with ``None`` clear) the label of an entry of ``path`` (a file, else a row of
    ``storage``); returns ``(target id, label entry id)``.

    As in omp the label entry is appended after the current leaf. ``entry_id`` may be a unique
    id prefix.
    """
    session, migrated_from = _open_existing(path, storage)
    with session:
        target = resolve_entry_id(_ids(session), entry_id, migrated_from=migrated_from)
        return target, session.append_label_change(target, label)
