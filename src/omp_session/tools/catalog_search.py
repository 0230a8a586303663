"""Search over the store catalog: the catalog's full-text index narrows which sessions are read.

:func:`candidate_paths` keeps, of the sessions to search, only those the catalog's trigram index
says may contain the query (and every session the catalog does not hold), so a search reads the
few sessions that match instead of all of them; the hits themselves are still those of
:func:`omp_session.tools.search.search_session` on the sessions read, so they are exactly what a
full scan finds. The narrowing uses *needles*: runs of at least three ASCII characters that every
match must contain (:func:`needles_of`); a query without one (``a``, ``.*``, ``x|y``) is searched
in every session.

Internal module (used by ``omp-session search`` and the viewer's search box); not part of the
public API.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from omp_session.errors import SessionError
from omp_session.model.tree import SessionIndex, SessionTreeNode
from omp_session.tools.catalog import Catalog
from omp_session.tools.entry_text import EntryText
from omp_session.tools.reading import read_session
from omp_session.tools.search import Entry, Progress, SearchHit, hits_in, search_session

__all__ = ["SearchFilter", "candidate_paths", "matching_paths", "needles_of", "search_store"]

_JSON_PUNCTUATION = re.compile(r"[:,]\s*")
#: Needles shorter than this cannot be looked up in a trigram index.
_MIN_NEEDLE = 3

try:  # the regex parser (private in 3.11+, public as sre_parse before): only for needles
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _sre_constants
    import sre_parse as _sre_parser


def _usable(needle: str) -> bool:
    # Only ASCII: SQLite's case folding and Python's IGNORECASE agree there.
    return len(needle) >= _MIN_NEEDLE and needle.isascii()


def _literal_runs(query: str) -> list[str]:
    """The runs of literal characters a match of the regular expression ``query`` must contain,
    in order; ``[]`` when it has a top-level alternation or cannot be read."""
    try:
        parsed: Any = _sre_parser.parse(query)
    except (re.error, RecursionError, OverflowError):
        return []
    runs, current = [], []
    for op, value in parsed:
        if op is _sre_constants.LITERAL:
            current.append(chr(value))
            continue
        if op is _sre_constants.BRANCH:
            return []
        if current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def needles_of(query: str, *, regex: bool) -> list[str]:
    """Text every match of ``query`` contains (case aside) that the catalog can look up."""
    pieces = _literal_runs(query) if regex else _JSON_PUNCTUATION.split(query)
    return [piece for piece in pieces if _usable(piece)]


def candidate_paths(paths: Sequence[Path], query: str, *, regex: bool, catalog: Catalog) -> list[Path]:
    """Of ``paths``, the sessions that may hold a hit of ``query`` (order kept; the catalog is
    brought up to date first)."""
    needles = needles_of(query, regex=regex)
    if not needles:
        return list(paths)
    return catalog.text_candidates(paths, needles)


class _ReducedTree:
    """A catalogued session's tree over its reduced entries (ids and parents are kept), the leaf
    omp resumes from being its last entry, as on a load."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.index = SessionIndex(entries)
        self.leaf = self.index.last_id()

    def get_tree(self) -> list[SessionTreeNode]:
        return self.index.get_tree()

    def get_branch(self, from_id: str | None = None) -> list[Entry]:
        return self.index.branch(from_id if from_id is not None else self.leaf)


#: Up to this many matching entries, their texts are read in one query; a query more entries
#: match (a common word, or no needle at all) is answered one session at a time, as the hits are
#: asked for, so that a search stopped after its first hits reads only the sessions they are in.
_AT_ONCE = 2000


class _StoredTexts:
    """The catalog's texts of the entries of ``paths`` that hold ``query``'s needles (the catalog
    brought up to date first): what :func:`search_store` and :func:`matching_paths` match."""

    def __init__(self, paths: Sequence[Path], query: str, *, regex: bool, catalog: Catalog) -> None:
        self._needles = needles_of(query, regex=regex)
        self._catalog = catalog
        self._fresh = {os.fspath(path) for path in catalog.refresh(paths)} - catalog.uncatalogued
        many = catalog.many_matches(self._needles, _AT_ONCE)
        self._texts = None if many is None or many else catalog.entry_texts(paths, self._needles)
        #: Read one session at a time (see ``_AT_ONCE``); False: the catalog cannot be read.
        self._lazily = many is True

    def of(self, text_path: str) -> list[EntryText] | None:
        """The session's texts holding the needles; ``None`` when the catalog does not hold it
        (it is read from its file)."""
        if text_path not in self._fresh:
            return None
        if self._lazily:
            return self._catalog.session_texts(text_path, self._needles)
        if self._texts is None:
            return None
        return self._texts.get(text_path, [])


def search_store(
    paths: Sequence[Path],
    pattern: re.Pattern[str],
    query: str,
    *,
    regex: bool,
    catalog: Catalog,
    progress: Progress | None = None,
    errors: list[tuple[str, str]] | None = None,
) -> Iterator[SearchHit]:
    """``search_sessions(paths, pattern)`` answered from the catalog: the entries whose stored text
    holds ``query``'s needles are matched with ``pattern``, no session is opened; sessions the
    catalog does not hold are opened and searched as before. Hits in the order of ``paths``, each
    session's in file order."""
    texts = _StoredTexts(paths, query, regex=regex, catalog=catalog)
    for done, path in enumerate(paths, start=1):
        text_path = os.fspath(path)
        found = texts.of(text_path)
        # The reduced entries (for the branches) are decoded only for a session with a match.
        matched = found is not None and any(pattern.search(item.text) for item in found)
        held = catalog.held(text_path) if matched else None
        if held is not None and found is not None:
            tree = _ReducedTree(held.entries)
            yield from hits_in(
                found,
                pattern,
                path=text_path,
                session_id=str(held.header.get("id")),
                tree=tree,
                current=tree.leaf,
            )
        elif found is None or matched:  # not in the catalog (or gone from it since): read it
            try:
                with read_session(path, storage=catalog.store) as session:
                    yield from search_session(session, pattern, path)
            except (SessionError, OSError) as exc:
                if errors is not None:
                    errors.append((text_path, str(exc)))
        if progress is not None:
            progress(done, len(paths), path)


def matching_paths(
    paths: Sequence[Path], pattern: re.Pattern[str], query: str, *, regex: bool, catalog: Catalog
) -> list[Path]:
    """The sessions of ``paths`` (order kept) in which :func:`search_store` finds a hit, without
    making the hits: a catalogued session's tree is not built nor its entries decoded (what a
    hit's branch needs), and its texts are matched as they are read (see
    :meth:`Catalog.sessions_matching`), so a list of matching sessions costs a fraction of their
    hits (the viewer makes the hits of one page of them)."""
    fresh = {os.fspath(path) for path in catalog.refresh(paths)} - catalog.uncatalogued
    matched = catalog.sessions_matching(paths, needles_of(query, regex=regex), pattern)
    found: list[Path] = []
    for path in paths:
        text_path = os.fspath(path)
        if matched is not None and text_path in fresh:
            if text_path in matched:
                found.append(path)
        # Not in the catalog: read and searched as search_store does (all of its hits: read to
        # the end, the session it opened is closed now).
        elif list(search_store([path], pattern, query, regex=regex, catalog=catalog)):
            found.append(path)
    return found


class SearchFilter:
    """Which hits to keep: roles, a tool name, a model (substring), a time range (ISO, ``since``
    inclusive, ``until`` exclusive). The tool and model of an entry come from the catalog."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        roles: Iterable[str] = (),
        tool: str | None = None,
        model: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> None:
        self.catalog = catalog
        self.roles = frozenset(roles)
        self.tool, self.model, self.since, self.until = tool, model, since, until
        self._facts: dict[str, dict[str, tuple[str, str]]] = {}

    @property
    def active(self) -> bool:
        return bool(self.roles or self.tool or self.model or self.since or self.until)

    def keeps(self, hit: SearchHit) -> bool:
        if self.roles and hit.role not in self.roles:
            return False
        if self.since and (hit.timestamp is None or hit.timestamp < self.since):
            return False
        if self.until and (hit.timestamp is None or hit.timestamp >= self.until):
            return False
        if self.tool or self.model:
            facts = self._facts.get(hit.path)
            if facts is None:
                facts = self._facts[hit.path] = self.catalog.entry_facts(hit.path)
            tools, model = facts.get(hit.entry_id, ("", ""))
            if self.tool and self.tool not in tools.split():
                return False
            if self.model and self.model not in model:
                return False
        return True
