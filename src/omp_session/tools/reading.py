"""The one read path of the tools and views: a session opened read-only by :class:`SessionManager`.

Every command, exporter and viewer page reads a session with :func:`read_session`, so each gets the
manager's lazy, offset-indexed open of a large file (docs/performance.md) and the same leaf, labels,
tree and context rules as the library. Nothing here rebuilds load → index → leaf → context by hand.

A read-only open never writes the session and takes no lock; for a large file it may write the
offset-index cache beside it (what ``SessionManager.open(read_only=True)`` documents).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from omp_session.manager import SessionManager
from omp_session.model.context import SessionContext
from omp_session.store import SessionStorage
from omp_session.store.blobs import BlobSink, UnresolvedBlobs
from omp_session.tools.resolve import SHORT_ID, resolve_entry_id, short_entry_ids

__all__ = ["read_session", "resolve_entry", "session_context", "session_short_ids"]


def read_session(
    path: Path | str | os.PathLike[str],
    *,
    blobs: BlobSink | None = None,
    storage: SessionStorage | None = None,
) -> SessionManager:
    """``path`` opened read-only (a file, else a row of ``storage``). Image blob references stay
    references unless ``blobs`` is given (then they are resolved from it, as omp does on load).
    Use it as a context manager."""
    return SessionManager.open(
        path, read_only=True, blobs=blobs if blobs is not None else UnresolvedBlobs(), storage=storage
    )


def resolve_entry(session: SessionManager, query: str) -> str:
    """The id of the entry ``query`` names in ``session``: an exact id, or a unique id prefix.

    Unlike omp (§9 #13) an unknown id is an error (``EntryNotFoundError``, or
    ``UnstableEntryIdError`` for a version 1 file whose ids change at every load), never a silent
    fall-back to the leaf.
    """
    if session.get_entry(query) is not None:
        return query  # exact ids never need the full id list (a lazily opened file stays lazy)
    ids = {str(e["id"]): e for e in session.get_entries() if isinstance(e.get("id"), str)}
    return resolve_entry_id(ids, query, migrated_from=session.get_migrated_from())


def session_short_ids(session: SessionManager, shown: Iterable[str | None]) -> dict[str, str]:
    """How to display the ids among ``shown`` that are long (:func:`short_entry_ids`, unique
    among every id of ``session``, so each typed back names its entry); ``{}`` when none is long,
    without listing the session's ids."""
    if not any(entry_id is not None and len(entry_id) > SHORT_ID for entry_id in shown):
        return {}
    return short_entry_ids(str(e["id"]) for e in session.get_entries() if isinstance(e.get("id"), str))


def session_context(
    path: Path | str,
    *,
    leaf_id: str | None = None,
    blobs: BlobSink | None = None,
    storage: SessionStorage | None = None,
) -> SessionContext:
    """The context omp would build for ``path`` (a file, else a row of ``storage``) at its leaf
    (or at ``leaf_id``, an id or a unique prefix), images resolved from ``blobs`` when given."""
    with read_session(path, blobs=blobs, storage=storage) as session:
        if leaf_id is not None:
            session.branch(resolve_entry(session, leaf_id))  # in memory only: read-only sessions
        return session.build_session_context()
