"""The store catalog: a derived, incremental index of every session of a store, in SQLite.

It lives in the listing cache's database (``<agent dir>/cache/session-list.sqlite3``, tables in
``catalog_schema.py``) and holds, per session, the storage state it was read at, the header, the
usage title, the entries reduced to what the reports count (:func:`slim_entry`), and the text of
each entry for full-text search (FTS5, trigram tokenizer: substring matching).

**Never stale.** Every call first compares each session's storage state (one ``stat`` per file,
one ``stat_session`` per database row) with the one it was read at and re-reads the sessions that
changed, in one streaming pass each (one line decoded at a time; memory is bounded by the longest
line and the session's reduced entries). A session that only grew (same inode, longer, the first
and the last 4 KiB before the old end unchanged) is read from where the catalog stopped.

**Never precious.** A catalog of another schema version, a damaged one, or none at all is
rebuilt without a word; an unwritable or busy one makes the call read the sessions itself
(:attr:`Catalog.uncatalogued`). Deleting the database loses nothing.

**Side effects:** writes only the catalog database (or nothing, with ``ListingCache.disabled()``);
never a session.

Its parts, one job each: ``catalog_refresh.py`` keeps the rows fresh, ``catalog_pass.py`` is the
pass over one session, ``catalog_rows.py`` packs, writes and deletes a session's rows,
``catalog_reports.py`` answers the usage and statistics reports, ``catalog_text.py`` the full-text
queries (``catalog_search.py`` builds the search commands on those), ``catalog_schema.py`` holds
the tables. :class:`Catalog` is all of them in one object.

Internal module (used by the reports, search, resolution and the viewer); not part of the public API.
"""

from __future__ import annotations

from omp_session.tools.catalog_pass import IMPORT_MARKER, Entry, TextRow, slim_entry
from omp_session.tools.catalog_refresh import REFRESH_PROGRESS
from omp_session.tools.catalog_reports import CatalogSession, FactsSession, ReportQueries, UsageSession
from omp_session.tools.catalog_rows import DAMAGED_ROW
from omp_session.tools.catalog_text import RankedHit, TextQueries

__all__ = [
    "DAMAGED_ROW",
    "IMPORT_MARKER",
    "REFRESH_PROGRESS",
    "Catalog",
    "CatalogSession",
    "Entry",
    "FactsSession",
    "RankedHit",
    "TextRow",
    "UsageSession",
    "slim_entry",
]


class Catalog(ReportQueries, TextQueries):
    """The catalog of one store (files by default, else ``storage``): its rows kept fresh
    (``catalog_refresh.CatalogBase``), the reports' queries (``ReportQueries``) and the
    full-text ones (``TextQueries``).

    ``cache`` is the database to use (default: the one at ``listing_cache.cache_path()``, opened
    and closed by this object)."""

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
