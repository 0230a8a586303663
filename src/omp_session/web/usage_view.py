"""The viewer's usage page (issue 13 #6): cost per day stacked by model, tokens by project, tables.

Charts are drawn here as plain numbers for an SVG template (no script, nothing fetched): each bar is
a rectangle with a ``<title>`` tooltip. The numbers are :func:`omp_session.tools.usage_report`'s,
the same as ``omp-session usage``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from omp_session.rendering.format import format_cost, format_tokens
from omp_session.store import SessionStorage
from omp_session.tools.usage_report import (
    ReportOptions,
    UsageReport,
    UsageRow,
    collect_for,
    collected_report,
)

__all__ = ["UsagePage", "build_usage_page"]

#: Colours for models, in order of their total cost (the rest share the last one).
PALETTE = ("#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#57606a")
CHART_HEIGHT = 180


@dataclass
class Segment:
    y: float
    height: float
    colour: str
    tip: str


@dataclass
class Bar:
    x: float
    width: float
    label: str
    segments: list[Segment] = field(default_factory=list)


@dataclass
class HBar:
    label: str
    width: float
    text: str


@dataclass
class UsagePage:
    daily: UsageReport
    projects: UsageReport
    models: UsageReport
    bars: list[Bar]
    legend: list[tuple[str, str]]
    project_bars: list[HBar]
    chart_width: float
    chart_height: int
    peak: str
    since: str
    until: str
    total_cost: str
    total_tokens: str


def _colours(models: UsageReport) -> dict[str, str]:
    return {row.key: PALETTE[min(i, len(PALETTE) - 1)] for i, row in enumerate(models.rows)}


#: The widest the chart is drawn (a long range gets narrower bars, not a wider chart).
CHART_MAX_WIDTH = 1200.0


def _bars(daily: UsageReport, colours: dict[str, str]) -> tuple[list[Bar], float, float]:
    """One bar per day with usage, placed on a time axis: a day without usage is a gap, and days
    of different years never sit side by side as if they followed each other (issue 27)."""
    peak = max((row.cost for row in daily.rows), default=0.0) or 1.0
    days = [date.fromisoformat(row.key) for row in daily.rows]
    span = (days[-1] - days[0]).days + 1 if days else 0
    step = min(40.0, CHART_MAX_WIDTH / span) if span else 40.0
    several_years = bool(days) and days[0].year != days[-1].year
    # Labels that fit: every day on a wide axis, else every n-th bar.
    every = max(1, round(36 / step))
    bars = []
    for number, (row, day) in enumerate(zip(daily.rows, days, strict=True)):
        label = (row.key if several_years else row.key[5:]) if number % every == 0 else ""
        offset = (day - days[0]).days
        width = max(step - 8, step * 0.8) if step >= 10 else max(step * 0.8, 1.0)
        bar = Bar(x=round(offset * step + 4, 2), width=round(width, 2), label=label)
        top = float(CHART_HEIGHT)
        for model, cost in sorted(row.models.items(), key=lambda item: -item[1]):
            height = cost / peak * (CHART_HEIGHT - 10)
            top -= height
            tip = f"{row.key} · {model}: {format_cost(cost)}"
            bar.segments.append(
                Segment(round(top, 2), round(height, 2), colours.get(model, PALETTE[-1]), tip)
            )
        bars.append(bar)
    return bars, max(span * step + 8, 200.0), peak


def _project_bars(projects: UsageReport) -> list[HBar]:
    peak = max((row.tokens for row in projects.rows), default=0.0) or 1.0
    return [
        HBar(
            row.key,
            round(row.tokens / peak * 100, 2),
            f"{format_tokens(row.tokens)} · {format_cost(row.cost)}",
        )
        for row in sorted(projects.rows, key=lambda row: -row.tokens)
    ]


def build_usage_page(
    paths: list[Path], since: date | None, until: date | None, storage: SessionStorage | None = None
) -> UsagePage:
    """The usage page of the sessions at ``paths`` (files, else rows of ``storage``; entries dated
    ``since``..``until`` when given)."""
    options = ReportOptions(since=since, until=until)
    collected = collect_for(paths, options, ("daily", "project", "model"), storage)

    def report(view: str) -> UsageReport:
        return collected_report(collected, view, options)

    daily, projects, models = report("daily"), report("project"), report("model")
    colours = _colours(models)
    bars, width, peak = _bars(daily, colours)
    total: UsageRow = daily.total
    return UsagePage(
        daily=daily,
        projects=projects,
        models=models,
        bars=bars,
        legend=[(row.key, colours[row.key]) for row in models.rows],
        project_bars=_project_bars(projects),
        chart_width=width,
        chart_height=CHART_HEIGHT,
        peak=format_cost(peak) if daily.rows else "$0",
        since=since.isoformat() if since else "",
        until=until.isoformat() if until else "",
        total_cost=format_cost(total.cost),
        total_tokens=format_tokens(total.tokens),
    )
