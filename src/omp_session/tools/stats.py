"""Usage statistics: tokens, cost, models, messages and tool calls, per branch, per session and in total.

Token and cost accounting is :class:`omp_session.model.usage.UsageStatistics` (spec §6.3: every
assistant message plus ``task`` tool results with usage). On top of it:

* per **branch**: each leaf's root→leaf path (entries shared by several branches count in each);
* per **session**: every entry of the file once, all branches (tokens spent on abandoned
  branches were still spent);
* in **total** across sessions, entries a fork copied from its parent are counted once. An entry
  is a copy when another listed session already contributed the same ``(id, timestamp, type)``,
  or when its session's header ``parentSession`` names another listed session (by path or id)
  that has an entry with the same id. ``fork``, ``fork_from`` and ``create_branched_session``
  all keep ids and timestamps, so copies are recognised whichever way they were made.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from omp_session.errors import SessionError
from omp_session.manager import SessionManager
from omp_session.model.usage import UsageStatistics
from omp_session.tools.reading import read_session
from omp_session.tools.transcript import leaf_ids

Entry = dict[str, Any]

__all__ = ["BranchStats", "SessionStats", "StatsReport", "Totals", "collect_stats", "session_stats"]


@dataclass
class Totals:
    """Counters over a set of entries."""

    usage: UsageStatistics = field(default_factory=UsageStatistics)
    entries: int = 0
    messages: int = 0
    roles: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    tool_calls: Counter[str] = field(default_factory=Counter)

    def add(self, entry: Entry) -> None:
        """Count one entry."""
        self.entries += 1
        self.usage.add_entry(entry)
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict):
            return
        self.messages += 1
        role = message.get("role")
        self.roles[role if isinstance(role, str) else "?"] += 1
        if role != "assistant":
            return
        model, provider = message.get("model"), message.get("provider")
        if isinstance(model, str):
            self.models[f"{provider}/{model}" if isinstance(provider, str) else model] += 1
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall":
                name = block.get("name")
                self.tool_calls[name if isinstance(name, str) else "?"] += 1

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> Totals:
        totals = cls()
        for entry in entries:
            totals.add(entry)
        return totals

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: omp's usage keys, then the counters sorted by count (most first)."""
        usage = self.usage.to_dict()
        cost = usage["cost"]
        usage["cost"] = round(cost, 6) if cost is not None else None  # float sums drift in the last digits
        return {
            **usage,
            "entries": self.entries,
            "messages": self.messages,
            "roles": dict(self.roles.most_common()),
            "models": dict(self.models.most_common()),
            "toolCalls": dict(self.tool_calls.most_common()),
        }


@dataclass
class BranchStats:
    """Totals of one root→leaf path."""

    leaf_id: str
    is_current: bool
    totals: Totals

    def to_dict(self) -> dict[str, Any]:
        return {"leafId": self.leaf_id, "current": self.is_current, **self.totals.to_dict()}


@dataclass
class SessionStats:
    """Totals of one session file (every entry once) and of each of its branches."""

    path: str
    session_id: str
    title: str | None
    parent_session: str | None
    totals: Totals
    branches: list[BranchStats]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "id": self.session_id,
            "title": self.title,
            "parentSession": self.parent_session,
            "total": self.totals.to_dict(),
            "branches": [branch.to_dict() for branch in self.branches],
        }


@dataclass
class StatsReport:
    """Sessions, their combined totals (copies counted once) and what could not be read."""

    sessions: list[SessionStats]
    total: Totals
    #: Entries left out of ``total`` because another listed session already counted them.
    copied_entries: int = 0
    #: ``(path, reason)`` of files that could not be loaded.
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": [session.to_dict() for session in self.sessions],
            "total": self.total.to_dict(),
            "copiedEntries": self.copied_entries,
            "skipped": [{"path": path, "reason": reason} for path, reason in self.skipped],
        }


class _Read(NamedTuple):
    """What the combined totals need of one session, kept after the session is closed."""

    path: Path
    header: Entry
    entries: Sequence[Entry]
    stats: SessionStats


def _stats_of(session: SessionManager, path: Path | str) -> SessionStats:
    current = session.get_leaf_id()
    branches = [
        BranchStats(leaf, leaf == current, Totals.of(session.get_branch(leaf))) for leaf in leaf_ids(session)
    ]
    header = session.get_header()
    title, parent = header.get("title"), header.get("parentSession")
    return SessionStats(
        path=os.fspath(path),
        session_id=session.get_session_id(),
        title=title if isinstance(title, str) else None,
        parent_session=parent if isinstance(parent, str) else None,
        totals=Totals.of(session.get_entries()),
        branches=branches,
    )


def session_stats(path: Path | str) -> SessionStats:
    """Statistics of one session file (read only)."""
    with read_session(path) as session:
        return _stats_of(session, path)


def _copy_key(entry: Entry) -> tuple[str, str, str] | None:
    entry_id = entry.get("id")
    # repr: timestamp and type may be any JSON value in a damaged file (a list is not hashable).
    return (
        (entry_id, repr(entry.get("timestamp")), repr(entry.get("type")))
        if isinstance(entry_id, str)
        else None
    )


def _parents(loaded: Sequence[ReadSession]) -> dict[int, int]:
    """Position of each session's listed parent (``parentSession`` is a path or an id, §9 #14)."""
    by_name: dict[str, int] = {}
    for position, session in enumerate(loaded):
        by_name.setdefault(os.path.abspath(session.path), position)
        by_name.setdefault(str(session.header.get("id")), position)
    parents: dict[int, int] = {}
    for position, session in enumerate(loaded):
        parent = session.header.get("parentSession")
        if isinstance(parent, str):
            found = by_name.get(parent, by_name.get(os.path.abspath(parent)))
            if found is not None and found != position:
                parents[position] = found
    return parents


class ReadSession(Protocol):
    """What fork-aware counting needs of a session: its file, header and entries."""

    @property
    def path(self) -> Path: ...
    @property
    def header(self) -> Entry: ...
    @property
    def entries(self) -> Sequence[Entry]: ...


def counted_once(loaded: Sequence[ReadSession]) -> Iterator[tuple[int, Entry | None]]:
    """Every entry of ``loaded`` (oldest session first) as ``(session position, entry)``, with
    ``None`` in place of an entry that is a copy made by a fork (see the module docstring): what
    every cross-session total counts, so a forked conversation is paid for once."""
    parents = _parents(loaded)
    ids = [{e.get("id") for e in session.entries if isinstance(e.get("id"), str)} for session in loaded]
    seen: set[tuple[str, str, str]] = set()
    for position, session in enumerate(loaded):
        parent = parents.get(position)
        for entry in session.entries:
            key = _copy_key(entry)
            if key is not None and (key in seen or (parent is not None and key[0] in ids[parent])):
                yield position, None
                continue
            if key is not None:
                seen.add(key)
            yield position, entry


def _combined(loaded: Sequence[_Read]) -> tuple[Totals, int]:
    total, copies = Totals(), 0
    for _position, entry in counted_once(loaded):
        if entry is None:
            copies += 1
        else:
            total.add(entry)
    return total, copies


def collect_stats(paths: Iterable[Path | str]) -> StatsReport:
    """Statistics of every session in ``paths`` and their combined totals (copies counted once).

    Files that cannot be loaded are listed in ``skipped`` instead of stopping the whole report.
    """
    loaded: list[_Read] = []
    skipped: list[tuple[str, str]] = []
    for raw in paths:
        path = Path(raw)
        try:
            with read_session(path) as session:
                # A list: kept after the session is closed, and a lazy view would keep its file
                # open (one descriptor per session of the report).
                entries = list(session.get_entries())
                loaded.append(_Read(path, session.get_header(), entries, _stats_of(session, path)))
        except (SessionError, OSError) as exc:
            skipped.append((os.fspath(path), str(exc)))
    # Oldest first, so an entry a fork copied is attributed to the session that made it.
    loaded.sort(key=lambda item: str(item.header.get("timestamp") or ""))
    total, copies = _combined(loaded)
    return StatsReport([item.stats for item in loaded], total, copies, skipped)
