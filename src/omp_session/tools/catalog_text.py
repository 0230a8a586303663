"""Full-text queries over the store catalog (``catalog_entries`` and the trigram FTS5 table
``catalog_text``): which sessions may hold some text, the texts of their entries, ranked hits
with snippets.

:class:`TextQueries` is a part of ``catalog.Catalog``; ``catalog_search.py`` builds the search
commands on it (narrowing the sessions read, then matching as a full scan would).

Internal module (used by :mod:`omp_session.tools.catalog`); not part of the public API.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.tools.catalog_refresh import CatalogBase
from omp_session.tools.catalog_rows import FEW_PATHS, digest64
from omp_session.tools.entry_text import EntryText

__all__ = ["RankedHit", "TextQueries"]


class TextQueries(CatalogBase):
    """The catalog's full-text answers (over the rows as they are, unless a method says it
    refreshes them first)."""

    def text_candidates(self, paths: Iterable[Path | str], needles: Sequence[str]) -> list[Path]:
        """Of ``paths`` (refreshed first), those that may hold an entry containing every one of
        ``needles`` (ASCII, case-insensitively, each at least 3 characters) and those the catalog
        does not hold; the order is kept."""
        wanted = [Path(path) for path in paths]
        fresh = self.refresh(wanted)
        db = self.cache.database
        held = {os.fspath(path) for path in fresh} - self.uncatalogued
        if db is None:
            return wanted
        query = " AND ".join(_phrase(needle) for needle in needles)
        try:
            matching = {
                row[0]
                for row in db.execute(
                    "SELECT DISTINCT s.path FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
                    " JOIN catalog_sessions s ON s.owner = e.owner WHERE catalog_text MATCH ?",
                    (query,),
                )
            }
        except sqlite3.Error:
            return wanted
        return [path for path in wanted if os.fspath(path) not in held or os.fspath(path) in matching]

    def entry_texts(self, paths: Sequence[Path], needles: Sequence[str]) -> dict[str, list[EntryText]] | None:
        """The searchable texts of the entries of ``paths`` (catalogued sessions only, file
        order) that contain every one of ``needles`` (all entries without needles); ``None``
        when the catalog cannot be read."""
        db = self.cache.database
        if db is None:
            return None
        wanted = {os.fspath(path) for path in paths} - self.uncatalogued
        found: dict[str, list[EntryText]] = {}
        select = (
            "SELECT s.path, e.entry_id, e.role, e.timestamp, t.text"
            " FROM catalog_entries e JOIN catalog_text t ON t.rowid = e.rowid"
            " JOIN catalog_sessions s ON s.owner = e.owner"
        )
        try:
            if needles:
                query = " AND ".join(_phrase(needle) for needle in needles)
                # A few sessions (the viewer's page of hits): only their rows are read, not the
                # text of every entry of the store that holds the needles.
                few = sorted({digest64(path) for path in wanted}) if len(wanted) <= FEW_PATHS else []
                within = f" AND e.owner IN ({','.join('?' * len(few))})" if few else ""
                rows: Iterable[Any] = db.execute(
                    f"{select} WHERE catalog_text MATCH ?{within} ORDER BY e.rowid", (query, *few)
                ).fetchall()
            else:
                rows = (
                    row
                    for path in sorted(wanted)
                    for row in db.execute(f"{select} WHERE e.owner = ? ORDER BY e.rowid", (digest64(path),))
                )
            for path, entry_id, role, timestamp, text in rows:
                if path in wanted:
                    found.setdefault(path, []).append(EntryText(entry_id, role, timestamp, text))
        except sqlite3.Error:
            return None
        return found

    def many_matches(self, needles: Sequence[str], at_least: int) -> bool | None:
        """Whether at least ``at_least`` entries of the catalog hold every one of ``needles``
        (counted up to that many only: cheap for a common word too); ``None`` when the catalog
        cannot be read."""
        db = self.cache.database
        if db is None or not needles:
            return None if db is None else True
        query = " AND ".join(_phrase(needle) for needle in needles)
        try:
            (count,) = db.execute(
                "SELECT count(*) FROM (SELECT rowid FROM catalog_text WHERE catalog_text MATCH ? LIMIT ?)",
                (query, at_least),
            ).fetchone()
        except sqlite3.Error:
            return None
        return bool(count >= at_least)

    def session_texts(self, path: str, needles: Sequence[str]) -> list[EntryText] | None:
        """:meth:`entry_texts` of one session: its entries' texts that contain every one of
        ``needles``, in file order (``[]`` for a session the catalog does not hold); ``None``
        when the catalog cannot be read. The full-text index is read only within the rowids of
        the session's entries, so a word most entries hold costs what this session holds of it,
        not what the whole store does."""
        db = self.cache.database
        if db is None:
            return None
        if path in self.uncatalogued:
            return []
        select = (
            "SELECT e.entry_id, e.role, e.timestamp, t.text"
            " FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
        )
        try:
            owner = digest64(path)
            low, high = db.execute(
                "SELECT min(rowid), max(rowid) FROM catalog_entries WHERE owner = ?", (owner,)
            ).fetchone()
            if low is None:
                return []
            if needles:
                query = " AND ".join(_phrase(needle) for needle in needles)
                rows = db.execute(
                    f"{select} WHERE catalog_text MATCH ? AND t.rowid BETWEEN ? AND ? AND e.owner = ?"
                    " ORDER BY t.rowid",
                    (query, low, high, owner),
                )
            else:
                rows = db.execute(f"{select} WHERE e.owner = ? ORDER BY e.rowid", (owner,))
            return [EntryText(*row) for row in rows]
        except sqlite3.Error:
            return None

    def sessions_matching(
        self, paths: Sequence[Path], needles: Sequence[str], pattern: re.Pattern[str]
    ) -> set[str] | None:
        """Of the catalogued sessions of ``paths``, those with an entry whose text (one of those
        :meth:`entry_texts` gives) ``pattern`` finds: the rows are read as they come, no entry
        text is built, and a session without needles is left at its first match (a list of the
        sessions that match, for the viewer's search). ``None`` when the catalog cannot be read."""
        db = self.cache.database
        if db is None:
            return None
        wanted = {os.fspath(path) for path in paths} - self.uncatalogued
        found: set[str] = set()
        joined = "FROM catalog_entries e JOIN catalog_text t ON t.rowid = e.rowid"
        try:
            if needles:
                # Only the rowids of the matching entries are scanned; an entry's text is read
                # for a session not matched yet only (a word most entries hold costs a text or so
                # per session, not every matching entry's text).
                query = " AND ".join(_phrase(needle) for needle in needles)
                owners = {digest64(path): path for path in wanted}
                matches = db.execute(
                    "SELECT e.owner, t.rowid FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
                    " WHERE catalog_text MATCH ?",
                    (query,),
                )
                for owner, rowid in matches:
                    path = owners.get(owner)
                    if path is None or path in found:
                        continue
                    text = db.execute("SELECT text FROM catalog_text WHERE rowid = ?", (rowid,)).fetchone()
                    if text is not None and pattern.search(text[0]):
                        found.add(path)
                return found
            for path in sorted(wanted):
                rows = db.execute(
                    f"SELECT t.text {joined} WHERE e.owner = ? ORDER BY e.rowid", (digest64(path),)
                )
                if any(pattern.search(text) for (text,) in rows):
                    found.add(path)
                rows.close()
        except sqlite3.Error:
            return None
        return found

    def entry_facts(self, path: str) -> dict[str, tuple[str, str]]:
        """``{entry id: (tool names, model)}`` of one catalogued session's text entries."""
        db = self.cache.database
        if db is None:
            return {}
        try:
            return {
                entry_id: (tools, model)
                for entry_id, tools, model in db.execute(
                    "SELECT entry_id, tools, model FROM catalog_entries WHERE owner = ?", (digest64(path),)
                )
            }
        except sqlite3.Error:
            return {}

    def ranked(
        self,
        paths: Iterable[Path | str],
        query: str,
        *,
        roles: Sequence[str] = (),
        tool: str | None = None,
        model: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 50,
    ) -> list[RankedHit]:
        """Entries matching the FTS5 ``query`` (words and ``"phrases"``, each matched as a
        substring; ``AND``/``OR``/``NOT``), best first (bm25), with a snippet whose match is
        between ``\\x02`` and ``\\x03``. Filters: roles, a tool name, a model (substring), and an
        ISO timestamp range (``since`` <= timestamp < ``until``)."""
        wanted = {os.fspath(path) for path in self.refresh(paths)} - self.uncatalogued
        db = self.cache.database
        if db is None:
            return []
        where, params = ["catalog_text MATCH ?"], [query]
        if roles:
            where.append(f"e.role IN ({','.join('?' * len(roles))})")
            params.extend(roles)
        if tool:
            where.append("(' ' || e.tools || ' ') LIKE ?")
            params.append(f"% {tool} %")
        if model:
            where.append("e.model LIKE ?")
            params.append(f"%{model}%")
        if since:
            where.append("e.timestamp >= ?")
            params.append(since)
        if until:
            where.append("e.timestamp < ?")
            params.append(until)
        sql = (
            "SELECT s.path, e.entry_id, e.role, e.timestamp, e.tools, e.model,"
            " snippet(catalog_text, 0, char(2), char(3), '…', 64), bm25(catalog_text)"
            " FROM catalog_text t JOIN catalog_entries e ON e.rowid = t.rowid"
            " JOIN catalog_sessions s ON s.owner = e.owner"
            f" WHERE {' AND '.join(where)} ORDER BY bm25(catalog_text)"
        )
        hits: list[RankedHit] = []
        try:
            for row in db.execute(sql, params):
                if row[0] in wanted:
                    hits.append(RankedHit(*row))
                    if len(hits) >= limit:
                        break
        except sqlite3.Error as exc:
            raise ValueError(f"not a search query: {exc}") from None
        return hits


class RankedHit(NamedTuple):
    """One entry a ranked search found."""

    path: str
    entry_id: str
    role: str
    timestamp: str | None
    tools: str
    model: str
    #: The text around the match, the match between ``\\x02`` and ``\\x03``.
    snippet: str
    #: bm25 score: lower is better.
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entryId": self.entry_id,
            "role": self.role,
            "timestamp": self.timestamp,
            "tools": self.tools.split(),
            "model": self.model or None,
            "snippet": self.snippet.replace("\x02", "").replace("\x03", ""),
            "score": self.score,
        }


def _phrase(needle: str) -> str:
    return '"' + needle.replace('"', '""') + '"'
