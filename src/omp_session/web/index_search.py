"""The index's search box: the CLI's full-text search (:mod:`omp_session.tools.search`) over the catalog.

The sessions are searched with :mod:`omp_session.tools.catalog_search`, so the box finds exactly
what ``omp-session search`` finds: from the store catalog's full-text index, without opening a
session (only one the catalog cannot hold is read). Which sessions match is found for all of them
(:func:`~omp_session.tools.catalog_search.matching_paths`: no hit is made), the hits only for the
page of sessions shown: a hit's branch needs the session's tree, which made a search over 1,000
sessions take seconds (issue 25's load test). Both are cached per query and file version.

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from omp_session.store import SessionStorage
from omp_session.tools.catalog import Catalog
from omp_session.tools.catalog_search import matching_paths, search_store
from omp_session.tools.search import SearchHit, compile_query
from omp_session.web.catalog import SessionSummary
from omp_session.web.session_cache import RecentlyUsed

__all__ = ["CatalogSearch", "SessionHits"]

_CACHE_QUERIES = 16
#: One version of one session file: its path, size and mtime.
_Version = tuple[str, int, float]


@dataclass(frozen=True)
class SessionHits:
    """The hits of a query in one session (file order)."""

    summary: SessionSummary
    hits: list[SearchHit]


@dataclass
class _Known:
    """What is known of one query: whether each file version matches, and the hits of those whose
    hits were asked for."""

    matches: dict[_Version, bool] = field(default_factory=dict)
    hits: dict[_Version, list[SearchHit]] = field(default_factory=dict)


def _version(summary: SessionSummary) -> _Version:
    return (summary.info.path, summary.size, summary.modified.timestamp())


class CatalogSearch:
    """Searches sessions, remembering what the last few queries found per file version."""

    def __init__(self, queries: int = _CACHE_QUERIES, storage: SessionStorage | None = None) -> None:
        self._queries = queries
        self._storage = storage
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._lock = threading.Lock()
        # One search per query and catalog at a time: the clients asking the same while it runs
        # wait for it instead of each reading every session again (issue 25's load test).
        self._running: RecentlyUsed[list[SessionSummary]] = RecentlyUsed(0)
        self._reading: RecentlyUsed[None] = RecentlyUsed(0)

    def _of(self, query: str) -> _Known:
        with self._lock:
            known = self._known.pop(query, None) or _Known()
            self._known[query] = known
            while len(self._known) > self._queries:
                self._known.popitem(last=False)
            return known

    def matching(self, summaries: list[SessionSummary], query: str) -> list[SessionSummary]:
        """The sessions of ``summaries`` (order kept) with at least one hit of the literal,
        case-insensitive ``query``."""
        versions = tuple(_version(summary) for summary in summaries)
        return self._running.get(
            (query, str(hash(versions))), lambda: self._matching(summaries, versions, query)
        )

    def _matching(
        self, summaries: list[SessionSummary], versions: tuple[_Version, ...], query: str
    ) -> list[SessionSummary]:
        known = self._of(query)
        missing = [s for s, version in zip(summaries, versions, strict=True) if version not in known.matches]
        if missing:
            with Catalog(
                storage=self._storage
            ) as catalog:  # (its own connection: searches run on several threads)
                paths = [summary.path for summary in missing]
                pattern = compile_query(query)
                matched = matching_paths(paths, pattern, query, regex=False, catalog=catalog)
                found = {str(path) for path in matched}
            for summary in missing:
                known.matches[_version(summary)] = str(summary.path) in found
        return [s for s, version in zip(summaries, versions, strict=True) if known.matches.get(version)]

    def hits(self, summaries: list[SessionSummary], query: str) -> list[SessionHits]:
        """The hits of ``query`` in each of ``summaries`` (order kept; those without a hit left
        out): read from the catalog for the sessions not asked about before."""
        known = self._of(query)
        missing = [summary for summary in summaries if _version(summary) not in known.hits]
        if missing:  # (the same missing sessions of one query are read once at a time)
            versions = tuple(_version(summary) for summary in missing)
            self._reading.get((query, str(hash(versions))), lambda: self._read_hits(known, missing, query))
        found: list[SessionHits] = []
        for summary in summaries:
            hits = known.hits.get(_version(summary), [])
            if hits:
                found.append(SessionHits(summary, hits))
        return found

    def _read_hits(self, known: _Known, missing: list[SessionSummary], query: str) -> None:
        by_path: dict[str, list[SearchHit]] = {str(summary.path): [] for summary in missing}
        with Catalog(storage=self._storage) as catalog:
            paths = [summary.path for summary in missing]
            for hit in search_store(paths, compile_query(query), query, regex=False, catalog=catalog):
                by_path.setdefault(hit.path, []).append(hit)
        for summary in missing:
            known.hits[_version(summary)] = by_path.get(str(summary.path), [])

    def __call__(self, summaries: list[SessionSummary], query: str) -> list[SessionHits]:
        """Every session of ``summaries`` (order kept) with a hit of ``query``, with its hits."""
        return self.hits(self.matching(summaries, query), query)
