"""Every usage report's totals equal a full recount (issue 27 "Done when"): on generated stores
(hypothesis: models under several names, costs recorded, zero or missing, timestamps in any year
and none, every view in any time zone) and on the conformance corpora, through the store catalog
and through a full read alike.

The recount is independent of the report code: each file's lines decoded with the standard
library, every assistant message with a ``usage`` object and every ``task`` result with
``details.usage`` counted (spec §6.3), numbers summed by kind."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.tools.catalog import Catalog
from omp_session.tools.listing_cache import ListingCache
from omp_session.tools.usage_records import collect_records
from omp_session.tools.usage_report import VIEWS, ReportOptions, UsageReport, build_report, collected_report

KINDS = ("input", "output", "cacheRead", "cacheWrite")
MODELS = (
    "claude-sonnet-4-5",
    "claude-sonnet-4-5-20250929",
    "anthropic/claude-opus-4-1",
    "gpt-5",
    "openai-codex/gpt-5-codex",
    "a-model-nobody-prices",
)
ZONES = (timezone.utc, ZoneInfo("Europe/Paris"), ZoneInfo("America/Los_Angeles"), ZoneInfo("Asia/Kolkata"))
_EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _recount(paths: list[Path]) -> dict[str, Any]:
    """Token sums, recorded cost and turns of every counted entry, and of the dated ones."""
    every = {kind: 0.0 for kind in KINDS} | {"cost": 0.0, "turns": 0}
    dated = dict(every)
    for path in paths:
        lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            usage = _usage(entry) if isinstance(entry, dict) else None
            if usage is None:
                continue
            stamp = entry.get("timestamp")
            targets = [every, dated] if _is_time(stamp) else [every]
            for target in targets:
                target["turns"] += 1
                for kind in KINDS:
                    target[kind] += _number(usage.get(kind))
                cost = usage.get("cost")
                target["cost"] += _number(cost.get("total")) if isinstance(cost, dict) else 0
    return {"every": every, "dated": dated}


def _usage(entry: dict[str, Any]) -> dict[str, Any] | None:
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return None
    if message.get("role") == "assistant":
        usage = message.get("usage")
    elif message.get("role") == "toolResult" and message.get("toolName") == "task":
        details = message.get("details")
        usage = details.get("usage") if isinstance(details, dict) else None
    else:
        return None
    return usage if isinstance(usage, dict) else None


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _is_time(stamp: Any) -> bool:
    if not isinstance(stamp, str):
        return False
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).tzinfo is not None
    except ValueError:
        return False


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _check(report: UsageReport, expected: dict[str, Any]) -> None:
    total = report.total
    got = {
        "input": total.input,
        "output": total.output,
        "cacheRead": total.cache_read,
        "cacheWrite": total.cache_write,
        "turns": total.turns,
        # What omp recorded is the cost less the estimated part (a recorded zero is re-priced).
        "cost": total.cost - total.estimated_cost,
    }
    for key, value in got.items():
        assert _same(value, expected[key]), (report.view, key, value, expected[key])
    # The rows add up to the total, whichever view.
    for name in ("input", "output", "cache_read", "cache_write"):
        assert _same(sum(getattr(row, name) for row in report.rows), getattr(total, name))
    assert sum(row.turns for row in report.rows) == total.turns
    assert _same(sum(row.cost for row in report.rows), total.cost)
    assert total.estimated_cost >= 0 and total.unpriced_turns <= total.turns


def _check_all(paths: list[Path], options: ReportOptions) -> None:
    expected = _recount(paths)
    for catalog in (None, Catalog(ListingCache.disabled())):  # the store catalog, then a full read
        collected = collect_records(paths, catalog=catalog, zone=options.zone)
        assert collected.copied_entries == 0
        for view in VIEWS:
            report = collected_report(collected, view, options)
            dated = view in ("daily", "weekly", "monthly", "blocks")
            _check(report, expected["dated" if dated else "every"])


_tokens = st.one_of(st.integers(0, 5_000_000), st.just(0), st.floats(0, 1e6, allow_nan=False), st.none())
_costs = st.one_of(st.none(), st.just(0), st.floats(0, 500, allow_nan=False), st.just("free"))
_stamps = st.one_of(
    st.integers(0, 3 * 365 * 24 * 60).map(
        lambda m: (_EPOCH + timedelta(minutes=m)).isoformat()[:19] + ".000Z"
    ),
    st.none(),
    st.just("not a time"),
)


@st.composite
def _entry(draw: st.DrawFn) -> dict[str, Any]:
    usage: dict[str, Any] = {kind: draw(_tokens) for kind in KINDS}
    cost = draw(_costs)
    if cost is not None:
        usage["cost"] = {"total": cost}
    kind = draw(st.sampled_from(["assistant", "assistant", "task", "user"]))
    if kind == "assistant":
        message: dict[str, Any] = {"role": "assistant", "content": [], "model": draw(st.sampled_from(MODELS))}
        message["provider"] = "anthropic"
        message["usage"] = usage
    elif kind == "task":
        message = {"role": "toolResult", "toolName": "task", "content": [], "details": {"usage": usage}}
    else:
        message = {"role": "user", "content": "hello"}
    return {"type": "message", "timestamp": draw(_stamps), "message": message}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sessions=st.lists(st.lists(_entry(), max_size=12), min_size=1, max_size=4),
    zone=st.sampled_from(ZONES),
    start_of_week=st.integers(0, 6),
)
def test_generated_store_reports_equal_a_recount(
    tmp_path_factory: pytest.TempPathFactory,
    sessions: list[list[dict[str, Any]]],
    zone: Any,
    start_of_week: int,
) -> None:
    folder = tmp_path_factory.mktemp("store") / "-p"
    folder.mkdir()
    paths = []
    for number, entries in enumerate(sessions):
        header = {
            "type": "session",
            "version": 3,
            "id": f"01a22ce1-2073-7{number:03d}-8000-000000000000",
            "timestamp": "2024-01-01T00:00:00.000Z",
            "cwd": f"/p/{number % 2}",
        }
        lines = [json.dumps(header)]
        parent = None
        for position, entry in enumerate(entries):
            entry_id = f"{number:02d}{position:06d}"
            lines.append(json.dumps({**entry, "id": entry_id, "parentId": parent}))
            parent = entry_id
        path = folder / f"{number}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    _check_all(
        paths, ReportOptions(zone=zone, start_of_week=start_of_week, now_ms=int(_EPOCH.timestamp() * 1000))
    )


def test_corpora_reports_equal_a_recount() -> None:
    corpora = Path(__file__).resolve().parents[1]
    files = sorted(
        path
        for folder in ("conformance", "conformance_omp18", "conformance_omp183", "omp1823_recorded")
        for path in (corpora / folder).rglob("*.jsonl")
    )
    assert len(files) > 100
    # One file at a time: the corpora hold forks of each other, whose copies count once together.
    checked = 0
    for path in files:
        collected = collect_records([path], catalog=Catalog(ListingCache.disabled()))
        if collected.skipped or collected.copied_entries:
            continue  # unreadable files (named in skipped), files repeating an entry
        expected = _recount([path])
        for view in VIEWS:
            report = build_report(collected.records, view, ReportOptions(zone=ZoneInfo("Asia/Tokyo")))
            assert not collected.summed  # (a full read: every record one by one)
            _check(report, expected["dated" if view in ("daily", "weekly", "monthly", "blocks") else "every"])
        checked += 1
    assert checked > 100
