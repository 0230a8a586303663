"""What the reports read of the store catalog: reduced entries, usage facts, summed usage groups
and kept statistics.

``usage --all``, ``stats --all``, the viewer's /usage page and search's branch of a hit read the
catalog through :class:`ReportQueries` (a part of ``catalog.Catalog``): each session's reduced
entries (``catalog_files.slim``) or usage facts (``catalog_files.facts``), its small row
(``catalog_sessions``), the usage groups summed in SQL (``catalog_usage``, or the store's totals
``catalog_usage_totals`` for a report of every session), which sessions share a copy key
(``catalog_pairs``), and the summarised statistics ``stats`` kept per row.

Internal module (used by :mod:`omp_session.tools.catalog`); not part of the public API.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from omp_session.tools.catalog_pass import Entry
from omp_session.tools.catalog_refresh import CatalogBase
from omp_session.tools.catalog_rows import DAMAGED_ROW, FEW_PATHS, SUMS, unpack_facts, unpack_list
from omp_session.tools.usage_facts import BUCKET_MS, CopyKey, RecordFields

__all__ = ["KEPT_TOTALS", "CatalogSession", "FactsSession", "ReportQueries", "UsageSession"]

#: How many combined statistics ``keep_total`` holds (``stats --all``, a few projects' ``stats``).
KEPT_TOTALS = 16


class CatalogSession(NamedTuple):
    """One session as the catalog holds it (a ``stats.ReadSession``): its path, header, reduced
    entries (:func:`slim_entry`, file order) and the title reports show (header title, else the
    first real prompt, whitespace squeezed, 80 characters)."""

    path: Path
    header: Entry
    entries: Sequence[Entry]
    title: str


class FactsSession(NamedTuple):
    """One session's usage facts (:func:`~omp_session.tools.usage_facts.entry_facts`): its path,
    header, title, each entry's copy key and the record fields of the entries that spent."""

    path: Path
    header: Entry
    title: str
    keys: Sequence[CopyKey | None]
    spent: dict[int, RecordFields]


class UsageSession(NamedTuple):
    """What the usage reports need of a catalogued session besides its spend: the header's id,
    cwd (else ``NO_PROJECT``), timestamp and ``parentSession``, the title, and whether its spend
    is counted by the copy-once rule rather than summed in SQL whichever sessions are listed with
    it (``catalog_sessions.separate``)."""

    path: str
    session_id: str
    project: str
    started: str
    parent: str | None
    title: str
    separate: bool
    #: ``catalog_sessions.owner``: how ``Catalog.shared_keys`` names the session.
    owner: int


class ReportQueries(CatalogBase):
    """The catalog's answers to the reports (each refreshes the rows it reads first, unless it
    says otherwise)."""

    def sessions(self, paths: Iterable[Path | str]) -> list[CatalogSession]:
        """The catalog's view of each session of ``paths`` (refreshed first), in the order given;
        sessions it does not hold this time are left out and named in :attr:`uncatalogued`."""
        fresh = self.refresh(paths)
        db = self.cache.database
        if db is None or not fresh:
            return []
        wanted = {os.fspath(path) for path in fresh} - self.uncatalogued
        found: dict[str, CatalogSession] = {}
        damaged: list[str] = []
        try:
            for text_path, header, title, slim in db.execute(
                "SELECT path, header, title, slim FROM catalog_files WHERE slim IS NOT NULL"
            ):
                if text_path in wanted:
                    try:
                        found[text_path] = CatalogSession(
                            Path(text_path), orjson.loads(header), unpack_list(slim), title
                        )
                    except DAMAGED_ROW:
                        damaged.append(text_path)
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            self.uncatalogued.update(wanted)
            return []
        self._drop_damaged(damaged)
        self.uncatalogued.update(wanted - found.keys())
        return [found[os.fspath(path)] for path in fresh if os.fspath(path) in found]

    def usage_index(self, paths: Iterable[Path | str]) -> tuple[dict[str, UsageSession], int] | None:
        """What the reports need of each session of ``paths`` the catalog holds (refreshed first;
        the others are named in :attr:`uncatalogued`), by path, and how many sessions the catalog
        holds in all whose spend it sums (not ``separate``); ``None`` when it cannot be read."""
        fresh = self.refresh(paths)
        db = self.cache.database
        if db is None:
            return None
        wanted = {os.fspath(path) for path in fresh} - self.uncatalogued
        found: dict[str, UsageSession] = {}
        held = 0
        try:
            for row in db.execute(
                "SELECT path, session_id, project, started, parent, title, separate, owner"
                " FROM catalog_sessions"
            ):
                path, session_id, project, started, parent, title, separate, owner = row
                held += not separate
                if path in wanted:
                    found[path] = UsageSession(
                        path, session_id, project, started, parent, title, bool(separate), owner
                    )
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            return None
        self.uncatalogued.update(wanted - found.keys())
        return found, held

    def kept_stats(self, paths: Collection[str]) -> dict[str, tuple[int, bytes | None]] | None:
        """``{path: (stamp, stats)}`` of the catalogued sessions of ``paths`` (no refresh): the
        summarised statistics ``keep_stats`` kept for the row's ``stamp``, else ``None``."""
        db = self.cache.database
        if db is None:
            return None
        wanted = paths if isinstance(paths, set | frozenset | dict) else set(paths)
        try:
            # Many paths (a store-wide ``stats``): one scan of the small table, filtered here,
            # costs less than looking each up through ``json_each``.
            rows: Iterable[tuple[str, int, bytes | None]] = (
                db.execute("SELECT path, stamp, stats FROM catalog_sessions")
                if len(wanted) > FEW_PATHS
                else db.execute(
                    "SELECT path, stamp, stats FROM catalog_sessions"
                    " WHERE path IN (SELECT value FROM json_each(?))",
                    (orjson.dumps(sorted(wanted)).decode(),),
                )
            )
            return {path: (stamp, stats) for path, stamp, stats in rows if path in wanted}
        except sqlite3.Error:
            return None

    def keep_stats(self, kept: Sequence[tuple[str, int, bytes]]) -> None:
        """Keep ``(path, stamp, stats)``: each for the row of ``path`` if it is still the one of
        ``stamp`` (else it was read again since, and what was computed is not kept)."""
        if self.cache.database is None or not kept:
            return
        with contextlib.suppress(sqlite3.Error), self.cache.transaction() as tx:
            tx.executemany(
                "UPDATE catalog_sessions SET stats = ? WHERE path = ? AND stamp = ?",
                [(stats, path, stamp) for path, stamp, stats in kept],
            )

    def kept_total(self, listing: bytes) -> bytes | None:
        """The combined statistics ``keep_total`` kept for ``listing`` (a digest of the sessions a
        report lists, as rows: see ``stats._kept``), else ``None``."""
        db = self.cache.database
        if db is None:
            return None
        try:
            found = db.execute(
                "SELECT total FROM catalog_stats_totals WHERE listing = ?", (listing,)
            ).fetchone()
        except sqlite3.Error:
            return None
        return found[0] if found is not None else None

    def keep_total(self, listing: bytes, total: bytes) -> None:
        """Keep ``total``, the combined statistics of the sessions ``listing`` digests; only the
        :data:`KEPT_TOTALS` kept last are held (a listing that changed is never asked for again)."""
        if self.cache.database is None:
            return
        with contextlib.suppress(sqlite3.Error), self.cache.transaction() as tx:
            tx.execute(
                "INSERT OR REPLACE INTO catalog_stats_totals VALUES"
                " (?, (SELECT coalesce(max(kept), 0) + 1 FROM catalog_stats_totals), ?)",
                (listing, total),
            )
            tx.execute(
                "DELETE FROM catalog_stats_totals WHERE kept <="
                " (SELECT max(kept) FROM catalog_stats_totals) - ?",
                (KEPT_TOTALS,),
            )

    def shared_keys(self) -> list[tuple[int, int]] | None:
        """``(owner, owner)`` of every two catalogued sessions that share an entry's copy key
        (both ways); ``None`` when the catalog cannot be read."""
        db = self.cache.database
        if db is None:
            return None
        try:
            return db.execute("SELECT a, b FROM catalog_pairs").fetchall()
        except sqlite3.Error:
            return None

    def usage_groups(
        self,
        paths: Collection[str],
        *,
        by: str,
        by_bucket: bool,
        exclude: bool = False,
        day_offset_s: int = 0,
    ) -> list[tuple[Any, ...]] | None:
        """The stored usage groups (``catalog_usage``) of ``paths`` (with ``exclude``: of every
        session but those),
        summed in SQL by model and kind of cost, and by ``by`` (``"time"``: quarter hour,
        ``"day"``: the day of the zone ``day_offset_s`` seconds east of UTC, as a day number,
        ``"session"``: session id, ``"project"``, ``"path"``), with the quarter hour too when
        ``by_bucket`` (not for ``"time"`` and ``"day"``): ``([bucket,] [key,] model, recorded,
        input, output, cacheRead, cacheWrite, cost, turns, first_ms, last_ms)``; ``None`` when
        the catalog cannot be read or a sum overflows."""
        db = self.cache.database
        if db is None:
            return None
        # The day number floored (SQLite's integer division truncates toward zero).
        second = f"(u.bucket * {BUCKET_MS // 1000} + {int(day_offset_s)})"
        day = f"({second} / 86400 - ({second} % 86400 < 0))"
        column = {
            "time": "u.bucket",
            "day": day,
            "session": "s.session_id",
            "project": "s.project",
            "path": "u.path",
        }[by]
        keys = [
            *(["u.bucket"] if by_bucket and by not in ("time", "day") else []),
            column,
            "u.model",
            "u.recorded",
        ]
        joined = " JOIN catalog_sessions s ON s.path = u.path" if column.startswith("s.") else ""
        if exclude and not paths and by in ("time", "day"):
            return self._store_totals(db, column)
        where, params = "", []
        if paths or not exclude:
            where = f" WHERE u.path {'NOT IN' if exclude else 'IN'} (SELECT value FROM json_each(?))"
            params.append(orjson.dumps(sorted(paths)).decode())
        sql = (
            f"SELECT {', '.join(keys)}, sum(u.input), sum(u.output), sum(u.cache_read),"
            f" sum(u.cache_write), sum(u.cost), sum(u.turns), min(u.first_ms), max(u.last_ms)"
            f" FROM catalog_usage u{joined}{where} GROUP BY {', '.join(keys)}"
        )
        try:
            return db.execute(sql, params).fetchall()
        except sqlite3.Error:
            return None

    def _store_totals(self, db: sqlite3.Connection, column: str) -> list[tuple[Any, ...]] | None:
        """:meth:`usage_groups` of every session (by quarter hour or day): from the totals kept per
        quarter hour (``catalog_usage_totals``), not from every session's groups."""
        columns = "input, output, cache_read, cache_write, cost, turns, first_ms, last_ms"
        sql = (
            f"SELECT u.bucket, u.model, u.recorded, {columns} FROM catalog_usage_totals u"
            if column == "u.bucket"
            else f"SELECT {column}, u.model, u.recorded, {SUMS} FROM catalog_usage_totals u GROUP BY 1, 2, 3"
        )
        try:
            found = db.execute(sql).fetchall()
        except sqlite3.Error:
            return None
        if any(row[1] is None for row in found):
            return None  # a quarter hour SQLite could not sum (see _retotal)
        return found

    def usage_facts(self, paths: Iterable[Path | str], *, refresh: bool = True) -> dict[str, FactsSession]:
        """The usage facts of the sessions of ``paths`` the catalog holds (refreshed first unless
        ``refresh`` is false), by path; the others are named in :attr:`uncatalogued`. No entry is
        decoded."""
        fresh = self.refresh(paths) if refresh else list(paths)
        db = self.cache.database
        if db is None or not fresh:
            return {}
        wanted = {os.fspath(path) for path in fresh} - self.uncatalogued
        found: dict[str, FactsSession] = {}
        damaged: list[str] = []
        try:
            for text_path, header, title, facts in db.execute(
                "SELECT path, header, title, facts FROM catalog_files"
                " WHERE path IN (SELECT value FROM json_each(?)) AND facts IS NOT NULL",
                (orjson.dumps(sorted(wanted)).decode(),),
            ):
                if text_path in wanted:
                    try:
                        keys, spent, _segments = unpack_facts(facts)
                        found[text_path] = FactsSession(
                            Path(text_path), orjson.loads(header), title, keys, spent
                        )
                    except DAMAGED_ROW:
                        damaged.append(text_path)
        except sqlite3.Error as exc:
            self.cache.failed(exc)
            self.uncatalogued.update(wanted)
            return {}
        self._drop_damaged(damaged)
        self.uncatalogued.update(wanted - found.keys())
        return found

    def held(self, path: str) -> CatalogSession | None:
        """The catalog's row of ``path`` as it is (no refresh), or ``None``."""
        db = self.cache.database
        if db is None or path in self.uncatalogued:
            return None
        try:
            row = db.execute(
                "SELECT header, title, slim FROM catalog_files WHERE path = ? AND slim IS NOT NULL", (path,)
            ).fetchone()
        except sqlite3.Error:
            return None
        if row is None:
            return None
        try:
            return CatalogSession(Path(path), orjson.loads(row[0]), unpack_list(row[2]), row[1])
        except DAMAGED_ROW:
            self._drop_damaged([path])
            return None
