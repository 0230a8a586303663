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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from omp_session.tools.catalog import Catalog, FactsSession
from omp_session.tools.stats import KeyedSession, ReadSession, SessionOfFile, counted_keys
from omp_session.tools.store_reads import read_sessions
from omp_session.tools.usage_facts import (
    NO_PROJECT,
    SUB_AGENT,
    UNKNOWN_MODEL,
    UsageRecord,
    entry_facts,
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
    session_id = str(header.get("id"))
    cwd = header.get("cwd")
    project = cwd if isinstance(cwd, str) and cwd else NO_PROJECT
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


def _read(
    paths: Iterable[Path | str], skipped: list[tuple[str, str]], catalog: Catalog | None
) -> list[FactsSession]:
    """The usage facts of the sessions of ``paths``: the store catalog's, kept precomputed, and
    those of the sessions it cannot hold read in full (:func:`read_sessions`); oldest first."""
    wanted = [Path(path) for path in paths]
    used = catalog if catalog is not None else Catalog()
    try:
        held = used.usage_facts(wanted)
        missing = [path for path in wanted if os.fspath(path) not in held]
        read = read_sessions(missing, skipped, used) if missing else []
    finally:
        if catalog is None:
            used.close()
    for session in read:
        held[os.fspath(session.path)] = facts_of(session, session.title)
    loaded = [held[os.fspath(path)] for path in wanted if os.fspath(path) in held]
    return oldest_first(loaded)


def oldest_first(loaded: list[S]) -> list[S]:
    """``loaded`` sorted by their headers' time: the oldest made a copy a fork holds."""
    return sorted(loaded, key=lambda item: str(item.header.get("timestamp") or ""))


def collect_records(paths: Iterable[Path | str], *, catalog: Catalog | None = None) -> CollectedRecords:
    """Every usage record of the sessions in ``paths`` (copies made by forks counted once), read
    through the store ``catalog`` (default: the agent dir's, which it brings up to date; sessions
    it cannot hold are read in full). Files that cannot be read are listed in ``skipped``."""
    skipped: list[tuple[str, str]] = []
    loaded = _read(paths, skipped, catalog)
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
        cwd = item.header.get("cwd")
        owners.append((str(item.header.get("id")), cwd if isinstance(cwd, str) and cwd else NO_PROJECT))
    for position, index, counted in counted_keys(keyed):
        if not counted:
            copies += 1
            continue
        fields = loaded[position].spent.get(index)
        if fields is not None:
            records.append(UsageRecord(*fields, *owners[position]))
    return records, copies
