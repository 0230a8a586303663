"""The index's search box: the CLI's full-text search (:mod:`omp_session.tools.search`) over the catalog.

Each session is searched with :func:`omp_session.tools.search.search_session`, so the box finds exactly
what ``omp-session search`` finds. Three shortcuts keep it usable over thousands of sessions: the
store catalog's full-text index names the sessions that can match (the others are never read,
:func:`omp_session.tools.catalog_search.candidate_paths`), a file whose raw bytes cannot contain the
query is not parsed (only for plain queries, see :func:`_plain_needle`), and results are cached per
file version and query.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from omp_session.errors import SessionError
from omp_session.store.file_sessions import read_stored_session
from omp_session.tools.catalog import Catalog
from omp_session.tools.catalog_search import candidate_paths
from omp_session.tools.reading import read_session
from omp_session.tools.search import SearchHit, compile_query, search_session
from omp_session.web.catalog import SessionSummary
from omp_session.web.session_cache import RecentlyUsed

__all__ = ["CatalogSearch", "SessionHits"]

#: Characters that JSON never escapes and that the searched text keeps as is, so a query made of
#: them can only match a file whose bytes contain it (ASCII-case-insensitively).
_PLAIN = re.compile(r"^[A-Za-z0-9 _.,;:!?()\[\]@#%+=/-]+$")
_CACHE_QUERIES = 16


@dataclass(frozen=True)
class SessionHits:
    """The hits of a query in one session (file order)."""

    summary: SessionSummary
    hits: list[SearchHit]


def _plain_needle(query: str) -> bytes | None:
    return query.lower().encode("ascii") if _PLAIN.match(query) else None


def _search_one(summary: SessionSummary, pattern: re.Pattern[str], needle: bytes | None) -> list[SearchHit]:
    if needle is not None:
        try:
            # The file (never blocking on a FIFO or device) or the database row of the store.
            if needle not in read_stored_session(summary.path).lower():
                return []
        except (OSError, SessionError):
            return []
    try:
        with read_session(summary.path) as session:
            return search_session(session, pattern, summary.path)
    except (SessionError, OSError):
        return []


class CatalogSearch:
    """Searches sessions, remembering the hits of the last few queries per file version."""

    def __init__(self, queries: int = _CACHE_QUERIES) -> None:
        self._queries = queries
        self._cache: OrderedDict[str, dict[tuple[str, int, float], list[SearchHit]]] = OrderedDict()
        self._lock = threading.Lock()
        # One search per query and catalog at a time: the clients asking the same while it runs
        # wait for it instead of each reading every session again (issue 25's load test).
        self._running: RecentlyUsed[list[SessionHits]] = RecentlyUsed(0)

    def __call__(self, summaries: list[SessionSummary], query: str) -> list[SessionHits]:
        """Sessions of ``summaries`` (order kept) with at least one hit of the literal,
        case-insensitive ``query``, each with its hits."""
        keys = tuple((str(s.path), s.size, s.modified.timestamp()) for s in summaries)
        return self._running.get((query, str(hash(keys))), lambda: self._search(summaries, query))

    def _search(self, summaries: list[SessionSummary], query: str) -> list[SessionHits]:
        pattern = compile_query(query)
        needle = _plain_needle(query)
        with self._lock:
            cached = self._cache.pop(query, {})
            self._cache[query] = cached
            while len(self._cache) > self._queries:
                self._cache.popitem(last=False)
        with Catalog() as catalog:  # (its own connection: searches run on several threads)
            candidates = {
                str(path)
                for path in candidate_paths([s.path for s in summaries], query, regex=False, catalog=catalog)
            }
        found: list[SessionHits] = []
        for summary in summaries:
            key = (str(summary.path), summary.size, summary.modified.timestamp())
            hits = cached.get(key) if str(summary.path) in candidates else []
            if hits is None:
                hits = _search_one(summary, pattern, needle)
                cached[key] = hits
            if hits:
                found.append(SessionHits(summary, hits))
        return found
