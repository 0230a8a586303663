"""The usage reports as pure functions of usage records (issue 27 #5): views, time zones, blocks,
model aliases, recorded and estimated cost, the cache-hit rate."""

from __future__ import annotations

from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from omp_session.tools.pricing import Price, PriceTable, canonical_model, default_prices
from omp_session.tools.usage_records import UsageRecord
from omp_session.tools.usage_report import BLOCK_MS, ReportOptions, build_report

PRICES = PriceTable("2025-01-01", {"claude-sonnet-4-5": Price(3.0, 15.0, 0.3, 3.75)})


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


def _record(
    when: str | None,
    *,
    model: str = "claude-sonnet-4-5",
    cost: float | None = 0.5,
    tokens: tuple[float, float, float, float] = (100, 10, 0, 0),
    session: str = "s1",
    project: str = "/p",
) -> UsageRecord:
    return UsageRecord(_ms(when) if when else None, model, "anthropic", *tokens, cost, session, project)


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("openrouter/anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai-codex/gpt-5-codex", "gpt-5-codex"),
        ("gpt-5.1", "gpt-5.1"),
        ("claude-sonnet-4", "claude-sonnet-4"),  # not a date: 4 is a version
    ],
)
def test_model_aliases_get_one_name(name: str, canonical: str) -> None:
    assert canonical_model(name) == canonical


def test_aliases_are_one_row_of_the_model_view() -> None:
    records = [
        _record("2025-06-01T10:00:00", model="claude-sonnet-4-5", cost=1.0),
        _record("2025-06-01T11:00:00", model="claude-sonnet-4-5-20250929", cost=2.0),
        _record("2025-06-01T12:00:00", model="anthropic/claude-sonnet-4-5", cost=4.0),
        _record("2025-06-01T12:00:00", model="claude-haiku-4-5", cost=0.25),
    ]
    report = build_report(records, "model", ReportOptions(prices=PRICES))
    assert [(row.key, row.cost, row.turns) for row in report.rows] == [
        ("claude-sonnet-4-5", 7.0, 3),
        ("claude-haiku-4-5", 0.25, 1),
    ]


def test_the_shipped_price_table_is_dated_and_knows_the_common_models() -> None:
    table = default_prices()
    assert date.fromisoformat(table.source_date) <= date.today()
    for model in ("claude-sonnet-4-5-20250929", "claude-opus-4-1", "gpt-5", "gpt-5-codex", "gemini-2.5-pro"):
        price = table.price_of(model)
        assert price is not None and price.output > price.input > price.cache_read > 0


def test_cost_is_recorded_else_estimated_else_unpriced_never_a_silent_zero() -> None:
    tokens = (1_000_000, 100_000, 2_000_000, 10_000)
    records = [
        _record("2025-06-01T10:00:00", cost=9.99, tokens=tokens),  # omp priced it
        _record("2025-06-01T11:00:00", cost=0, tokens=tokens),  # an import's zero
        _record("2025-06-01T12:00:00", cost=None, tokens=tokens),  # no cost at all
        _record("2025-06-01T13:00:00", model="my-local-llm", cost=0, tokens=tokens),
        _record("2025-06-01T14:00:00", cost=0, tokens=(0, 0, 0, 0)),  # nothing spent: a real zero
    ]
    estimate = 3.0 + 1.5 + 0.6 + 0.0375  # 1M input, 0.1M output, 2M cache read, 10k cache write
    report = build_report(records, "daily", ReportOptions(prices=PRICES))
    (row,) = report.rows
    assert row.cost == pytest.approx(9.99 + 2 * estimate)
    assert row.estimated_cost == pytest.approx(2 * estimate) and row.is_estimated
    assert row.unpriced_turns == 1 and row.unpriced_models == {"my-local-llm"}
    data = report.to_dict()["total"]
    assert data["costEstimated"] is True and data["unpricedTurns"] == 1
    assert data["unpricedModels"] == ["my-local-llm"]
    recorded_only = build_report(records[:1], "daily", ReportOptions(prices=PRICES)).to_dict()["total"]
    assert recorded_only["costEstimated"] is False and recorded_only["estimatedCost"] == 0


def test_cache_hit_rate_is_the_share_of_prompt_tokens_read_from_the_cache() -> None:
    report = build_report(
        [_record("2025-06-01T10:00:00", tokens=(100, 50, 300, 100))], "daily", ReportOptions(prices=PRICES)
    )
    assert report.rows[0].cache_hit_rate == pytest.approx(300 / 500)
    assert (
        build_report([_record("2025-06-01T10:00:00", tokens=(0, 5, 0, 0))], "daily").rows[0].cache_hit_rate
        is None
    )


def test_days_weeks_and_months_in_a_time_zone() -> None:
    # 23:30 UTC on Sunday 1 June is Monday 2 June in Paris (UTC+2).
    records = [_record("2025-06-01T23:30:00"), _record("2025-05-31T12:00:00")]
    utc = build_report(records, "daily")
    paris = build_report(records, "daily", ReportOptions(zone=ZoneInfo("Europe/Paris")))
    assert [row.key for row in utc.rows] == ["2025-05-31", "2025-06-01"]
    assert [row.key for row in paris.rows] == ["2025-05-31", "2025-06-02"]
    weeks_utc = build_report(records, "weekly")
    assert [row.key for row in weeks_utc.rows] == ["2025-05-26"]  # both in the week from Monday 26 May
    weeks_paris = build_report(records, "weekly", ReportOptions(zone=ZoneInfo("Europe/Paris")))
    assert [row.key for row in weeks_paris.rows] == ["2025-05-26", "2025-06-02"]
    sundays = build_report(records, "weekly", ReportOptions(start_of_week=6))
    assert [row.key for row in sundays.rows] == ["2025-05-25", "2025-06-01"]
    months = build_report(records, "monthly", ReportOptions(zone=ZoneInfo("Europe/Paris")))
    assert [row.key for row in months.rows] == ["2025-05", "2025-06"]
    ranged = build_report(
        records, "daily", ReportOptions(since=date(2025, 6, 2), zone=ZoneInfo("Europe/Paris"))
    )
    assert [row.key for row in ranged.rows] == ["2025-06-02"]


def test_undated_records_count_outside_dated_views_only() -> None:
    records = [_record(None, cost=1.0), _record("2025-06-01T10:00:00", cost=2.0)]
    assert build_report(records, "daily").total.cost == 2.0
    assert build_report(records, "blocks").total.cost == 2.0
    assert build_report(records, "session").total.cost == 3.0
    assert build_report(records, "session", ReportOptions(until=date(2025, 6, 30))).total.cost == 2.0


def test_blocks_follow_ccusage_five_hour_windows_with_gaps() -> None:
    records = [
        _record("2025-06-01T09:17:00", cost=1.0),
        _record("2025-06-01T13:59:00", cost=1.0),  # within 5 h of the block's start (09:00)
        _record("2025-06-01T14:00:00", cost=1.0),  # 09:00 + 5 h: the next block, starting 14:00
        _record("2025-06-01T14:30:00", cost=1.0),
        _record("2025-06-02T08:00:00", cost=1.0),  # 17.5 h after the last entry: a gap first
    ]
    report = build_report(records, "blocks")
    keys = [(row.key, row.turns, row.block.gap if row.block else None) for row in report.rows]
    assert keys == [
        ("2025-06-01 09:00", 2, False),
        ("2025-06-01 14:00", 2, False),
        ("2025-06-01 19:30", 0, True),  # from the last entry + 5 h to the next entry
        ("2025-06-02 08:00", 1, False),
    ]
    assert report.rows[2].label == "(gap)" and report.to_csv().splitlines()[3].startswith(
        "2025-06-01 19:30,(gap),"
    )
    first = report.rows[0].block
    assert first is not None and first.end_ms - first.start_ms == BLOCK_MS
    assert report.total.turns == 5 and report.total.cost == 5.0
    assert report.active_block is None  # no "now" given: nothing is active


def test_the_active_block_has_a_burn_rate_and_a_projection() -> None:
    records = [
        _record("2025-06-01T10:10:00", cost=1.0, tokens=(1000, 0, 0, 0)),
        _record("2025-06-01T10:40:00", cost=2.0, tokens=(2000, 0, 0, 0)),
    ]
    now = _ms("2025-06-01T11:00:00")
    report = build_report(records, "blocks", ReportOptions(now_ms=now))
    active = report.active_block
    assert active is not None and active.block is not None and active.block.burn is not None
    burn = active.block.burn
    assert burn.tokens_per_minute == pytest.approx(3000 / 30)
    assert burn.cost_per_hour == pytest.approx(3.0 / 30 * 60)
    assert burn.remaining_minutes == pytest.approx(4 * 60)  # the block ends at 15:00
    assert burn.projected_cost == pytest.approx(3.0 + 0.1 * 240)
    later = build_report(records, "blocks", ReportOptions(now_ms=_ms("2025-06-01T15:00:00")))
    assert later.active_block is None  # the block has ended
    assert report.to_dict()["rows"][0]["block"]["burnRate"]["tokensPerMinute"] == 100


def test_every_view_totals_the_same_records() -> None:
    records = [
        _record(
            f"2025-06-{day:02d}T{hour:02d}:00:00",
            session=f"s{day % 3}",
            project=f"/p{hour % 2}",
            cost=day / 10,
        )
        for day in range(1, 20)
        for hour in (1, 7, 15)
    ]
    totals = {
        view: build_report(records, view).total
        for view in ("daily", "weekly", "monthly", "session", "model", "project", "blocks")
    }
    assert {total.turns for total in totals.values()} == {len(records)}
    assert {round(total.cost, 9) for total in totals.values()} == {
        round(sum(r.cost or 0 for r in records), 9)
    }
