"""Usage reports (issue 13 #6, issue 27 #5): tokens and cost by day, week, month, session, model,
project or 5-hour billing block.

What ``omp-session usage`` prints and the viewer's usage page draws. A report is a pure function
(:func:`build_report`) of an iterable of :class:`~omp_session.tools.usage_records.UsageRecord`, so
it does not matter what read them (:func:`usage_report` reads files in full; a catalog of the store
can give the same records). Nothing here reads a clock: the blocks view's "now" is passed in.

* **Days, weeks and months** are those of the entry's timestamp in the report's time zone (UTC
  unless given); weeks start on ``start_of_week`` (Monday unless given) and are named by their
  first day. ``since``/``until`` are inclusive days in that zone. Entries without a readable
  timestamp are left out of every dated view and of any date range, kept in the others.
* **Models** are merged under one name (:func:`~omp_session.tools.pricing.canonical_model`):
  ``anthropic/claude-sonnet-4-5`` and ``claude-sonnet-4-5-20250929`` are one row.
* **Cost** is what omp recorded; where it recorded none (imported sessions, models it could not
  price) it is estimated from the shipped price table and the row says so (``estimatedCost``);
  tokens of a model the table does not know either are counted in ``unpricedTurns``, never as a
  silent $0.
* **Cache-hit rate** is the share of prompt tokens read from the cache:
  ``cacheRead / (input + cacheRead + cacheWrite)``.
* **Blocks** follow ccusage's definition of Claude's 5-hour billing windows: a block starts at its
  first entry's time floored to the hour (UTC) and lasts 5 hours; an entry after the block's end,
  or more than 5 hours after the previous entry, starts a new one; a gap of more than 5 hours
  between two blocks is shown as a gap row. The block holding ``now`` (its end not passed, its last
  entry less than 5 hours old) is active, with its burn rate (tokens per minute and cost per hour
  between its first and last entry) and what the block will have cost at that rate by its end.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from omp_session.store import SessionStorage
from omp_session.tools.pricing import PriceTable, canonical_model, default_prices
from omp_session.tools.usage_facts import QuarterDays, UsageGroup, group_of
from omp_session.tools.usage_facts import local_time as _local
from omp_session.tools.usage_records import (
    SUB_AGENT,
    UNKNOWN_MODEL,
    CollectedRecords,
    UsageRecord,
    collect_records,
)

__all__ = [
    "VIEWS",
    "BlockInfo",
    "BurnRate",
    "ReportOptions",
    "UsageReport",
    "UsageRow",
    "build_grouped",
    "build_report",
    "collect_for",
    "collected_report",
    "model_name",
    "priced",
    "usage_report",
]

#: The report views, each grouping spend by one key.
VIEWS = ("daily", "weekly", "monthly", "session", "model", "project", "blocks")

#: A billing block's length (Claude's 5-hour usage window).
BLOCK_MS = 5 * 3600 * 1000
_HOUR_MS = 3600 * 1000
_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class ReportOptions:
    """What shapes a report besides its view."""

    since: date | None = None
    until: date | None = None
    #: The zone of days, weeks, months and the blocks' shown times.
    zone: tzinfo = timezone.utc
    #: 0 (Monday) .. 6 (Sunday): the first day of a week.
    start_of_week: int = 0
    #: The time the blocks view calls now (ms since the epoch); ``None``: no block is active.
    now_ms: int | None = None
    prices: PriceTable = field(default_factory=default_prices)


@dataclass(frozen=True)
class BurnRate:
    """The active block's pace, from its first entry to its last."""

    tokens_per_minute: float
    cost_per_hour: float
    #: What the block holds at its end if this pace goes on from now.
    projected_tokens: float
    projected_cost: float
    remaining_minutes: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokensPerMinute": round(self.tokens_per_minute, 3),
            "costPerHour": round(self.cost_per_hour, 6),
            "projectedTokens": round(self.projected_tokens),
            "projectedCost": round(self.projected_cost, 6),
            "remainingMinutes": round(self.remaining_minutes, 1),
        }


@dataclass
class BlockInfo:
    """A billing block's times (ms since the epoch), or a gap's (``gap``: no entries in it)."""

    start_ms: int
    end_ms: int
    first_ms: int
    last_ms: int
    gap: bool = False
    active: bool = False
    burn: BurnRate | None = None

    def to_dict(self, zone: tzinfo) -> dict[str, Any]:
        out: dict[str, Any] = {
            "start": _iso(self.start_ms, zone),
            "end": _iso(self.end_ms, zone),
            "gap": self.gap,
            "active": self.active,
        }
        if not self.gap:
            out["firstEntry"] = _iso(self.first_ms, zone)
            out["lastEntry"] = _iso(self.last_ms, zone)
        if self.burn is not None:
            out["burnRate"] = self.burn.to_dict()
        return out


@dataclass
class UsageRow:
    """Totals of one group (a day, a week, a month, a session, a model, a project or a block)."""

    key: str
    label: str = ""
    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    #: Recorded plus estimated cost.
    cost: float = 0
    #: The part of ``cost`` estimated from the price table (omp recorded none).
    estimated_cost: float = 0
    #: Messages whose tokens have no price at all (cost neither recorded nor in the table).
    unpriced_turns: int = 0
    #: Messages with usage counted here.
    turns: int = 0
    #: Cost by (canonical) model inside this group.
    models: dict[str, float] = field(default_factory=dict)
    #: The models of the unpriced turns.
    unpriced_models: set[str] = field(default_factory=set)
    block: BlockInfo | None = None

    @property
    def tokens(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of prompt tokens read from the cache; ``None`` without prompt tokens."""
        prompt = self.input + self.cache_read + self.cache_write
        return self.cache_read / prompt if prompt else None

    @property
    def is_estimated(self) -> bool:
        return self.estimated_cost > 0

    def add(self, group: UsageGroup, model: str, cost: float, estimated: bool, unpriced: bool) -> None:
        self.input += group.input
        self.output += group.output
        self.cache_read += group.cache_read
        self.cache_write += group.cache_write
        self.cost += cost
        if estimated:
            self.estimated_cost += cost
        if unpriced:
            self.unpriced_turns += group.turns
            self.unpriced_models.add(model)
        self.turns += group.turns
        self.models[model] = self.models.get(model, 0.0) + cost

    def to_dict(self, zone: tzinfo = timezone.utc) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key}
        if self.label:
            out["label"] = self.label
        rate = self.cache_hit_rate
        out.update(
            input=self.input,
            output=self.output,
            cacheRead=self.cache_read,
            cacheWrite=self.cache_write,
            totalTokens=self.tokens,
            cacheHitRate=round(rate, 6) if rate is not None else None,
            cost=round(self.cost, 6),  # float sums drift in the last digits
            costEstimated=self.is_estimated,
            estimatedCost=round(self.estimated_cost, 6),
            unpricedTurns=self.unpriced_turns,
            turns=self.turns,
            models={name: round(cost, 6) for name, cost in sorted(self.models.items())},
        )
        if self.unpriced_models:
            out["unpricedModels"] = sorted(self.unpriced_models)
        if self.block is not None:
            out["block"] = self.block.to_dict(zone)
        return out


@dataclass
class UsageReport:
    """Rows of one view, their total, and what was left out or skipped."""

    view: str
    rows: list[UsageRow]
    total: UsageRow
    copied_entries: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    zone: tzinfo = timezone.utc
    #: The price table's ``sourceDate`` (what estimates are based on).
    prices_date: str = ""

    @property
    def active_block(self) -> UsageRow | None:
        return next((row for row in self.rows if row.block is not None and row.block.active), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "timezone": _zone_name(self.zone),
            "rows": [row.to_dict(self.zone) for row in self.rows],
            "total": self.total.to_dict(self.zone),
            "copiedEntries": self.copied_entries,
            "pricesSourceDate": self.prices_date,
            "skipped": [{"path": path, "reason": reason} for path, reason in self.skipped],
        }

    def to_csv(self) -> str:
        """One line per row, then the total."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        columns = [
            "input",
            "output",
            "cacheRead",
            "cacheWrite",
            "totalTokens",
            "cacheHitRate",
            "cost",
            "costEstimated",
            "estimatedCost",
            "unpricedTurns",
            "turns",
        ]
        writer.writerow([self.view, "label", *columns])
        for row in [*self.rows, self.total]:
            data = row.to_dict(self.zone)
            writer.writerow([data["key"], data.get("label", ""), *(_cell(data[c]) for c in columns)])
        return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _zone_name(zone: tzinfo) -> str:
    key = getattr(zone, "key", None)
    return key if isinstance(key, str) else str(zone.tzname(None) or zone)


def _iso(ms: int, zone: tzinfo) -> str:
    moment = _local(ms, zone)
    return moment.isoformat(timespec="seconds") if moment is not None else str(ms)


def model_name(record: UsageRecord | UsageGroup) -> str:
    """The row a record's model is counted in (one per model, its aliases merged)."""
    if record.model in (SUB_AGENT, UNKNOWN_MODEL):
        return record.model
    return canonical_model(record.model)


def priced(record: UsageRecord, prices: PriceTable) -> tuple[float, bool, bool]:
    """``(cost, estimated, unpriced)`` of one record (:func:`usage_facts.is_recorded` decides
    whether its recorded cost counts)."""
    return _priced(group_of(record), prices)


def _priced(group: UsageGroup, prices: PriceTable) -> tuple[float, bool, bool]:
    """``(cost, estimated, unpriced)`` of a group: its recorded cost, else its tokens priced."""
    if group.recorded:
        return group.cost, False, False
    price = prices.price_of(group.model)
    if price is None:
        return 0.0, False, True
    return price.cost(group.input, group.output, group.cache_read, group.cache_write), True, False


def _week_start(day: date, start_of_week: int) -> date:
    return day - timedelta(days=(day.weekday() - start_of_week) % 7)


def _key(view: str, record: UsageGroup, day: date | None, options: ReportOptions) -> str | None:
    if view == "daily":
        return day.isoformat() if day else None
    if view == "weekly":
        return _week_start(day, options.start_of_week).isoformat() if day else None
    if view == "monthly":
        return day.strftime("%Y-%m") if day else None
    if view == "session":
        return record.session_id
    if view == "model":
        return model_name(record)
    if view == "project":
        return record.project
    raise ValueError(f"unknown usage view {view!r}; one of {', '.join(VIEWS)}")


def _in_range(day: date | None, options: ReportOptions) -> bool:
    if options.since is None and options.until is None:
        return True
    if day is None:
        return False
    return (options.since is None or day >= options.since) and (options.until is None or day <= options.until)


def build_report(
    records: Iterable[UsageRecord],
    view: str,
    options: ReportOptions | None = None,
    *,
    titles: Mapping[str, str] | None = None,
    copied_entries: int = 0,
    skipped: Sequence[tuple[str, str]] = (),
) -> UsageReport:
    """The ``view`` report (see :data:`VIEWS`) of ``records``: pure, no I/O, no clock.

    ``titles`` (session id → title) labels the session view's rows; ``copied_entries`` and
    ``skipped`` are passed through to the report for the caller that read the records."""
    return build_grouped(
        map(group_of, records),
        view,
        options,
        titles=titles,
        copied_entries=copied_entries,
        skipped=skipped,
    )


#: The views whose rows are dates (the others need a record's date only for a date range).
_DATED = ("daily", "weekly", "monthly", "blocks")


def build_grouped(
    groups: Iterable[UsageGroup],
    view: str,
    options: ReportOptions | None = None,
    *,
    titles: Mapping[str, str] | None = None,
    copied_entries: int = 0,
    skipped: Sequence[tuple[str, str]] = (),
) -> UsageReport:
    """:func:`build_report` of records already summed in groups (each group lies in one day of
    the report's zone when the view is dated or a date range is set; a :class:`ValueError` if
    not, since it cannot be split here)."""
    if view not in VIEWS:
        raise ValueError(f"unknown usage view {view!r}; one of {', '.join(VIEWS)}")
    options = options or ReportOptions()
    names = titles or {}
    total = UsageRow("total")
    dated = view in _DATED or options.since is not None or options.until is not None
    kept: list[tuple[UsageGroup, date | None, str, float, bool, bool]] = []
    days = QuarterDays(options.zone)
    models: dict[str, str] = {}
    for record in groups:
        day = days.of(record.first_ms, record.last_ms) if dated else None
        if dated and not _in_range(day, options):
            continue
        model = models.get(record.model)
        if model is None:
            model = models[record.model] = model_name(record)
        cost, estimated, unpriced = _priced(record, options.prices)
        kept.append((record, day, model, cost, estimated, unpriced))
    if view == "blocks":
        rows = _blocks(kept, options)
    else:
        grouped: dict[str, UsageRow] = {}
        for record, day, model, cost, estimated, unpriced in kept:
            key = _key(view, record, day, options)
            if key is None:
                continue
            row = grouped.get(key)
            if row is None:
                label = names.get(record.session_id, "") if view == "session" else ""
                row = grouped[key] = UsageRow(key, label=label)
            row.add(record, model, cost, estimated, unpriced)
        rows = sorted(grouped.values(), key=lambda row: row.key)
        if view in ("session", "model", "project"):
            rows.sort(key=lambda row: row.cost, reverse=True)
    for row in rows:
        _fold(total, row)
    return UsageReport(
        view, rows, total, copied_entries, list(skipped), options.zone, options.prices.source_date
    )


def _fold(total: UsageRow, row: UsageRow) -> None:
    """Add a row into the total (the total is the sum of the rows, exactly what is shown)."""
    total.input += row.input
    total.output += row.output
    total.cache_read += row.cache_read
    total.cache_write += row.cache_write
    total.cost += row.cost
    total.estimated_cost += row.estimated_cost
    total.unpriced_turns += row.unpriced_turns
    total.unpriced_models |= row.unpriced_models
    total.turns += row.turns
    for model, cost in row.models.items():
        total.models[model] = total.models.get(model, 0.0) + cost


def _block_key(ms: int, zone: tzinfo) -> str:
    moment = _local(ms, zone)
    return moment.strftime("%Y-%m-%d %H:%M") if moment is not None else str(ms)


def _blocks(
    kept: list[tuple[UsageGroup, date | None, str, float, bool, bool]], options: ReportOptions
) -> list[UsageRow]:
    # A group lies in one quarter hour (or is one record), which no block boundary splits: the
    # first record of a group decides whether it starts a block (usage_facts.BUCKET_MS).
    dated = sorted(
        (item for item in kept if item[0].first_ms is not None and item[1] is not None),
        key=lambda item: item[0].first_ms or 0,
    )
    rows: list[UsageRow] = []
    current: UsageRow | None = None
    for record, _day, model, cost, estimated, unpriced in dated:
        moment, latest = record.first_ms, record.last_ms
        assert moment is not None and latest is not None
        block = current.block if current is not None else None
        if block is None or moment - block.start_ms >= BLOCK_MS or moment - block.last_ms > BLOCK_MS:
            if block is not None and moment - block.last_ms > BLOCK_MS:
                gap_start = block.last_ms + BLOCK_MS
                gap = BlockInfo(gap_start, moment, gap_start, gap_start, gap=True)
                rows.append(UsageRow(_block_key(gap_start, options.zone), label="(gap)", block=gap))
            start = moment - moment % _HOUR_MS
            block = BlockInfo(start, start + BLOCK_MS, moment, moment)
            current = UsageRow(_block_key(start, options.zone), block=block)
            rows.append(current)
        assert current is not None
        block.last_ms = max(block.last_ms, latest)
        current.add(record, model, cost, estimated, unpriced)
    now = options.now_ms
    if current is not None and current.block is not None and now is not None:
        block = current.block
        if now < block.end_ms and now - block.last_ms < BLOCK_MS and now >= block.start_ms:
            block.active = True
            block.burn = _burn(current, block, now)
    return rows


def _burn(row: UsageRow, block: BlockInfo, now: int) -> BurnRate | None:
    minutes = (block.last_ms - block.first_ms) / 60_000
    if minutes <= 0:
        return None
    per_minute = row.tokens / minutes
    cost_per_minute = row.cost / minutes
    remaining = max((block.end_ms - now) / 60_000, 0.0)
    return BurnRate(
        per_minute,
        cost_per_minute * 60,
        row.tokens + per_minute * remaining,
        row.cost + cost_per_minute * remaining,
        remaining,
    )


def usage_report(
    paths: Iterable[Path | str],
    view: str = "daily",
    options: ReportOptions | None = None,
    *,
    since: date | None = None,
    until: date | None = None,
    storage: SessionStorage | None = None,
) -> UsageReport:
    """The ``view`` report of the session files (else rows of ``storage``) at ``paths``, read in
    full (see the module).
    ``since``/``until`` (when ``options`` is not given): inclusive UTC days."""
    if view not in VIEWS:
        raise ValueError(f"unknown usage view {view!r}; one of {', '.join(VIEWS)}")
    if options is None:
        options = ReportOptions(since=since, until=until)
    return collected_report(collect_for(paths, options, (view,), storage), view, options)


def collect_for(
    paths: Iterable[Path | str],
    options: ReportOptions,
    views: Sequence[str] = VIEWS,
    storage: SessionStorage | None = None,
) -> CollectedRecords:
    """The records of ``paths`` (files, else rows of ``storage``) collected for reports of
    ``views`` with ``options``."""
    ranged = options.since is not None or options.until is not None
    return collect_records(paths, zone=options.zone, ranged=ranged, views=views, storage=storage)


def collected_report(collected: CollectedRecords, view: str, options: ReportOptions) -> UsageReport:
    """The ``view`` report of records collected once (the viewer's page builds several), with
    the ``options`` they were collected for (:func:`collect_for`)."""
    return build_grouped(
        collected.groups(view),
        view,
        options,
        titles=collected.titles,
        copied_entries=collected.copied_entries,
        skipped=collected.skipped,
    )


def start_of_week_number(name: str) -> int:
    """``"monday"`` → 0 … ``"sunday"`` → 6 (a :class:`ValueError` for anything else)."""
    return _DAY_NAMES.index(name.lower())
