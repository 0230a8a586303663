"""Full-text search over the messages of sessions, aware of the tree.

Every entry that carries conversation text is searched: user, developer and assistant text and
thinking, tool-call arguments, tool results, bash/python commands and output, file mentions,
custom messages, compaction and branch summaries. Each hit says which session and entry it is
in, whether that entry is on the session's current branch (the path to the leaf omp resumes
from) or on an abandoned branch, which branch tip it leads to, and gives a one-line snippet with
the match position so a caller can highlight it.

>>> import re
>>> snippet_of("one two three", re.search("two", "one two three"), width=3)
('…ne two th…', 4, 7)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from omp_session.errors import SessionError
from omp_session.manager import SessionManager
from omp_session.model.tree import SessionTreeNode
from omp_session.store import SessionStorage
from omp_session.tools.entry_text import EntryText, entry_text
from omp_session.tools.reading import read_session

Entry = dict[str, Any]
Progress = Callable[[int, int, Path], None]

__all__ = [
    "EntryText",
    "SearchHit",
    "SessionTree",
    "branch_tips",
    "compile_query",
    "entry_text",
    "hits_in",
    "search_paths",
    "search_session",
    "search_sessions",
    "snippet_of",
]

_WHITESPACE = re.compile(r"\s+")

#: Characters of context on each side of a match in a snippet.
SNIPPET_CONTEXT = 40


@dataclass(frozen=True)
class SearchHit:
    """One entry that matches. ``match_start``/``match_end`` index into ``snippet``."""

    path: str
    session_id: str
    entry_id: str
    role: str
    timestamp: str | None
    on_current_branch: bool
    #: The tip of a branch through this entry: the current leaf, or the newest abandoned tip.
    branch_leaf_id: str | None
    snippet: str
    match_start: int
    match_end: int
    #: How many times the query occurs in this entry.
    matches: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_JSON_PUNCTUATION = re.compile(r"([:,])\s*")


def _literal(query: str) -> str:
    """``query`` as a literal pattern, except that after a ``:`` or ``,`` any run of whitespace
    (none included) matches: ``"command": "grep`` finds the tool arguments omp wrote as
    ``"command":"grep``, and the other way round."""
    pieces = _JSON_PUNCTUATION.split(query)
    pattern = []
    for position, piece in enumerate(pieces):
        pattern.append(re.escape(piece) + (r"\s*" if position % 2 else ""))
    return "".join(pattern)


def compile_query(query: str, *, regex: bool = False, case_sensitive: bool = False) -> re.Pattern[str]:
    """The pattern for ``query``: literal text (see :func:`_literal`) unless ``regex``; ``re.error``
    for a bad regex."""
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile(query if regex else _literal(query), flags)


def _squeeze(text: str) -> str:
    return _WHITESPACE.sub(" ", text)


def snippet_of(text: str, match: re.Match[str], width: int = SNIPPET_CONTEXT) -> tuple[str, int, int]:
    """A one-line excerpt around ``match`` and the match's start and end inside it.

    Runs of whitespace (line breaks included) become one space; ``…`` marks cut ends.
    """
    start, end = match.span()
    left, right = max(start - width, 0), min(end + width, len(text))
    before = ("…" if left > 0 else "") + _squeeze(text[left:start]).lstrip()
    found = _squeeze(text[start:end])
    after = _squeeze(text[end:right]).rstrip() + ("…" if right < len(text) else "")
    return before + found + after, len(before), len(before) + len(found)


class SessionTree(Protocol):
    """What the branch of a hit is told from: a session's tree and the path to a leaf (an open
    session, or the store catalog's reduced entries)."""

    def get_tree(self) -> Sequence[SessionTreeNode]: ...
    def get_branch(self, from_id: str | None = None) -> Sequence[Entry]: ...


def branch_tips(session: SessionTree, current: str | None) -> dict[str, str]:
    """For every entry id, a leaf below it: the current leaf on its path, else the newest tip."""
    tips: dict[str, str] = {}
    order: list[Any] = []
    for root in session.get_tree():
        order.extend(node for node, _depth in root.walk())
    for node in reversed(order):  # children before parents
        entry_id = node.entry.get("id")
        if not isinstance(entry_id, str) or entry_id in tips:
            continue
        below = [
            tips[c.entry["id"]]
            for c in node.children
            if isinstance(c.entry.get("id"), str) and c.entry["id"] in tips
        ]
        tips[entry_id] = below[-1] if below else entry_id  # children are sorted oldest first
    for entry in session.get_branch(current):
        tips[str(entry.get("id"))] = str(current)
    return tips


def _entry_texts(entries: Iterable[Entry]) -> Iterator[EntryText]:
    for entry in entries:
        found = entry_text(entry)
        entry_id, timestamp = entry.get("id"), entry.get("timestamp")
        if found is not None and isinstance(entry_id, str):
            yield EntryText(entry_id, found[0], timestamp if isinstance(timestamp, str) else None, found[1])


def hits_in(
    texts: Iterable[EntryText],
    pattern: re.Pattern[str],
    *,
    path: str,
    session_id: str,
    tree: SessionTree,
    current: str | None,
) -> list[SearchHit]:
    """Hits of ``pattern`` in ``texts`` (one session's, file order), their branches told from
    ``tree`` whose leaf is ``current``; the tree is walked only when something matches."""
    on_path: set[str] | None = None
    tips: dict[str, str] = {}
    hits: list[SearchHit] = []
    for item in texts:
        match = pattern.search(item.text)
        if match is None:
            continue
        if on_path is None:  # only walk the tree for sessions that match
            on_path = {str(e.get("id")) for e in tree.get_branch(current)}
            tips = branch_tips(tree, current)
        snippet, start, end = snippet_of(item.text, match)
        hits.append(
            SearchHit(
                path=path,
                session_id=session_id,
                entry_id=item.entry_id,
                role=item.role,
                timestamp=item.timestamp,
                on_current_branch=item.entry_id in on_path,
                branch_leaf_id=tips.get(item.entry_id),
                snippet=snippet,
                match_start=start,
                match_end=end,
                matches=sum(1 for _ in pattern.finditer(item.text)),
            )
        )
    return hits


def search_session(
    session: SessionManager, pattern: re.Pattern[str], path: Path | str | None = None
) -> list[SearchHit]:
    """Hits of ``pattern`` in one open session (file order); ``path`` names the file in the hits
    (default: the session's file)."""
    path = path if path is not None else session.get_session_file() or ""
    return hits_in(
        _entry_texts(session.get_entries()),
        pattern,
        path=os.fspath(path),
        session_id=session.get_session_id(),
        tree=session,
        current=session.get_leaf_id(),
    )


def search_sessions(
    paths: Sequence[Path | str],
    pattern: re.Pattern[str],
    *,
    progress: Progress | None = None,
    errors: list[tuple[str, str]] | None = None,
    storage: SessionStorage | None = None,
) -> Iterator[SearchHit]:
    """Search every session of ``paths`` (files, else rows of ``storage``) in order, yielding
    hits as they are found.

    ``progress(done, total, path)`` is called after each file; files that cannot be read are
    appended to ``errors`` as ``(path, reason)`` (and otherwise skipped silently).
    """
    for done, raw in enumerate(paths, start=1):
        path = Path(raw)
        try:
            with read_session(path, storage=storage) as session:
                hits = search_session(session, pattern, path)
        except (SessionError, OSError) as exc:
            if errors is not None:
                errors.append((os.fspath(path), str(exc)))
        else:
            yield from hits
        if progress is not None:
            progress(done, len(paths), path)


def search_paths(
    paths: Iterable[Path | str], query: str, *, regex: bool = False, storage: SessionStorage | None = None
) -> list[SearchHit]:
    """Convenience: every hit of ``query`` (literal unless ``regex``, case-insensitive) in ``paths``
    (files, else rows of ``storage``)."""
    return list(search_sessions(list(paths), compile_query(query, regex=regex), storage=storage))
