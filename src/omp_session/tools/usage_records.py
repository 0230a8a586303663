"""Per-entry usage facts: what every usage report is computed from, whatever reads the store.

A :class:`UsageRecord` is one entry's spend: when, which model, the tokens by kind, the cost omp
recorded (``None`` when it recorded none) and which session and project it belongs to. The reports
(:mod:`omp_session.tools.usage_report`) are pure functions over an iterable of records, so a
catalog of the store can feed them as well as the full read below (:func:`collect_records`).

Which entries count is spec §6.3, the rule of :class:`~omp_session.model.usage.UsageStatistics`:
every assistant message with ``usage`` and every ``task`` tool result with ``details.usage``, on
every branch (tokens spent on an abandoned branch were spent), and an entry a fork copied from
another listed session counts once (:func:`omp_session.tools.stats.counted_once`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, TypeVar

from omp_session.store import SessionStorage
from omp_session.tools.catalog import Catalog, FactsSession, UsageSession
from omp_session.tools.stats import KeyedSession, ReadSession, SessionOfFile, copy_free, counted_keys
from omp_session.tools.store_reads import read_sessions
from omp_session.tools.usage_facts import (
    NO_PROJECT,
    SUB_AGENT,
    UNKNOWN_MODEL,
    QuarterDays,
    UsageGroup,
    UsageRecord,
    entry_facts,
    group_of,
    header_facts,
    record_fields,
)

Entry = dict[str, Any]
S = TypeVar("S", bound=SessionOfFile)

__all__ = [
    "NO_PROJECT",
    "SUB_AGENT",
    "UNKNOWN_MODEL",
    "CollectedRecords",
    "UsageRecord",
    "collect_records",
    "facts_of",
    "oldest_first",
    "records_of_facts",
    "records_of_session",
]


def records_of_session(header: Entry, entries: Iterable[Entry]) -> Iterator[UsageRecord]:
    """The usage records of one session's entries (every entry given is counted)."""
    session_id, project, _started, _parent = header_facts(header)
    for entry in entries:
        fields = record_fields(entry)
        if fields is not None:
            yield UsageRecord(*fields, session_id, project)


@dataclass
class CollectedRecords:
    """The records of a set of session files, with what a report says about how they were read."""

    records: list[UsageRecord]
    #: Session id → its title or first prompt (the session view's label).
    titles: dict[str, str]
    #: Session id → its file.
    paths: dict[str, str]
    #: Entries left out because another listed session (the fork's parent) already counted them.
    copied_entries: int
    #: ``(path, reason)`` of files that could not be read.
    skipped: list[tuple[str, str]]
    #: The spend of the other sessions, summed by the store catalog (sessions that name no
    #: parent and share no entry's copy key, so hold no copy): by quarter hour (``"time"``: what
    #: the dated views and the model view read), by session id and by project (and quarter hour,
    #: when collected for a date range), for the views the records were collected for. Each group
    #: lies in one day of the time zone they were collected for.
    summed: dict[str, list[UsageGroup]] = field(default_factory=dict)

    def groups(self, view: str) -> Iterator[UsageGroup]:
        """Everything ``view`` counts: each record as a group of one, then the summed groups."""
        yield from map(group_of, self.records)
        if self.summed:
            kind = _summed_by(view)
            if kind == "time" and view != "blocks" and "day" in self.summed:
                kind = "day"
            if kind not in self.summed:
                raise ValueError(f"usage records collected without the {view} view")
            yield from self.summed[kind]


#: Every view of the reports (``usage_report.VIEWS``: which sums they read is all that matters).
_EVERY_VIEW = ("daily", "blocks", "session", "project")


def _summed_by(view: str) -> str:
    """Which sums of the catalog a view reads."""
    return view if view in ("session", "project") else "time"


def _summed(
    wanted: list[Path],
    skipped: list[tuple[str, str]],
    catalog: Catalog,
    zone: tzinfo,
    ranged: bool,
    views: Collection[str],
) -> CollectedRecords | None:
    """The records as :func:`collect_records` gives them, summed by the catalog where it can;
    ``None`` when it cannot (a session it does not hold, an unreadable catalog)."""
    index = catalog.usage_index(wanted)
    if index is None:
        return None
    rows, held = index
    listed = [os.fspath(path) for path in wanted]
    missing = [Path(path) for path in listed if path not in rows]
    if missing:
        mark = len(skipped)
        if read_sessions(missing, skipped, catalog):
            del skipped[mark:]
            return None  # a session read in full: copies between it and the others need every key
    ordered = sorted((rows[path] for path in listed if path in rows), key=_started)
    pairs = catalog.shared_keys()
    if pairs is None:
        return None
    separate = copy_free(rows, pairs)
    # A date range needs the sums by quarter hour, to know that each lies in one day of ``zone``.
    kinds = {_summed_by(view) for view in views} | ({"time"} if ranged else set())
    day_offset = _day_offset(zone)
    if "time" in kinds and "blocks" not in views and day_offset is not None:
        # Summed by day in SQL: every view but the blocks' reads a group's day only, and a day
        # holds a few groups where its quarter hours hold many (what the report adds in Python).
        kinds = (kinds - {"time"}) | {"day"}
    for _attempt in range(2):
        # The catalog's sums of the listed sessions not separate: of those named, or of every
        # session but those named when every session it sums is listed.
        every = sum(not row.separate for row in rows.values()) == held
        named = sorted(separate - {row.path for row in rows.values() if row.separate}) if every else None
        subset = [path for path in rows if path not in separate] if named is None else named
        found = {
            kind: catalog.usage_groups(
                subset, by=kind, by_bucket=ranged, exclude=named is not None, day_offset_s=day_offset or 0
            )
            for kind in kinds
        }
        sums = {kind: rows_found for kind, rows_found in found.items() if rows_found is not None}
        if len(sums) != len(found):
            return None
        days = QuarterDays(zone)
        if _quarter_aligned(zone) or not any(
            _straddles(days, row[-2], row[-1]) for row in sums.get("time", ())
        ):
            break
        # A quarter hour across two days of ``zone`` (an offset of no whole quarter hours): the
        # sessions with spend in it are counted record by record.
        fine = catalog.usage_groups(subset, by="path", by_bucket=True, exclude=named is not None) or []
        separate |= {row[1] for row in fine if _straddles(days, row[-2], row[-1])}
    else:
        return None
    facts = catalog.usage_facts(separate, refresh=False) if separate else {}
    if len(facts) != len(separate):
        return None
    loaded = oldest_first([facts[path] for path in listed if path in facts])
    records, copies = records_of_facts(loaded)
    offset = 2 if ranged else 1
    groups = {
        "time": [_group(row[1:]) for row in sums.get("time", ())],
        "day": [_group(row[1:]) for row in sums.get("day", ())],
        "session": [_group(row[offset:], session_id=row[offset - 1]) for row in sums.get("session", ())],
        "project": [_group(row[offset:], project=row[offset - 1]) for row in sums.get("project", ())],
    }
    return CollectedRecords(
        records,
        {row.session_id: row.title for row in ordered},
        {row.session_id: row.path for row in ordered},
        copies,
        skipped,
        {kind: groups[kind] for kind in kinds},
    )


def _group(row: Sequence[Any], session_id: str = "", project: str = "") -> UsageGroup:
    """A summed row of ``Catalog.usage_groups`` (from its model on) as a group."""
    model, recorded, tokens_in, tokens_out, read, write, cost, turns, first, last = row
    return UsageGroup(
        first,
        last,
        model,
        bool(recorded),
        tokens_in,
        tokens_out,
        read,
        write,
        cost,
        turns,
        session_id,
        project,
    )


def _started(row: UsageSession) -> str:
    """``oldest_first``'s key for a catalogued session (its header's timestamp)."""
    return row.started


def _day_offset(zone: tzinfo) -> int | None:
    """The offset of ``zone`` from UTC in seconds when it is fixed and of whole quarter hours (so
    every quarter hour lies in one of its days, which SQL can number), else ``None``."""
    if not _quarter_aligned(zone):
        return None
    offset = zone.utcoffset(None)
    return None if offset is None else int(offset.total_seconds())


def _quarter_aligned(zone: tzinfo) -> bool:
    """Whether every quarter hour lies in one day of ``zone``: a fixed offset of whole quarter
    hours (UTC, ``--timezone +05:30``), so no sum needs checking."""
    if not isinstance(zone, timezone):
        return False
    offset = zone.utcoffset(None)
    return offset % timedelta(minutes=15) == timedelta(0)


def _straddles(days: QuarterDays, first: int | None, last: int | None) -> bool:
    try:
        days.of(first, last)
    except ValueError:
        return True
    return False


def _read(wanted: list[Path], skipped: list[tuple[str, str]], catalog: Catalog) -> list[FactsSession]:
    """The usage facts of the sessions of ``wanted``: the store catalog's, kept precomputed, and
    those of the sessions it cannot hold read in full (:func:`read_sessions`); oldest first."""
    held = catalog.usage_facts(wanted)
    missing = [path for path in wanted if os.fspath(path) not in held]
    read = read_sessions(missing, skipped, catalog) if missing else []
    for session in read:
        held[os.fspath(session.path)] = facts_of(session, session.title)
    loaded = [held[os.fspath(path)] for path in wanted if os.fspath(path) in held]
    return oldest_first(loaded)


def oldest_first(loaded: list[S]) -> list[S]:
    """``loaded`` sorted by their headers' time: the oldest made a copy a fork holds."""
    return sorted(loaded, key=lambda item: header_facts(item.header)[2])


def collect_records(
    paths: Iterable[Path | str],
    *,
    catalog: Catalog | None = None,
    zone: tzinfo = timezone.utc,
    ranged: bool = False,
    views: Collection[str] = _EVERY_VIEW,
    storage: SessionStorage | None = None,
) -> CollectedRecords:
    """Every usage record of the sessions in ``paths`` (files, else rows of ``storage``; copies
    made by forks counted once), read through the store ``catalog`` (default: the agent dir's
    catalog of that store, which it brings up to date; sessions it cannot hold are read in
    full). Files that cannot be read are listed in ``skipped``.

    The catalog sums the spend of the sessions that share no entry id with another session (nor
    twice within themselves): they hold no copy, so every record of theirs counts, and the sums
    are :attr:`CollectedRecords.summed`, for reports of ``views`` in ``zone`` (and over a date
    range when ``ranged``). The other sessions' records are counted one
    by one by the copy-once rule, with the sessions their ``parentSession`` may name."""
    skipped: list[tuple[str, str]] = []
    wanted = [path if isinstance(path, Path) else Path(path) for path in paths]
    used = catalog if catalog is not None else Catalog(storage=storage)
    try:
        summed = _summed(wanted, skipped, used, zone, ranged, views)
        loaded = _read(wanted, skipped, used) if summed is None else []
    finally:
        if catalog is None:
            used.close()
    if summed is not None:
        return summed
    records, copies = records_of_facts(loaded)
    titles = {str(item.header.get("id")): item.title for item in loaded}
    files = {str(item.header.get("id")): os.fspath(item.path) for item in loaded}
    return CollectedRecords(records, titles, files, copies, skipped)


def facts_of(session: ReadSession, title: str) -> FactsSession:
    """The usage facts of a session read with its entries."""
    keys, spent = entry_facts(list(session.entries))
    return FactsSession(session.path, session.header, title, keys, spent)


def records_of_facts(loaded: Sequence[FactsSession]) -> tuple[list[UsageRecord], int]:
    """The records of ``loaded`` (oldest first), copies made by forks left out, and how many
    entries were left out so."""
    records: list[UsageRecord] = []
    copies = 0
    keyed = [KeyedSession(item.path, item.header, item.keys) for item in loaded]
    owners = []
    for item in loaded:
        session_id, project, _started, _parent = header_facts(item.header)
        owners.append((session_id, project))
    for position, index, counted in counted_keys(keyed):
        if not counted:
            copies += 1
            continue
        fields = loaded[position].spent.get(index)
        if fields is not None:
            records.append(UsageRecord(*fields, *owners[position]))
    return records, copies
