"""Usage reports (issue 13 #6): tokens and cost by day, month, session, model or project.

What ``omp-session usage`` prints and the viewer's usage page draws. Every assistant message with
``usage`` and every ``task`` tool result with ``details.usage`` counts (spec §6.3, the same rule as
:class:`~omp_session.model.usage.UsageStatistics`), on every branch (tokens spent on an abandoned
branch were spent), and an entry a fork copied from another listed session counts once
(:func:`omp_session.tools.stats.counted_once`). Days and months are those of the entry's timestamp
in UTC; entries without a readable timestamp are left out of date ranges and the daily and monthly
views, but kept in the others when no range is given.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

from omp_session.errors import SessionError
from omp_session.format.ids import iso_to_ms, ms_to_datetime
from omp_session.model.usage import UsageStatistics
from omp_session.tools.catalog import Catalog, CatalogSession
from omp_session.tools.entry_kinds import EntryKind, classify
from omp_session.tools.reading import read_session
from omp_session.tools.stats import counted_once
from omp_session.tools.summary import first_prompt

Entry = dict[str, Any]

__all__ = ["VIEWS", "UsageReport", "UsageRow", "UsageSpend", "collect_spend", "report_of", "usage_report"]

#: The report views, each grouping spend by one key.
VIEWS = ("daily", "monthly", "session", "model", "project")

#: What a ``task`` result's usage is filed under in the model view (its model is the sub-agent's).
SUB_AGENT = "(sub-agent tasks)"


class UsageSpend(NamedTuple):
    """One entry's spend and what it is grouped by."""

    day: date | None
    model: str
    session_id: str
    session_path: str
    title: str
    project: str
    usage: UsageStatistics


@dataclass
class UsageRow:
    """Totals of one group (a day, a month, a session, a model or a project)."""

    key: str
    usage: UsageStatistics = field(default_factory=UsageStatistics)
    #: Messages with usage counted here.
    turns: int = 0
    #: Cost by model inside this group (for stacked charts and the daily/monthly model lists).
    models: dict[str, float] = field(default_factory=dict)
    #: A readable name for session rows (title or first words), else ``""``.
    label: str = ""

    @property
    def tokens(self) -> float:
        usage = self.usage
        return usage.input + usage.output + usage.cacheRead + usage.cacheWrite

    def to_dict(self) -> dict[str, Any]:
        usage = self.usage
        out: dict[str, Any] = {"key": self.key}
        if self.label:
            out["label"] = self.label
        out.update(
            input=usage.input,
            output=usage.output,
            cacheRead=usage.cacheRead,
            cacheWrite=usage.cacheWrite,
            totalTokens=self.tokens,
            cost=round(usage.cost, 6),  # float sums drift in the last digits
            turns=self.turns,
            models={name: round(cost, 6) for name, cost in sorted(self.models.items())},
        )
        return out


@dataclass
class UsageReport:
    """Rows of one view (sorted by key; sessions by cost, most first), their total, what was skipped."""

    view: str
    rows: list[UsageRow]
    total: UsageRow
    copied_entries: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "rows": [row.to_dict() for row in self.rows],
            "total": self.total.to_dict(),
            "copiedEntries": self.copied_entries,
            "skipped": [{"path": path, "reason": reason} for path, reason in self.skipped],
        }

    def to_csv(self) -> str:
        """One line per row, then the total: key, label, tokens by kind, total, cost, turns."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        columns = ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "turns"]
        writer.writerow([self.view, "label", *columns])
        for row in [*self.rows, self.total]:
            data = row.to_dict()
            writer.writerow([data["key"], data.get("label", ""), *(_number(data[c]) for c in columns)])
        return out.getvalue()


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


class _Read(NamedTuple):
    path: Path
    header: Entry
    entries: Sequence[Entry]


def _model_of(entry: Entry) -> str | None:
    """The model an entry's usage belongs to; ``None`` when the entry has no usage."""
    found = classify(entry)
    fields = found.fields
    if found.kind == EntryKind.ASSISTANT and isinstance(fields.get("usage"), dict):
        model, provider = fields.get("model"), fields.get("provider")
        if isinstance(model, str) and model:
            return f"{provider}/{model}" if isinstance(provider, str) and provider else model
        return "(unknown model)"
    if found.kind == EntryKind.TOOL_RESULT and fields.get("toolName") == "task":
        details = fields.get("details")
        if isinstance(details, dict) and isinstance(details.get("usage"), dict):
            return SUB_AGENT
    return None


def _day(entry: Entry) -> date | None:
    """The entry's UTC day; ``None`` without a time or for a year JavaScript has but Python's dates
    do not (``"20202T14:01:45.000Z"`` from a damaged file; found by fuzzing the viewer)."""
    moment = ms_to_datetime(iso_to_ms(entry.get("timestamp")))
    return moment.date() if moment is not None else None


def _title(header: Entry, entries: Sequence[Entry]) -> str:
    title = header.get("title")
    if isinstance(title, str) and title:
        return title
    from omp_session.tools.summary import message_text

    texts = (
        message_text(found.fields) for entry in entries if (found := classify(entry)).kind == EntryKind.USER
    )
    return " ".join(first_prompt(texts).split())[:80]


def _read(
    paths: Iterable[Path | str], skipped: list[tuple[str, str]], catalog: Catalog | None = None
) -> list[_Read | CatalogSession]:
    """The sessions of ``paths`` from the store catalog (default: the agent dir's; re-reading only
    the changed sessions), and those it cannot hold this time read in full."""
    wanted = [Path(raw) for raw in paths]
    used = catalog if catalog is not None else Catalog()
    try:
        loaded: list[_Read | CatalogSession] = list(used.sessions(wanted))
        left = used.uncatalogued | {path for path, _reason in used.skipped}
    finally:
        if catalog is None:
            used.close()
    for path in wanted:
        if os.fspath(path) not in left:
            continue
        try:
            with read_session(path) as session:
                # A list: a lazy view would keep each session's file open until the report ends.
                loaded.append(_Read(path, session.get_header(), list(session.get_entries())))
        except (SessionError, OSError) as exc:
            skipped.append((os.fspath(path), str(exc)))
    loaded.sort(key=lambda item: str(item.header.get("timestamp") or ""))  # the oldest made a copy
    return loaded


def collect_spend(
    paths: Iterable[Path | str],
    skipped: list[tuple[str, str]] | None = None,
    *,
    catalog: Catalog | None = None,
) -> tuple[list[UsageSpend], int]:
    """Every entry with usage in ``paths`` (copies made by forks counted once), and the number of
    copies left out. Unreadable files are appended to ``skipped``. Reads through the store
    ``catalog`` (default: the agent dir's, which it brings up to date)."""
    loaded = _read(paths, skipped if skipped is not None else [], catalog)
    titles = [
        session.title if isinstance(session, CatalogSession) else _title(session.header, session.entries)
        for session in loaded
    ]
    spend: list[UsageSpend] = []
    copies = 0
    for position, entry in counted_once(loaded):
        if entry is None:
            copies += 1
            continue
        model = _model_of(entry)
        if model is None:
            continue
        session = loaded[position]
        usage = UsageStatistics()
        usage.add_entry(entry)
        cwd = session.header.get("cwd")
        spend.append(
            UsageSpend(
                day=_day(entry),
                model=model,
                session_id=str(session.header.get("id")),
                session_path=os.fspath(session.path),
                title=titles[position],
                project=cwd if isinstance(cwd, str) and cwd else "(no cwd)",
                usage=usage,
            )
        )
    return spend, copies


def _key(view: str, item: UsageSpend) -> str | None:
    if view == "daily":
        return item.day.isoformat() if item.day else None
    if view == "monthly":
        return item.day.strftime("%Y-%m") if item.day else None
    if view == "session":
        return item.session_id
    if view == "model":
        return item.model
    if view == "project":
        return item.project
    raise ValueError(f"unknown usage view {view!r}; one of {', '.join(VIEWS)}")


def _add(row: UsageRow, item: UsageSpend) -> None:
    row.usage.add_usage(_as_usage_dict(item.usage))
    row.turns += 1
    row.models[item.model] = row.models.get(item.model, 0.0) + item.usage.cost


def _as_usage_dict(usage: UsageStatistics) -> dict[str, Any]:
    data: dict[str, Any] = usage.to_dict()
    data["cost"] = {"total": usage.cost}
    return data


def report_of(
    spend: Sequence[UsageSpend],
    view: str,
    copies: int = 0,
    skipped: list[tuple[str, str]] | None = None,
    *,
    since: date | None = None,
    until: date | None = None,
) -> UsageReport:
    """Group already collected ``spend`` into the ``view`` report (several views share one read)."""
    if view not in VIEWS:
        raise ValueError(f"unknown usage view {view!r}; one of {', '.join(VIEWS)}")
    rows: dict[str, UsageRow] = {}
    total = UsageRow("total")
    for item in spend:
        if since is not None or until is not None:
            if item.day is None or (since is not None and item.day < since):
                continue
            if until is not None and item.day > until:
                continue
        key = _key(view, item)
        if key is None:
            continue
        row = rows.get(key)
        if row is None:
            row = rows[key] = UsageRow(key, label=item.title if view == "session" else "")
        _add(row, item)
        _add(total, item)
    ordered = sorted(rows.values(), key=lambda row: row.key)
    if view in ("session", "model", "project"):
        ordered.sort(key=lambda row: row.usage.cost, reverse=True)
    return UsageReport(view, ordered, total, copies, list(skipped or []))


def usage_report(
    paths: Iterable[Path | str],
    view: str = "daily",
    *,
    since: date | None = None,
    until: date | None = None,
) -> UsageReport:
    """The ``view`` report (see :data:`VIEWS`) of the sessions in ``paths``, restricted to entries
    dated ``since``..``until`` (inclusive, UTC days) when given."""
    if view not in VIEWS:
        raise ValueError(f"unknown usage view {view!r}; one of {', '.join(VIEWS)}")
    skipped: list[tuple[str, str]] = []
    spend, copies = collect_spend(paths, skipped)
    return report_of(spend, view, copies, skipped, since=since, until=until)
