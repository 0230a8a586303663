"""The usage page's cost chart is a time axis (issue 27): days without usage are gaps, days of
different years are placed apart and labelled with their year, a long range narrows its bars."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from omp_session.web.usage_view import CHART_MAX_WIDTH, build_usage_page


def _session(path: Path, days: list[str]) -> Path:
    header = {
        "type": "session",
        "version": 3,
        "id": path.stem,
        "timestamp": f"{days[0]}T00:00:00.000Z",
        "cwd": "/p",
    }
    lines = [json.dumps(header)]
    for number, day in enumerate(days):
        usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 1.5}}
        message = {"role": "assistant", "content": [], "model": "claude-sonnet-4-5", "usage": usage}
        entry = {
            "type": "message",
            "id": f"{path.stem}{number}",
            "parentId": None,
            "timestamp": f"{day}T10:00:00.000Z",
        }
        lines.append(json.dumps({**entry, "message": message}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_days_are_placed_by_date_not_side_by_side(tmp_path: Path) -> None:
    near = _session(tmp_path / "-p" / "a.jsonl", ["2025-06-01", "2025-06-02", "2025-06-05"])
    page = build_usage_page([near], None, None)
    xs = [bar.x for bar in page.bars]
    assert xs[1] - xs[0] == 40 and xs[2] - xs[1] == 3 * 40  # two days without usage between
    assert [bar.label for bar in page.bars] == ["06-01", "06-02", "06-05"]


def test_a_range_over_years_is_one_axis_of_bounded_width(tmp_path: Path) -> None:
    years = _session(tmp_path / "-p" / "b.jsonl", ["2025-06-01", "2025-06-02", "2026-01-10"])
    page = build_usage_page([years], None, None)
    first, second, last = (bar.x for bar in page.bars)
    span = (date(2026, 1, 10) - date(2025, 6, 1)).days
    assert abs((last - first) / (second - first) - span) < 0.5  # proportional to the days between
    assert page.chart_width <= CHART_MAX_WIDTH + 8
    labels = [bar.label for bar in page.bars if bar.label]
    assert labels and all(label.startswith(("2025-", "2026-")) for label in labels)
