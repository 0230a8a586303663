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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omp_session.format.ids import iso_to_ms
from omp_session.tools.catalog import Catalog, CatalogSession
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.stats import counted_once
from omp_session.tools.store_reads import read_sessions

Entry = dict[str, Any]

__all__ = [
    "NO_PROJECT",
    "SUB_AGENT",
    "UNKNOWN_MODEL",
    "CollectedRecords",
    "UsageRecord",
    "collect_records",
    "records_of_session",
]

#: The model of a ``task`` result's usage (the sub-agent's, which the result does not name).
SUB_AGENT = "(sub-agent tasks)"
#: The model of an assistant message that names none.
UNKNOWN_MODEL = "(unknown model)"
#: The project of a session whose header has no cwd.
NO_PROJECT = "(no cwd)"


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One entry's spend."""

    #: Milliseconds since the epoch (UTC); ``None`` without a readable timestamp.
    timestamp_ms: int | None
    #: The model as recorded (any of its names; reports merge them), or :data:`SUB_AGENT`.
    model: str
    provider: str | None
    input: float
    output: float
    cache_read: float
    cache_write: float
    #: ``usage.cost.total`` as recorded; ``None`` when there is none. (A zero for spent tokens is
    #: what importers and unknown models record: the reports estimate it, see usage_report.)
    cost: float | None
    session_id: str
    project: str

    @property
    def tokens(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write


def _number(value: Any) -> float:
    """A token count or cost; anything but a number counts 0 (as UsageStatistics counts it)."""
    if type(value) is int or type(value) is float:
        return value
    return 0


def _record(entry: Entry, session_id: str, project: str) -> UsageRecord | None:
    found = classify(entry)
    fields = found.fields
    provider: str | None = None
    if found.kind == EntryKind.ASSISTANT:
        usage = fields.get("usage")
        if not isinstance(usage, dict):
            return None
        model, raw_provider = fields.get("model"), fields.get("provider")
        provider = raw_provider if isinstance(raw_provider, str) and raw_provider else None
        name = model if isinstance(model, str) and model else UNKNOWN_MODEL
    elif found.kind == EntryKind.TOOL_RESULT and fields.get("toolName") == "task":
        details = fields.get("details")
        usage = details.get("usage") if isinstance(details, dict) else None
        if not isinstance(usage, dict):
            return None
        name = SUB_AGENT
    else:
        return None
    tokens = (
        _number(usage.get("input")),
        _number(usage.get("output")),
        _number(usage.get("cacheRead")),
        _number(usage.get("cacheWrite")),
    )
    cost_object = usage.get("cost")
    raw_cost = cost_object.get("total") if isinstance(cost_object, dict) else None
    cost: float | None = raw_cost if type(raw_cost) is int or type(raw_cost) is float else None
    return UsageRecord(iso_to_ms(entry.get("timestamp")), name, provider, *tokens, cost, session_id, project)


def records_of_session(header: Entry, entries: Iterable[Entry]) -> Iterator[UsageRecord]:
    """The usage records of one session's entries (every entry given is counted)."""
    session_id = str(header.get("id"))
    cwd = header.get("cwd")
    project = cwd if isinstance(cwd, str) and cwd else NO_PROJECT
    for entry in entries:
        record = _record(entry, session_id, project)
        if record is not None:
            yield record


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
) -> list[CatalogSession]:
    """The sessions of ``paths`` through the store catalog (:func:`~omp_session.tools.catalog.read_sessions`),
    oldest first."""
    loaded = read_sessions(paths, skipped, catalog)
    loaded.sort(key=lambda item: str(item.header.get("timestamp") or ""))  # the oldest made a copy
    return loaded


def collect_records(paths: Iterable[Path | str], *, catalog: Catalog | None = None) -> CollectedRecords:
    """Every usage record of the sessions in ``paths`` (copies made by forks counted once), read
    through the store ``catalog`` (default: the agent dir's, which it brings up to date; sessions
    it cannot hold are read in full). Files that cannot be read are listed in ``skipped``."""
    skipped: list[tuple[str, str]] = []
    loaded = _read(paths, skipped, catalog)
    records: list[UsageRecord] = []
    copies = 0
    for position, entry in counted_once(loaded):
        if entry is None:
            copies += 1
            continue
        records.extend(records_of_session(loaded[position].header, (entry,)))
    titles = {str(item.header.get("id")): item.title for item in loaded}
    files = {str(item.header.get("id")): os.fspath(item.path) for item in loaded}
    return CollectedRecords(records, titles, files, copies, skipped)
