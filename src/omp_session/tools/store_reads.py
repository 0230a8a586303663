"""What every store-wide report reads: each session's header, entries and title, from the store
catalog where it holds the session, else read in full (:func:`read_sessions`).

Internal module (used by the usage reports and ``stats``); not part of the public API.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from omp_session.errors import SessionError
from omp_session.store import SessionStorage
from omp_session.tools.catalog import Catalog, CatalogSession, Entry
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.reading import read_session
from omp_session.tools.summary import first_prompt, message_text

__all__ = ["read_sessions", "session_title"]


def session_title(header: Mapping[str, Any], entries: Iterable[Entry]) -> str:
    """The title a report shows for a session: its header's title, else its first real prompt
    (``summary.first_prompt``), whitespace squeezed, at most 80 characters."""
    title = header.get("title")
    if isinstance(title, str) and title:
        return title
    texts = (
        message_text(found.fields) for entry in entries if (found := classify(entry)).kind == EntryKind.USER
    )
    return " ".join(first_prompt(texts).split())[:80]


def read_sessions(
    paths: Iterable[Path | str],
    skipped: list[tuple[str, str]],
    catalog: Catalog | None = None,
    *,
    storage: SessionStorage | None = None,
) -> list[CatalogSession]:
    """Every session of ``paths`` (in that order) with its header, entries and title: from the
    store catalog (default: the agent dir's, brought up to date first; its entries are
    :func:`slim_entry`'s), and read in full where the catalog cannot hold it this time (then its
    entries are complete). Sessions that cannot be read are appended to ``skipped`` with the
    reader's reason. The sessions are files, else rows of ``storage`` (of the catalog's store when
    one is given). What every store-wide report reads."""
    wanted = [Path(raw) for raw in paths]
    used = catalog if catalog is not None else Catalog(storage=storage)
    try:
        held = {os.fspath(session.path): session for session in used.sessions(wanted)}
    finally:
        if catalog is None:
            used.close()
    found: list[CatalogSession] = []
    for path in wanted:
        session = held.get(os.fspath(path))
        if session is not None:
            found.append(session)
            continue
        try:
            with read_session(path, storage=used.store) as opened:
                # A list: a lazy view would keep each session's file open until the report ends.
                header, entries = opened.get_header(), list(opened.get_entries())
        except (SessionError, OSError) as exc:
            skipped.append((os.fspath(path), str(exc)))
            continue
        found.append(CatalogSession(path, header, entries, session_title(header, entries)))
    return found
