"""Per-entry usage facts (issue 27): which entries spend, what each spent, and the key by which a
copy a fork made is recognised. One rule each, used by the full reads and by the store catalog,
which keeps each session's facts precomputed (:mod:`omp_session.tools.catalog`), so that a
store-wide report needs neither the entries nor this module's work again.

Internal module (used by :mod:`omp_session.tools.usage_records`, :mod:`omp_session.tools.stats`
and the catalog); not part of the public API.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import Any, NamedTuple

from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.tools.entry_kinds import EntryKind, classify

Entry = dict[str, Any]
#: How a copy is recognised: ``(id, timestamp, type)``, each non-string value as its repr.
CopyKey = tuple[str, str, str]
#: A record without its session (``UsageRecord``'s fields from ``timestamp_ms`` to ``cost``).
RecordFields = tuple[int | None, str, str | None, float, float, float, float, float | None]

__all__ = [
    "BUCKET_MS",
    "NO_PROJECT",
    "SUB_AGENT",
    "UNKNOWN_MODEL",
    "CopyKey",
    "GroupRow",
    "QuarterDays",
    "RecordFields",
    "UsageGroup",
    "UsageRecord",
    "copy_key",
    "entry_facts",
    "group_of",
    "group_rows",
    "header_facts",
    "is_recorded",
    "local_day",
    "local_time",
    "record_fields",
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


def header_facts(header: dict[str, Any]) -> tuple[str, str, str, str | None]:
    """``(session id, project, started, parent)``: what the reports read of a session's header
    (its id as a string, its cwd else :data:`NO_PROJECT`, the timestamp its sessions are sorted
    by, oldest first, and ``parentSession`` when it is a string)."""
    cwd, parent = header.get("cwd"), header.get("parentSession")
    return (
        str(header.get("id")),
        cwd if isinstance(cwd, str) and cwd else NO_PROJECT,
        str(header.get("timestamp") or ""),
        parent if isinstance(parent, str) else None,
    )


def local_time(ms: int | None, zone: tzinfo) -> datetime | None:
    """A record's time in ``zone`` (``None`` without one, or at the edge of Python's range)."""
    moment = ms_to_datetime(ms)
    if moment is None:
        return None
    try:
        return moment.astimezone(zone)
    except (OverflowError, ValueError):  # a year at the edge of Python's range
        return None


def local_day(ms: int | None, zone: tzinfo) -> date | None:
    """The day of ``zone`` a record's time falls on (what the dated reports group by)."""
    moment = local_time(ms, zone)
    return moment.date() if moment is not None else None


#: A day not looked up yet (``None`` is a time no day can be found for), and a quarter hour
#: across two days (or out of Python's range), whose groups are looked up one by one. (Compared by
#: identity: a real day equal to either is merely looked up again.)
_NOT_YET = date.min
_SPLIT = date.max


class QuarterDays:
    """The day of ``zone`` each group lies in, looked up once per quarter hour that lies in one
    day (``usage_facts.BUCKET_MS``), else for the group's own first and last record."""

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self.days: dict[int, date | None] = {}

    def of(self, first: int | None, last: int | None) -> date | None:
        """The day of a group's records (first and last; a :class:`ValueError` when they lie in
        two days)."""
        if first is None:
            return None
        bucket = first // BUCKET_MS
        day = self.days.get(bucket, _NOT_YET)
        if day is _NOT_YET:
            start = local_day(bucket * BUCKET_MS, self.zone)
            whole = start is not None and local_day(bucket * BUCKET_MS + BUCKET_MS - 1, self.zone) == start
            day = self.days[bucket] = start if whole else _SPLIT
        if last is not None and last // BUCKET_MS != bucket:
            day = _SPLIT
        if day is not _SPLIT:
            return day
        day = local_day(first, self.zone)
        if last != first and local_day(last, self.zone) != day:
            raise ValueError("usage records grouped across two days of the report's time zone")
        return day


def is_recorded(cost: float | None, tokens: float) -> bool:
    """Whether a record's cost is counted as omp recorded it (``None``: nothing spent) rather than
    estimated from the price table: a recorded zero for spent tokens is not a price (omp 18.2.3's
    importers write zeros, and omp records zero for a model it cannot price)."""
    return not tokens or (cost is not None and cost != 0)


class UsageGroup(NamedTuple):
    """Records that every report counts in one row, summed: the same model, the same kind of cost
    (``recorded``, see :func:`is_recorded`; else estimated from the summed tokens, the prices being
    per token), and times between ``first_ms`` and ``last_ms`` (both ``None``: undated). A record
    is a group of one (:func:`group_of`); the catalog keeps its sessions' spend grouped so."""

    first_ms: int | None
    last_ms: int | None
    model: str
    recorded: bool
    input: float
    output: float
    cache_read: float
    cache_write: float
    #: The recorded costs summed (``0.0`` for an estimated group: the report prices it).
    cost: float
    turns: int
    session_id: str = ""
    project: str = ""

    @property
    def tokens(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write


def group_of(record: UsageRecord) -> UsageGroup:
    """One record as a group of one."""
    recorded = is_recorded(record.cost, record.tokens)
    cost = record.cost if recorded and record.cost is not None else 0.0
    return UsageGroup(
        record.timestamp_ms,
        record.timestamp_ms,
        record.model,
        recorded,
        record.input,
        record.output,
        record.cache_read,
        record.cache_write,
        cost,
        1,
        record.session_id,
        record.project,
    )


#: The span of time one stored group covers at most. Every time zone in use since the 1970s is a
#: whole number of quarter hours from UTC, so a quarter hour lies in one day of any of them (a
#: group that does not is read record by record), and the 5-hour billing blocks, which start on
#: whole hours and whose gaps are over 5 hours, never split one.
BUCKET_MS = 900_000
#: A stored group: ``(bucket, model, recorded, input, output, cacheRead, cacheWrite, cost, turns,
#: first_ms, last_ms)``; ``bucket`` is ``timestamp_ms // BUCKET_MS`` (``None``: undated).
GroupRow = tuple[int | None, str, bool, float, float, float, float, float, int, int | None, int | None]


def group_rows(spent: Iterable[RecordFields]) -> list[GroupRow]:
    """The records of one session's spending entries, grouped by quarter hour, model and kind of
    cost (sums in record order)."""
    groups: dict[tuple[int | None, str, bool], list[Any]] = {}
    for stamp, model, _provider, tokens_in, tokens_out, read, write, cost in spent:
        recorded = is_recorded(cost, tokens_in + tokens_out + read + write)
        key = (stamp // BUCKET_MS if stamp is not None else None, model, recorded)
        kept = cost if recorded and cost is not None else 0.0
        group = groups.get(key)
        if group is None:
            groups[key] = [tokens_in, tokens_out, read, write, kept, 1, stamp, stamp]
            continue
        group[0] += tokens_in
        group[1] += tokens_out
        group[2] += read
        group[3] += write
        group[4] += kept
        group[5] += 1
        if stamp is not None:
            group[6] = min(group[6], stamp)
            group[7] = max(group[7], stamp)
    return [(bucket, model, recorded, *sums) for (bucket, model, recorded), sums in groups.items()]


def _number(value: Any) -> float:
    """A token count or cost; anything but a number counts 0 (as UsageStatistics counts it)."""
    if type(value) is int or type(value) is float:
        return value
    return 0


def record_fields(entry: Entry) -> RecordFields | None:
    """What ``entry`` spent, as a :class:`UsageRecord` without its session; ``None`` for an entry
    that spent nothing (spec §6.3: an assistant message with ``usage``, a ``task`` result with
    ``details.usage``)."""
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
    return (iso_to_ms(entry.get("timestamp")), name, provider, *tokens, cost)


def copy_key(entry: Entry) -> CopyKey | None:
    """The key of an entry a fork may have copied (``None`` without a string id)."""
    entry_id = entry.get("id")
    # repr: timestamp and type may be any JSON value in a damaged file (a list is not hashable).
    return (
        (entry_id, repr(entry.get("timestamp")), repr(entry.get("type")))
        if isinstance(entry_id, str)
        else None
    )


def entry_facts(entries: list[Entry]) -> tuple[list[CopyKey | None], dict[int, RecordFields]]:
    """Each entry's copy key, and the record fields of the entries that spent (by position)."""
    keys = [copy_key(entry) for entry in entries]
    spent = {}
    for position, entry in enumerate(entries):
        fields = record_fields(entry)
        if fields is not None:
            spent[position] = fields
    return keys, spent
