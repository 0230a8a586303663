"""The store catalog after appends: a session that grew is packed after its row (segments, then
packed afresh), the store's usage totals follow every session's change, a schema rebuild gives
the old catalog's space back, and a word most entries hold lists its sessions exactly."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path
from typing import Any

from omp_session import SessionManager
from omp_session.tools.catalog import Catalog, slim_entry
from omp_session.tools.catalog_search import matching_paths
from omp_session.tools.listing_cache import SCHEMA_VERSION, ListingCache, cache_path
from omp_session.tools.reading import read_session
from omp_session.tools.search import compile_query, search_sessions
from omp_session.tools.stats import collect_stats
from omp_session.tools.usage_records import collect_records
from omp_session.tools.usage_report import ReportOptions, collect_for, collected_report
from tests.helpers import HEADER, assistant, msg, usage, user, write_session

Entry = dict[str, Any]
#: More appends than a row keeps as segments before packing them afresh (catalog_rows._MAX_SEGMENTS).
APPENDS = 40


def _turns(count: int, start: int = 0, day: int = 1) -> list[Entry]:
    entries: list[Entry] = []
    parent = None
    for number in range(start, start + count):
        stamp = f"2025-06-{day:02d}T{number % 24:02d}:00:00.000Z"
        ask = {**msg(f"u{number}", parent, user(f"word question {number}")), "timestamp": stamp}
        spent = assistant(f"answer {number}", usage=usage(10, 5, 0.01))
        answer = {**msg(f"a{number}", ask["id"], spent), "timestamp": stamp}
        entries += [ask, answer]
        parent = answer["id"]
    return entries


def _reports(paths: list[Path], catalog: Catalog | None = None) -> dict[str, Any]:
    options = ReportOptions()
    views = ("daily", "monthly", "model", "blocks", "session")
    return {
        view: collected_report(
            collect_records(paths, catalog=catalog, views=(view,)), view, options
        ).to_dict()
        for view in views
    }


def _recount(paths: list[Path]) -> dict[str, Any]:
    return _reports(paths, Catalog(ListingCache.disabled()))


def _spend(number: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": f"appended answer {number}"}],
        "model": "claude-sonnet-4-5",
        "provider": "anthropic",
        "usage": usage(1000 + number, 7, 0.5),
        "timestamp": 1_750_000_000_000 + number * 3_600_000,
    }


def test_each_append_is_counted_at_once_and_after_many_the_row_is_packed_afresh(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "-p"
    paths = [
        write_session(root / f"{number}.jsonl", _turns(6, day=number + 1), {**HEADER, "id": f"s{number}"})
        for number in range(3)
    ]
    assert _reports(paths) == _recount(paths)  # the first build
    grown = paths[1]
    for number in range(APPENDS):
        with SessionManager.open(grown) as session:
            session.append_message(_spend(number))
        if number in (0, 1, APPENDS // 2, APPENDS - 1):
            got = _reports(paths)
            assert got == _recount(paths)
            assert got["daily"]["total"]["input"] == 3 * 6 * 10 + sum(1000 + n for n in range(number + 1))
    with Catalog() as catalog:
        catalog.refresh(paths)
        assert catalog.sessions_read == 0  # every append was read when it was made
        held = catalog.sessions([grown])[0]
    with read_session(grown) as session:
        assert list(held.entries) == [slim_entry(entry) for entry in session.get_entries()]
    with sqlite3.connect(cache_path()) as db:
        (facts,) = db.execute("SELECT facts FROM catalog_files WHERE path = ?", (str(grown),)).fetchone()
    segments, rest = 0, facts
    while rest:
        stream = zlib.decompressobj()
        stream.decompress(rest)
        rest, segments = stream.unused_data, segments + 1
    assert 1 <= segments < APPENDS  # packed afresh on the way, not one segment per append
    report = collect_stats(paths, branches=False)
    full = collect_stats(paths, branches=True)
    assert report.total.to_dict() == full.total.to_dict()


def test_the_store_totals_follow_a_session_that_is_deleted_or_rewritten(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "-p"
    paths = [
        write_session(root / f"{number}.jsonl", _turns(4, start=number * 10), {**HEADER, "id": f"s{number}"})
        for number in range(3)
    ]
    assert _reports(paths) == _recount(paths)
    write_session(paths[0], _turns(2), {**HEADER, "id": "s0"})  # rewritten, shorter
    assert _reports(paths) == _recount(paths)
    paths[2].unlink()
    kept = paths[:2]
    with Catalog() as catalog:  # the deleted session's groups leave the totals
        catalog.refresh(paths)
    options = ReportOptions()
    daily = collected_report(collect_for(kept, options, ("daily",)), "daily", options).to_dict()
    assert daily == _recount(kept)["daily"]
    assert daily["total"]["turns"] == 2 + 4


def test_a_schema_rebuild_gives_the_old_catalogs_space_back(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "-p"
    paths = [write_session(root / f"{n}.jsonl", _turns(60, start=n * 100)) for n in range(8)]
    with Catalog() as catalog:
        catalog.refresh(paths)
    database = cache_path()
    full = database.stat().st_size
    with sqlite3.connect(database) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION - 1}")
    ListingCache(database).close()  # another version's catalog: dropped, and the file shrinks
    assert database.stat().st_size < full / 4
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_word_most_entries_hold_lists_exactly_the_sessions_a_full_scan_finds(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "-p"
    paths = [write_session(root / f"{n}.jsonl", _turns(5, start=n * 10)) for n in range(6)]
    with SessionManager.open(paths[3]) as session:
        session.append_message({"role": "user", "content": "a rebase now", "timestamp": 1})
    for query in ("question", "question 3", "rebase", "answer 2"):
        pattern = compile_query(query)
        with Catalog() as catalog:
            found = matching_paths(paths, pattern, query, regex=False, catalog=catalog)
        expected = sorted({hit.path for hit in search_sessions(paths, pattern)})
        assert sorted(str(path) for path in found) == expected
