"""Small, pure formatting helpers for the viewer (numbers, sizes, dates, one-line previews).

Internal module (part of the viewer, whose API is :mod:`omp_session.web`); not part of the public API.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

from omp_session.model.usage import UsageStatistics

__all__ = [
    "as_float",
    "clock_time",
    "date_time",
    "format_cost",
    "format_count",
    "format_size",
    "format_tokens",
    "one_line",
    "usage_line",
]


def one_line(text: object, limit: int = 90) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def as_float(value: float) -> float:
    """``value`` as a float; integers beyond a float's range (valid JSON) become ±infinity."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _unbounded(value: float) -> str | None:
    """The text for values no format below can show: infinite, NaN, or absurdly large."""
    if math.isnan(value):
        return "?"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.3g}" if abs(value) >= 1e15 else None


def format_tokens(count: float) -> str:
    """``950``, ``12.3k``, ``4.5M`` (and ``1.23e+20``, ``∞`` for numbers no session has)."""
    value = as_float(count)
    special = _unbounded(value)
    if special is not None:
        return special
    if value < 1000:
        return f"{int(value)}"
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


def format_count(count: float) -> str:
    """``1,234,567``: an exact count with thousands separators; ``∞`` for a sum past a float's
    range (two turns of ``1e308`` tokens in a damaged file; found by fuzzing the viewer)."""
    if isinstance(count, float) and not math.isfinite(count):
        return _unbounded(count) or "?"
    try:
        return f"{int(count):,}"
    except (TypeError, ValueError):
        return "?"


def format_cost(cost: float) -> str:
    """Dollars: two decimals from ten cents up, four below (a turn often costs a fraction of a cent)."""
    value = as_float(cost)
    special = _unbounded(value)
    if special is not None:
        return f"${special}"
    if value <= 0:
        return "$0"
    return f"${value:.2f}" if value >= 0.1 else f"${value:.4f}"


def format_size(size: int) -> str:
    """Bytes in 1024 steps: ``512 B``, ``3.4 KB``, ``1.2 MB``."""
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def usage_line(usage: UsageStatistics) -> str:
    """``in 1.2k · out 300 · cache 10k/2k · $0.0123`` (cache read/write only when non-zero)."""
    parts = [f"in {format_tokens(usage.input)}", f"out {format_tokens(usage.output)}"]
    if usage.cacheRead or usage.cacheWrite:
        parts.append(f"cache {format_tokens(usage.cacheRead)}/{format_tokens(usage.cacheWrite)}")
    parts.append(format_cost(usage.cost))
    return " · ".join(parts)


def _parse_iso(iso: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def clock_time(iso: str) -> str:
    """``2025-11-20T23:33:54.572Z`` → ``23:33:54`` (UTC), or ``""`` when unparseable."""
    moment = _parse_iso(iso) if iso else None
    if moment is None:
        return ""
    if moment.utcoffset():  # nearly every timestamp is UTC already: no conversion, no strftime
        moment = moment.astimezone(timezone.utc)
    return f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"


def date_time(moment: datetime | str | None) -> str:
    """``2025-11-20 23:33`` in UTC, from a datetime or an ISO string; ``""`` when unknown."""
    if isinstance(moment, str):
        moment = _parse_iso(moment)
    if moment is None:
        return ""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
