"""The index's search box: the CLI's full-text search (:mod:`omp_session.tools.search`) over the catalog.

The sessions are searched with :func:`omp_session.tools.catalog_search.search_store`, so the box
finds exactly what ``omp-session search`` finds: from the store catalog's full-text index, without
opening a session (only one the catalog cannot hold is read). Results are cached per file version
and query.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from omp_session.tools.catalog import Catalog
from omp_session.tools.catalog_search import search_store
from omp_session.tools.search import SearchHit, compile_query
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
        with self._lock:
            cached = self._cache.pop(query, {})
            self._cache[query] = cached
            while len(self._cache) > self._queries:
                self._cache.popitem(last=False)
        missing = [
            summary
            for summary in summaries
            if (str(summary.path), summary.size, summary.modified.timestamp()) not in cached
        ]
        if missing:
            by_path: dict[str, list[SearchHit]] = {str(summary.path): [] for summary in missing}
            with Catalog() as catalog:  # (its own connection: searches run on several threads)
                paths = [summary.path for summary in missing]
                for hit in search_store(paths, pattern, query, regex=False, catalog=catalog):
                    by_path.setdefault(hit.path, []).append(hit)
            for summary in missing:
                key = (str(summary.path), summary.size, summary.modified.timestamp())
                cached[key] = by_path.get(str(summary.path), [])
        found: list[SessionHits] = []
        for summary in summaries:
            hits = cached.get((str(summary.path), summary.size, summary.modified.timestamp()), [])
            if hits:
                found.append(SessionHits(summary, hits))
        return found
