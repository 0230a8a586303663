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

import contextlib
import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson

from omp_session.errors import SessionError
from omp_session.gcpause import gc_paused
from omp_session.manager import SessionManager
from omp_session.model.tree import SessionIndex, path_stopping_at_repeat
from omp_session.model.tree_nodes import entry_id_of
from omp_session.model.usage import UsageStatistics
from omp_session.store import SessionStorage
from omp_session.tools.catalog import DAMAGED_ROW, Catalog, CatalogSession, UsageSession
from omp_session.tools.reading import read_session
from omp_session.tools.transcript import leaf_ids
from omp_session.tools.usage_facts import CopyKey, copy_key

Entry = dict[str, Any]

__all__ = [
    "BranchStats",
    "BranchSummary",
    "SessionStats",
    "StatsReport",
    "Totals",
    "collect_stats",
    "session_stats",
]


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

    def merge(self, other: Totals) -> None:
        """Add ``other`` (totals of other entries, counted after these) into these totals: what
        counting its entries here would give, but for the order in which floats are added."""
        self.usage.add_totals(other.usage)
        self.entries += other.entries
        self.messages += other.messages
        _add_counts(self.roles, other.roles)
        _add_counts(self.models, other.models)
        _add_counts(self.tool_calls, other.tool_calls)

    def to_state(self) -> dict[str, Any]:
        """Everything, for the store catalog (read back with :meth:`from_state`; the counters'
        order is kept, which orders their ties)."""
        return {
            "usage": self.usage.to_state(),
            "entries": self.entries,
            "messages": self.messages,
            "roles": list(self.roles.items()),
            "models": list(self.models.items()),
            "toolCalls": list(self.tool_calls.items()),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Totals:
        return cls(
            UsageStatistics.from_state(state["usage"]),
            state["entries"],
            state["messages"],
            _counter(state["roles"]),
            _counter(state["models"]),
            _counter(state["toolCalls"]),
        )

    def without(self, part: Totals) -> Totals | None:
        """These totals less ``part`` (totals of some of the same entries), or ``None`` when
        ``part`` holds ``model_usage`` spend (nested totals that do not subtract)."""
        if part.usage.side:
            return None
        whole, less = self.usage.to_state(), part.usage.to_state()
        numbers = {
            key: value - less.get(key, 0)
            for key, value in whole.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }
        usage = UsageStatistics.from_state(numbers)
        usage.missing, usage.side = list(self.usage.missing), dict(self.usage.side)
        return Totals(
            usage,
            self.entries - part.entries,
            self.messages - part.messages,
            self.roles - part.roles,
            self.models - part.models,
            self.tool_calls - part.tool_calls,
        )

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


def _counter(pairs: Iterable[tuple[str, int]]) -> Counter[str]:
    """``Counter(dict(pairs))`` without ``Counter.update``'s checks (a store-wide ``stats``
    makes three per session)."""
    # (Counter.__new__: the counter without running Counter.__init__, Python code that checks
    # its arguments; a Counter holds nothing but its dict.)
    counter: Counter[str] = Counter.__new__(Counter)
    dict.update(counter, pairs)
    return counter


def _add_counts(into: Counter[str], more: Counter[str]) -> None:
    """``into.update(more)`` for two counters (the same sums, without its checks)."""
    get = into.get
    for key, count in more.items():
        into[key] = get(key, 0) + count


@dataclass
class BranchStats:
    """Totals of one root→leaf path."""

    leaf_id: str
    is_current: bool
    totals: Totals

    def to_dict(self) -> dict[str, Any]:
        return {"leafId": self.leaf_id, "current": self.is_current, **self.totals.to_dict()}


@dataclass(frozen=True)
class BranchSummary:
    """The branches other than the current one, summarised: how many, and the range of their
    sizes and costs (each branch is its leaf's whole root→leaf path)."""

    count: int
    min_entries: int
    max_entries: int
    min_cost: float
    max_cost: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "entries": {"min": self.min_entries, "max": self.max_entries},
            "cost": {"min": round(self.min_cost, 6), "max": round(self.max_cost, 6)},
        }


@dataclass
class SessionStats:
    """Totals of one session file (every entry once) and of its branches: each of them, or the
    current one and a :class:`BranchSummary` of the others (``other_branches``)."""

    path: str
    session_id: str
    title: str | None
    parent_session: str | None
    totals: Totals
    branches: list[BranchStats]
    #: Set when only the current branch is in ``branches``: the others, summarised.
    other_branches: BranchSummary | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "path": self.path,
            "id": self.session_id,
            "title": self.title,
            "parentSession": self.parent_session,
            "total": self.totals.to_dict(),
            "branches": [branch.to_dict() for branch in self.branches],
        }
        if self.other_branches is not None:
            out["otherBranches"] = self.other_branches.to_dict()
        return out


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


@dataclass
class _Walked:
    """One pass over a session's entries: their totals, and each root→entry path's size and cost
    (``depth``, ``path_cost``) with each entry's parent position, known when every parent link
    names an earlier entry with a unique id (``simple``; what omp writes)."""

    totals: Totals
    parent: list[int]
    depth: list[int]
    path_cost: list[float]
    position: dict[str, int]
    is_parent: list[bool]
    simple: bool


def _walk(entries: Sequence[Entry]) -> _Walked:
    totals = Totals()
    usage = totals.usage
    parent: list[int] = []
    depth: list[int] = []
    path_cost: list[float] = []
    position: dict[str, int] = {}
    is_parent = [False] * len(entries)
    simple = True
    for at, entry in enumerate(entries):
        before = usage.cost
        totals.add(entry)
        own = usage.cost - before
        entry_id, parent_id = entry.get("id"), entry.get("parentId")
        up = -1
        if parent_id is not None:
            found = position.get(parent_id) if isinstance(parent_id, str) else None
            if found is None:
                simple = False  # a link to a later, missing or odd id: the general walk below
            else:
                up = found
                is_parent[found] = True
        if isinstance(entry_id, str):
            if entry_id in position:
                simple = False  # a repeated id: the later entry wins the id, as omp's map keeps
            position[entry_id] = at
        parent.append(up)
        depth.append(depth[up] + 1 if up >= 0 else 1)
        path_cost.append(path_cost[up] + own if up >= 0 else own)
    return _Walked(totals, parent, depth, path_cost, position, is_parent, simple)


def _other_branches(entries: Sequence[Entry], walked: _Walked, current: str | None) -> BranchSummary | None:
    """The summary of every branch but ``current``: each leaf's path size and cost, from the
    walk's running sums (one pass however many long branches share their start, issue 27 #6)."""
    if walked.simple:
        sizes = [
            (walked.depth[at], walked.path_cost[at])
            for entry_id, at in walked.position.items()
            if not walked.is_parent[at] and entry_id != current
        ]
    else:
        sizes = _walked_slowly(entries, current)
    if not sizes:
        return None
    return BranchSummary(
        len(sizes),
        min(size for size, _ in sizes),
        max(size for size, _ in sizes),
        min(cost for _, cost in sizes),
        max(cost for _, cost in sizes),
    )


def _walked_slowly(entries: Sequence[Entry], current: str | None) -> list[tuple[int, float]]:
    """Each leaf's path size and cost in a file whose links are not all to earlier, unique ids:
    up through parent links (by id, the later entry for a repeated one) until a root, a missing
    parent or a repeat, memoised per id."""
    by_id: dict[str, Entry] = {}
    parents: set[Any] = set()
    for entry in entries:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            by_id[entry_id] = entry
        parent_id = entry.get("parentId")
        if isinstance(parent_id, str):
            parents.add(parent_id)
    counter = UsageStatistics()
    memo: dict[str, tuple[int, float]] = {}
    sizes: list[tuple[int, float]] = []
    for leaf in (entry_id for entry_id in by_id if entry_id not in parents and entry_id != current):
        chain: list[str] = []
        seen: set[str] = set()
        node: Any = leaf
        base = (0, 0.0)
        while isinstance(node, str) and node in by_id and node not in seen:
            if node in memo:
                base = memo[node]
                break
            seen.add(node)
            chain.append(node)
            node = by_id[node].get("parentId")
        count, cost = base
        for entry_id in reversed(chain):
            counter.cost = 0
            counter.add_entry(by_id[entry_id])
            count, cost = count + 1, cost + counter.cost
            memo[entry_id] = (count, cost)
        sizes.append(memo.get(leaf, base))
    return sizes


def _branch(
    session: SessionManager | None, entries: Sequence[Entry], walked: _Walked, leaf: str
) -> list[Entry]:
    """``session.get_branch(leaf)`` from the entries already read (a lazy session would decode
    every line of the path a second time): the parent positions of the walk when its links are
    simple (then every rule of the path walk gives the same path), else an eager index of the
    entries walked by the session's dialect, as its own navigation walks it."""
    if walked.simple:
        at = walked.position.get(leaf, -1)
        path: list[Entry] = []
        while at >= 0:
            path.append(entries[at])
            at = walked.parent[at]
        path.reverse()
        return path
    assert session is not None  # (a session without one is counted only when its links are simple)
    index = SessionIndex(entries)
    found = index.branch(leaf)
    if session.dialect.path_stops_at_repeated_id:
        return path_stopping_at_repeat(index, found, leaf)
    return found


def _branch_totals(
    session: SessionManager | None, entries: Sequence[Entry], walked: _Walked, leaf: str
) -> Totals:
    """The totals of the path to ``leaf``: the session's totals less the entries off the path when
    those are fewer (most of a long session is on its current branch), else counted directly."""
    path = _branch(session, entries, walked, leaf)
    if len(path) * 2 > len(entries):
        on_path = {id(entry) for entry in path}
        less = walked.totals.without(Totals.of(entry for entry in entries if id(entry) not in on_path))
        if less is not None:
            return less
    return Totals.of(path)


def _stats_of(
    session: SessionManager, path: Path | str, entries: list[Entry], branches: bool = True
) -> SessionStats:
    return _stats(
        path, entries, session.get_header(), session.get_leaf_id(), session, branches, _walk(entries)
    )


def _stats(
    path: Path | str,
    entries: Sequence[Entry],
    header: Entry,
    current: str | None,
    session: SessionManager | None,
    branches: bool,
    walked: _Walked,
) -> SessionStats:
    """A session's statistics from its entries (``session``, the open session, is needed for every
    branch, and for the current one when the walk's links are not simple)."""
    other: BranchSummary | None = None
    if branches:
        assert session is not None
        # Simple links: each path walked over the entries in memory (the session's own walk would
        # decode every line of each path again); otherwise the session's walk, by its dialect.
        rows = [
            BranchStats(
                leaf,
                leaf == current,
                Totals.of(
                    _branch(session, entries, walked, leaf) if walked.simple else session.get_branch(leaf)
                ),
            )
            for leaf in leaf_ids(session)
        ]
    else:
        rows = (
            [BranchStats(current, True, _branch_totals(session, entries, walked, current))] if current else []
        )
        other = _other_branches(entries, walked, current)
    title, parent = header.get("title"), header.get("parentSession")
    return SessionStats(
        path=os.fspath(path),
        session_id=str(header.get("id")),  # (SessionManager.get_session_id)
        title=title if isinstance(title, str) else None,
        parent_session=parent if isinstance(parent, str) else None,
        totals=walked.totals,
        branches=rows,
        other_branches=other,
    )


def _from_catalog(session: CatalogSession) -> SessionStats | None:
    """The summarised statistics of a catalogued session from its reduced entries (they keep every
    field the counters read), or ``None`` when its links are not simple (then the session is read:
    its dialect decides the paths)."""
    walked = _walk(session.entries)
    if not walked.simple:
        return None
    current = entry_id_of(session.entries[-1]) if session.entries else None
    return _stats(session.path, session.entries, session.header, current, None, False, walked)


def session_stats(
    path: Path | str, *, branches: bool = True, storage: SessionStorage | None = None
) -> SessionStats:
    """Statistics of one session file (or row of ``storage``; read only): every branch, or
    (``branches=False``) the current one and a summary of the others."""
    with read_session(path, storage=storage) as session:
        return _stats_of(session, path, list(session.get_entries()), branches)


def _parents(loaded: Sequence[SessionOfFile]) -> dict[int, int]:
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


class SessionOfFile(Protocol):
    """A session's file and header (what finds a fork's parent)."""

    @property
    def path(self) -> Path: ...
    @property
    def header(self) -> Entry: ...


class ReadSession(SessionOfFile, Protocol):
    """What fork-aware counting needs of a session: its file, header and entries."""

    @property
    def entries(self) -> Sequence[Entry]: ...


class KeyedSession(NamedTuple):
    """A session's file, header and each entry's copy key (``usage_facts.copy_key``)."""

    path: Path
    header: Entry
    keys: Sequence[CopyKey | None]


def counted_keys(sessions: Sequence[KeyedSession]) -> Iterator[tuple[int, int, bool]]:
    """``(session position, entry position, counted)`` for every entry of ``sessions`` (oldest
    first): ``counted`` is false for a copy made by a fork (see the module docstring), which every
    cross-session total leaves out, so that a forked conversation is paid for once."""
    parents = _parents(sessions)
    ids = [{key[0] for key in session.keys if key is not None} for session in sessions]
    seen: set[CopyKey] = set()
    for position, session in enumerate(sessions):
        parent = parents.get(position)
        for index, key in enumerate(session.keys):
            if key is not None and (key in seen or (parent is not None and key[0] in ids[parent])):
                yield position, index, False
                continue
            if key is not None:
                seen.add(key)
            yield position, index, True


def counted_once(loaded: Sequence[ReadSession]) -> Iterator[tuple[int, Entry | None]]:
    """Every entry of ``loaded`` (oldest session first) as ``(session position, entry)``, with
    ``None`` in place of an entry that is a copy made by a fork (:func:`counted_keys`)."""
    keyed = [KeyedSession(s.path, s.header, [copy_key(e) for e in s.entries]) for s in loaded]
    for position, index, counted in counted_keys(keyed):
        yield position, loaded[position].entries[index] if counted else None


def _combined(loaded: Sequence[_Read]) -> tuple[Totals, int]:
    if len(loaded) == 1 and _no_repeated_keys(loaded[0].entries):
        return loaded[0].stats.totals, 0  # nothing to count once: the session's own totals
    total, copies = Totals(), 0
    for _position, entry in counted_once(loaded):
        if entry is None:
            copies += 1
        else:
            total.add(entry)
    return total, copies


def _no_repeated_keys(entries: Sequence[Entry]) -> bool:
    ids = [entry_id for entry in entries if isinstance(entry_id := entry.get("id"), str)]
    if len(set(ids)) == len(ids):
        return True  # a key holds the id: unique ids, unique keys (and no repr of each timestamp)
    keys = [key for key in map(copy_key, entries) if key is not None]
    return len(set(keys)) == len(keys)


def collect_stats(
    paths: Iterable[Path | str],
    *,
    branches: bool = True,
    storage: SessionStorage | None = None,
    catalog: Catalog | None = None,
) -> StatsReport:
    """Statistics of every session in ``paths`` (files, else rows of ``storage``) and their
    combined totals (copies counted once); each session's branches as :func:`session_stats` gives
    them. Summarised (``branches=False``), they are read through the store ``catalog`` (default:
    the agent dir's, of ``storage``), which keeps each session's statistics once computed.

    Files that cannot be loaded are listed in ``skipped`` instead of stopping the whole report.
    """
    loaded: list[_Read] = []
    skipped: list[tuple[str, str]] = []
    wanted = [raw if isinstance(raw, Path) else Path(raw) for raw in paths]
    held: dict[str, CatalogSession] = {}
    if not branches:  # summarised: from the store catalog, without opening the sessions
        with catalog if catalog is not None else Catalog(storage=storage) as used, gc_paused():
            kept = _kept(wanted, used)
            if kept is not None:
                return kept
            held = {os.fspath(session.path): session for session in used.sessions(wanted)}
    for path in wanted:
        reduced = held.get(os.fspath(path))
        stats = _from_catalog(reduced) if reduced is not None else None
        if reduced is not None and stats is not None:
            loaded.append(_Read(path, reduced.header, reduced.entries, stats))
            continue
        try:
            # gc_paused: the counting builds many small acyclic objects (see gcpause).
            with read_session(path, storage=storage) as session, gc_paused():
                # A list: kept after the session is closed, and a lazy view would keep its file
                # open (one descriptor per session of the report).
                entries = list(session.get_entries())
                stats = _stats_of(session, path, entries, branches)
                loaded.append(_Read(path, session.get_header(), entries, stats))
        except (SessionError, OSError) as exc:
            skipped.append((os.fspath(path), str(exc)))
    # Oldest first, so an entry a fork copied is attributed to the session that made it.
    loaded.sort(key=lambda item: str(item.header.get("timestamp") or ""))
    total, copies = _combined(loaded)
    return StatsReport([item.stats for item in loaded], total, copies, skipped)


def _stats_state(stats: SessionStats) -> bytes:
    """A summarised :class:`SessionStats` (its path aside) as the catalog keeps it."""
    other = stats.other_branches
    state = {
        "id": stats.session_id,
        "title": stats.title,
        "parent": stats.parent_session,
        "totals": stats.totals.to_state(),
        "branches": [[row.leaf_id, row.is_current, row.totals.to_state()] for row in stats.branches],
        "other": None
        if other is None
        else [other.count, other.min_entries, other.max_entries, other.min_cost, other.max_cost],
    }
    return orjson.dumps(state)


def _stats_of_state(path: str, data: bytes) -> SessionStats:
    state = orjson.loads(data)
    other = state["other"]
    whole = state["totals"]
    totals = Totals.from_state(whole)
    return SessionStats(
        path=path,
        session_id=state["id"],
        title=state["title"],
        parent_session=state["parent"],
        totals=totals,
        # A branch holding every entry (a session of one branch) has the session's totals: the
        # object read once is shared (a report never changes either; a store-wide ``stats``
        # reads thousands of these).
        branches=[
            BranchStats(leaf, current, totals if counted == whole else Totals.from_state(counted))
            for leaf, current, counted in state["branches"]
        ],
        other_branches=BranchSummary(*other) if other is not None else None,
    )


def copy_free(rows: Mapping[str, UsageSession], pairs: Iterable[tuple[int, int]]) -> set[str]:
    """The paths of ``rows`` (catalogued sessions) whose entries must be counted one by one by the
    copy-once rule (:func:`counted_keys`) when these sessions are counted together: those the
    catalog marked (a ``parentSession``, a copy key held twice), those sharing a copy key with
    another of them (``pairs``: catalog owners), and every session a marked one's parent may be
    (by path or id: the rule finds the parent among every listed session). Every entry of the
    others counts (they hold no copy and no copy of theirs is here)."""
    separate = {row.path for row in rows.values() if row.separate}
    by_owner = {row.owner: row.path for row in rows.values()}
    separate |= {by_owner[a] for a, b in pairs if a in by_owner and b in by_owner}
    names = {
        name
        for row in rows.values()
        if row.separate and row.parent
        for name in (row.parent, os.path.abspath(row.parent))
    }
    if names:
        separate |= {row.path for row in rows.values() if names & {os.path.abspath(row.path), row.session_id}}
    return separate


def _kept(wanted: list[Path], catalog: Catalog) -> StatsReport | None:
    """The summarised report from the statistics the catalog keeps per session (computed and
    kept for those it has none of), the combined totals from them too but for the sessions that
    may hold a copy (:func:`copy_free`), which are counted entry by entry; ``None`` when the
    catalog does not hold every session (the caller reads them)."""
    index = catalog.usage_index(wanted)
    pairs = catalog.shared_keys()
    if index is None or pairs is None:
        return None
    rows = index[0]
    listed = [os.fspath(path) for path in wanted]
    kept = catalog.kept_stats(listed)
    if kept is None or any(path not in rows or path not in kept for path in listed):
        return None
    stats: dict[str, SessionStats] = {}
    for path in listed:
        state = kept[path][1]
        if state is not None:
            with contextlib.suppress(*DAMAGED_ROW):  # else computed again below, and kept again
                stats[path] = _stats_of_state(path, state)
    missing = [path for path in listed if path not in stats]
    for session in catalog.sessions(missing) if missing else ():
        made = _from_catalog(session)
        if made is None:
            return None  # links the caller's full read walks by the session's dialect
        stats[os.fspath(session.path)] = made
    if len(stats) != len(listed):
        return None
    catalog.keep_stats([(path, kept[path][0], _stats_state(stats[path])) for path in missing])
    # Oldest first (as the full read sorts them).
    order = sorted(listed, key=lambda path: rows[path].started)
    if len(order) == 1:
        combined = _combined_rows(order, rows, pairs, stats, catalog)
    else:
        # The combined totals are a function of the listed rows, in order (each named by its
        # stamp): kept under their digest, they are read back while none of them changes.
        listing = hashlib.blake2b(orjson.dumps([[path, kept[path][0]] for path in order])).digest()
        combined = _total_of_state(catalog.kept_total(listing))
        if combined is None:
            combined = _combined_rows(order, rows, pairs, stats, catalog)
            if combined is not None and (state := _total_state(*combined)) is not None:
                catalog.keep_total(listing, state)
    if combined is None:
        return None
    total, copies = combined
    return StatsReport([stats[path] for path in order], total, copies, [])


def _combined_rows(
    order: Sequence[str],
    rows: Mapping[str, UsageSession],
    pairs: Iterable[tuple[int, int]],
    stats: Mapping[str, SessionStats],
    catalog: Catalog,
) -> tuple[Totals, int] | None:
    """The combined totals of the catalogued sessions ``order`` (oldest first) and how many
    entries were left out as copies: the kept statistics of each session summed, but for the
    sessions that may hold a copy (:func:`copy_free`), counted entry by entry from their reduced
    entries; ``None`` when the catalog does not hold those."""
    separate = copy_free(rows, pairs)
    held = (
        {os.fspath(session.path): session for session in catalog.sessions(sorted(separate))}
        if separate
        else {}
    )
    if len(held) != len(separate):
        return None
    counted_sessions = [path for path in order if path in separate]
    keyed = [
        KeyedSession(Path(path), held[path].header, [copy_key(entry) for entry in held[path].entries])
        for path in counted_sessions
    ]
    counted: dict[str, list[int]] = {path: [] for path in counted_sessions}
    copies = 0
    for position, index_of, is_counted in counted_keys(keyed):
        if is_counted:
            counted[counted_sessions[position]].append(index_of)
        else:
            copies += 1
    if len(order) == 1 and not copies:
        return stats[order[0]].totals, 0  # (as _combined: the session's own totals)
    total = Totals()
    for path in order:
        if path in separate:
            entries = held[path].entries
            for at in counted[path]:
                total.add(entries[at])
        else:
            total.merge(stats[path].totals)
    return total, copies


def _total_state(total: Totals, copies: int) -> bytes | None:
    """Combined totals as the catalog keeps them; ``None`` when JSON would not give them back
    as they are (a NaN, an integer beyond 64 bits)."""
    state = total.to_state()
    try:
        data = orjson.dumps({"total": state, "copies": copies})
    except orjson.JSONEncodeError:
        return None
    return data if Totals.from_state(orjson.loads(data)["total"]).to_state() == state else None


def _total_of_state(data: bytes | None) -> tuple[Totals, int] | None:
    if data is None:
        return None
    try:
        state = orjson.loads(data)
        return Totals.from_state(state["total"]), int(state["copies"])
    except DAMAGED_ROW:
        return None  # computed again (and kept again)
