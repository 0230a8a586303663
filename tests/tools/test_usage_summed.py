"""The usage reports from the catalog's SQL sums (``catalog_usage``) equal the reports of a full
read, entry by entry, on generated stores with forks: sessions copying a prefix of another (with
``parentSession`` naming it by path or id, or naming nothing), sessions sharing ids without being
forks, a session repeating an id, the same session id in two files, sessions that grow after the
catalog read them, every view, in time zones whose days start on quarter hours and on none, with
and without a date range."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.tools.catalog import Catalog
from omp_session.tools.listing_cache import ListingCache
from omp_session.tools.stats import collect_stats
from omp_session.tools.usage_records import CollectedRecords, collect_records
from omp_session.tools.usage_report import VIEWS, ReportOptions, collected_report

MODELS = ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "gpt-5", "a-model-nobody-prices")
#: Kathmandu is 5:45 from UTC, Paris and Los Angeles change theirs; a zone 7 minutes from UTC has
#: days that start inside a quarter hour (the catalog's groups are read record by record there).
ZONES = (
    timezone.utc,
    ZoneInfo("Europe/Paris"),
    ZoneInfo("America/Los_Angeles"),
    ZoneInfo("Asia/Kathmandu"),
    timezone(timedelta(minutes=7)),
)
_EPOCH = datetime(2025, 3, 29, 22, 0, tzinfo=timezone.utc)


@st.composite
def _turn(draw: st.DrawFn) -> dict[str, Any]:
    minutes = draw(st.integers(0, 3 * 24 * 60))
    stamp = (_EPOCH + timedelta(minutes=minutes, seconds=draw(st.integers(0, 59)))).isoformat()
    tokens: dict[str, Any] = {
        kind: draw(st.integers(0, 5000)) for kind in ("input", "output", "cacheRead", "cacheWrite")
    }
    cost = draw(st.one_of(st.none(), st.just(0), st.floats(0, 3, allow_nan=False)))
    if cost is not None:
        tokens["cost"] = {"total": cost}
    model = draw(st.sampled_from(MODELS))
    return {
        "type": "message",
        "timestamp": stamp.replace("+00:00", "Z"),
        "message": {"role": "assistant", "content": [], "model": model, "usage": tokens},
    }


@st.composite
def _store(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Sessions as ``{"id", "parent", "entries"}``: some copy a prefix of an earlier one."""
    sessions: list[dict[str, Any]] = []
    for number in range(draw(st.integers(1, 5))):
        own = [
            {**turn, "id": f"{number:02d}{position:04d}"}
            for position, turn in enumerate(draw(st.lists(_turn(), max_size=8)))
        ]
        parent: str | None = None
        entries = own
        fork = draw(st.booleans())
        if sessions and fork:
            source = draw(st.integers(0, len(sessions) - 1))
            copied = sessions[source]["entries"][: draw(st.integers(0, 6))]
            how = draw(st.sampled_from(["path", "id", "none", "elsewhere"]))
            parent = {"path": f"{source}.jsonl", "id": sessions[source]["id"], "none": None}.get(how, "x")
            entries = [*copied, *own]
        if own and draw(st.integers(0, 9)) == 0:
            entries = [*entries, dict(entries[0])]  # an id twice in one session
        session_id = f"s{number}" if draw(st.integers(0, 6)) else "s0"  # the same id in two files
        sessions.append({"id": session_id, "parent": parent, "entries": entries})
    return sessions


def _write(folder: Path, sessions: list[dict[str, Any]], cut: int) -> list[tuple[Path, list[str]]]:
    written = []
    for number, session in enumerate(sessions):
        header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": session["id"],
            "timestamp": f"2025-01-0{1 + number % 3}T00:00:00.000Z",  # ties keep the listed order
            "cwd": f"/p/{number % 2}",
        }
        if session["parent"] == "x":
            header["parentSession"] = "/not/listed.jsonl"
        elif session["parent"] is not None:
            name = session["parent"]
            header["parentSession"] = str(folder / name) if name.endswith(".jsonl") else name
        lines = [json.dumps(header)]
        parent = None
        for entry in session["entries"]:
            lines.append(json.dumps({**entry, "parentId": parent}))
            parent = entry["id"]
        keep = max(len(lines) - cut, 1)
        path = folder / f"{number}.jsonl"
        path.write_text("".join(line + "\n" for line in lines[:keep]))
        written.append((path, lines[keep:]))
    return written


def _spend(entry_id: str, cost: float) -> dict[str, Any]:
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": cost}}
    message = {"role": "assistant", "content": [], "model": "gpt-5", "usage": usage}
    return {"type": "message", "timestamp": "2025-03-30T10:00:00Z", "id": entry_id, "message": message}


def _reports(collected: CollectedRecords, options: ReportOptions) -> dict[str, Any]:
    return {view: collected_report(collected, view, options).to_dict() for view in VIEWS}


def _difference(a: Any, b: Any, at: str = "") -> str | None:
    """Where ``a`` and ``b`` differ. Floats are equal to 1e-9, or by one in the sixth decimal a
    report rounds costs to: the summed path adds the same numbers in another order (and prices a
    group's summed tokens), which moves the last bits, and can move a rounding."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{at}: keys {sorted(a)} != {sorted(b)}"
        return next((found for key in a if (found := _difference(a[key], b[key], f"{at}.{key}"))), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{at}: {len(a)} items != {len(b)}: {a} != {b}"
        pairs = enumerate(zip(a, b, strict=True))
        return next((found for n, (x, y) in pairs if (found := _difference(x, y, f"{at}[{n}]"))), None)
    if isinstance(a, float) or isinstance(b, float):
        numbers = isinstance(a, int | float) and isinstance(b, int | float)
        close = numbers and abs(a - b) <= max(1e-9 * abs(b), 1.0000001e-6)
        return None if close else f"{at}: {a!r} != {b!r}"
    return None if a == b else f"{at}: {a!r} != {b!r}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sessions=_store(),
    zone=st.sampled_from(ZONES),
    ranged=st.booleans(),
    grow=st.integers(0, 2),
    order=st.randoms(use_true_random=False),
)
def test_summed_reports_equal_the_full_rule(
    tmp_path_factory: pytest.TempPathFactory,
    sessions: list[dict[str, Any]],
    zone: Any,
    ranged: bool,
    grow: int,
    order: Any,
) -> None:
    folder = tmp_path_factory.mktemp("store") / "-p"
    folder.mkdir()
    written = _write(folder, sessions, grow)
    paths = [path for path, _rest in written]
    database = folder.parent / "catalog.sqlite3"  # each example its own catalog
    with Catalog(ListingCache(database)) as catalog:
        catalog.refresh(paths)  # the first build...
    for path, rest in written:
        with path.open("a") as handle:  # ...then some sessions grow
            handle.write("".join(line + "\n" for line in rest))
    order.shuffle(paths)
    options = ReportOptions(
        zone=zone,
        since=date(2025, 3, 30) if ranged else None,
        until=date(2025, 3, 31) if ranged else None,
        now_ms=int((_EPOCH + timedelta(days=1)).timestamp() * 1000),
    )
    with Catalog(ListingCache(database)) as catalog:
        summed = collect_records(paths, catalog=catalog, zone=zone, ranged=ranged)
    full = collect_records(paths, catalog=Catalog(ListingCache.disabled()))
    assert not full.summed
    got, expected = _reports(summed, options), _reports(full, options)
    assert _difference(got, expected) is None


def test_forks_are_counted_once_and_the_other_sessions_summed(tmp_path: Path) -> None:
    folder = tmp_path / "-p"
    folder.mkdir()

    parent = [_spend("a1", 1.0), _spend("a2", 2.0)]
    sessions: list[dict[str, Any]] = [
        {"id": "s0", "parent": None, "entries": parent},
        {"id": "s1", "parent": "0.jsonl", "entries": [*parent, _spend("b1", 4.0)]},
        {"id": "s2", "parent": None, "entries": [_spend("c1", 8.0)]},
    ]
    paths = [path for path, _rest in _write(folder, sessions, 0)]
    collected = collect_records(paths)
    # The fork and its parent are counted entry by entry; the third session is summed in SQL.
    assert len(collected.records) == 3 and collected.copied_entries == 2
    assert [group.turns for group in collected.summed["time"]] == [1]
    report = collected_report(collected, "session", ReportOptions())
    assert {row.key: row.cost for row in report.rows} == {"s0": 3.0, "s1": 4.0, "s2": 8.0}
    assert report.total.cost == 15.0 and report.total.turns == 4


def test_a_parent_named_by_an_id_two_sessions_hold_is_found_as_the_full_rule_finds_it(
    tmp_path: Path,
) -> None:
    # The fork names its parent by id, and an older session that shares nothing holds that id
    # too: the full rule takes the older one as the parent (so the fork's copies are its own, and
    # the real parent's entries are the copies). The summed path must count them the same way.
    folder = tmp_path / "-p"
    folder.mkdir()

    copied = [_spend("a1", 1.0), _spend("a2", 2.0)]
    sessions: list[dict[str, Any]] = [
        {"id": "dup", "parent": None, "entries": [_spend("c1", 8.0)]},  # 2025-01-01
        {"id": "fork", "parent": "dup", "entries": [*copied, _spend("b1", 4.0)]},  # 2025-01-02
        {"id": "dup", "parent": None, "entries": copied},  # 2025-01-03
        {"id": "other", "parent": None, "entries": [_spend("d1", 16.0)]},
    ]
    paths = [path for path, _rest in _write(folder, sessions, 0)]
    options = ReportOptions()
    summed = collect_records(paths)
    full = collect_records(paths, catalog=Catalog(ListingCache.disabled()))
    # Only the unrelated session is summed in SQL; the older "dup" is counted with the fork
    # (4 records: the 2 copies are left out).
    assert [group.turns for group in summed.summed["time"]] == [1] and len(summed.records) == 4
    assert _reports(summed, options) == _reports(full, options)
    rows = {row.key: row.cost for row in collected_report(summed, "session", options).rows}
    assert rows == {"fork": 7.0, "dup": 8.0, "other": 16.0}


def test_a_copy_of_a_session_is_counted_once_and_a_moved_one_is_still_summed(tmp_path: Path) -> None:
    folder = tmp_path / "-p"
    folder.mkdir()
    turns = [_spend(f"e{number}", 1.0) for number in range(3)]
    first, _rest = _write(folder, [{"id": "s0", "parent": None, "entries": turns}], 0)[0]
    copy = folder / "copy.jsonl"
    copy.write_bytes(first.read_bytes())
    options = ReportOptions()
    both = collect_records([first, copy])
    # Every entry of the copy is a copy: counted once, by the full rule, not summed.
    assert not both.summed["time"] and both.copied_entries == 3 and len(both.records) == 3
    moved = folder / "moved.jsonl"
    first.rename(moved)
    alone = collect_records([moved, copy.rename(folder / "elsewhere.jsonl")][:1])
    # The catalog still holds the old names' keys, but the report lists the moved file alone.
    assert alone.summed["time"] and not alone.records
    full = collect_records([moved], catalog=Catalog(ListingCache.disabled()))
    assert _reports(alone, options) == _reports(full, options)


def _written_store(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[dict[str, Any]], grow: int
) -> tuple[list[tuple[Path, list[str]]], list[Path], Path]:
    """``sessions`` written into a new store folder (``_write``), their paths and a catalog's path
    beside the folder."""
    folder = tmp_path_factory.mktemp("store") / "-p"
    folder.mkdir()
    written = _write(folder, sessions, grow)
    return written, [path for path, _rest in written], folder.parent / "catalog.sqlite3"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions=_store(), grow=st.integers(0, 2))
def test_kept_statistics_equal_a_full_read(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[dict[str, Any]], grow: int
) -> None:
    written, paths, database = _written_store(tmp_path_factory, sessions, grow)
    with Catalog(ListingCache(database)) as catalog:
        first = collect_stats(paths, branches=False, catalog=catalog)  # computed, then kept...
    for path, rest in written:
        with path.open("a") as handle:  # ...and some sessions grow (theirs are computed again)
            handle.write("".join(line + "\n" for line in rest))
    full = collect_stats(paths, branches=False, catalog=Catalog(ListingCache.disabled()))
    with Catalog(ListingCache(database)) as catalog:
        kept = collect_stats(paths, branches=False, catalog=catalog)
        held = (catalog.kept_stats([str(path) for path in paths]) or {}).values()
    unique = all(len({e["id"] for e in s["entries"]}) == len(s["entries"]) for s in sessions)
    if unique:  # (a repeated id: that session's branches are walked from a full read, every time)
        assert all(stats is not None for _stamp, stats in held)
    assert _difference(kept.to_dict(), full.to_dict()) is None
    assert first.sessions and kept.copied_entries == full.copied_entries


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions=_store(), grow=st.integers(1, 2), dropped=st.integers(0, 4))
def test_the_kept_combined_statistics_equal_a_full_read_after_an_append_and_a_delete(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[dict[str, Any]], grow: int, dropped: int
) -> None:
    # The combined totals of a many-session stats are kept (catalog_stats_totals) and read back
    # while the listed sessions are unchanged: the second, warm stats reads them; a session that
    # grew, or one deleted from the store, makes them counted again.
    written, paths, database = _written_store(tmp_path_factory, sessions, grow)

    def both(listed: list[Path]) -> None:
        full = collect_stats(listed, branches=False, catalog=Catalog(ListingCache.disabled()))
        for _ in range(2):  # the first computes (and keeps) the combined totals, the second reads them
            with Catalog(ListingCache(database)) as catalog:
                kept = collect_stats(listed, branches=False, catalog=catalog)
            assert _difference(kept.to_dict(), full.to_dict()) is None
            assert kept.copied_entries == full.copied_entries

    both(paths)
    if len(paths) > 1:
        with Catalog(ListingCache(database)) as catalog:
            assert catalog.cache.database is not None
            assert catalog.cache.database.execute("SELECT count(*) FROM catalog_stats_totals").fetchone()[0]
    grown = [(path, rest) for path, rest in written if rest]
    for path, rest in grown[:1]:  # one session gains its last lines
        with path.open("a") as handle:
            handle.write("".join(line + "\n" for line in rest))
    both(paths)
    gone = paths[dropped % len(paths)]
    gone.unlink()  # one session deleted (its file gone; the listing no longer names it)
    if len(paths) > 1:
        both([path for path in paths if path != gone])
