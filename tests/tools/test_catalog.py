"""The store catalog (tools/catalog.py): incremental, never stale, never precious, and what the
store-wide commands read from it equals what a full read of every session gives."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.tools import catalog_search
from omp_session.tools.catalog import Catalog, slim_entry
from omp_session.tools.catalog_search import candidate_paths, needles_of, search_store
from omp_session.tools.listing_cache import SCHEMA_VERSION, ListingCache, cache_path
from omp_session.tools.reading import read_session
from omp_session.tools.search import compile_query, search_sessions
from omp_session.tools.usage_records import collect_records
from omp_session.tools.usage_report import VIEWS, ReportOptions, collected_report
from tests.helpers import HEADER, assistant, jsonl, msg, usage, user, write_session
from tests.perf.sessions import session_lines

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "sessions"
Entry = dict[str, Any]


def _turns(count: int, start: int = 0, text: str = "word") -> list[Entry]:
    entries: list[Entry] = []
    parent = None
    for number in range(start, start + count):
        ask = msg(f"u{number}", parent, user(f"{text} question {number}"))
        answer = msg(
            f"a{number}", ask["id"], assistant(f"answer {number} " + "x" * 300, usage=usage(10, 5, 0.01))
        )
        entries += [ask, answer]
        parent = answer["id"]
    return entries


def _full(path: Path) -> tuple[dict[str, Any], list[Entry]]:
    with read_session(path) as session:
        return session.get_header(), [slim_entry(entry) for entry in session.get_entries()]


def _held(path: Path) -> tuple[dict[str, Any], list[Entry]]:
    with Catalog() as catalog:
        found = catalog.sessions([path])
        assert catalog.uncatalogued == set()
    assert len(found) == 1
    return found[0].header, list(found[0].entries)


def test_a_session_that_grew_is_read_from_where_the_catalog_stopped(tmp_path: Path) -> None:
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(40))
    assert _held(path) == _full(path)
    added = jsonl(_turns(1, start=40))
    with path.open("ab") as handle:
        handle.write(added)
    with Catalog() as catalog:
        catalog.refresh([path])
        assert catalog.sessions_read == 1
        assert catalog.bytes_read == len(added)  # only the new line was read
    assert _held(path) == _full(path)
    assert len(_held(path)[1]) == 82


def test_a_rewritten_replaced_or_deleted_session_is_read_again(tmp_path: Path) -> None:
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(30))
    _held(path)
    # Rewritten in place, longer, but with a different beginning: not an append.
    data = path.read_bytes()
    path.write_bytes(data.replace(b"question 0", b"QUESTION 0") + jsonl(_turns(1, start=30)))
    with Catalog() as catalog:
        catalog.refresh([path])
        assert catalog.bytes_read == path.stat().st_size
    assert _held(path) == _full(path)
    # Replaced by a file of the same size (another inode): read again.
    same_size = path.read_bytes().replace(b"QUESTION 0", b"question 0")
    replacement = path.with_suffix(".new")
    replacement.write_bytes(same_size)
    os.replace(replacement, path)
    assert _held(path) == _full(path)
    # Shrunk (a repair dropped the last turn).
    path.write_bytes(jsonl([HEADER, *_turns(3)]))
    assert _held(path) == _full(path)
    path.unlink()
    with Catalog() as catalog:
        assert catalog.sessions([path]) == []
        assert [reason for _path, reason in catalog.skipped] == ["cannot be read"]
    with sqlite3.connect(cache_path()) as db:  # a deleted session's rows are gone with it
        assert db.execute("SELECT count(*) FROM catalog_files").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM catalog_entries").fetchone() == (0,)


def test_a_torn_last_line_is_not_resumed_from(tmp_path: Path) -> None:
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(5))
    with path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"torn"')
    assert _held(path) == _full(path)
    with path.open("ab") as handle:  # the writer finishes the line, then another
        handle.write(
            b',"parentId":"a4","timestamp":"2025-06-02T14:00:00.000Z","message":{"role":"user","content":"x"}}\n'
        )
    assert _held(path) == _full(path)
    assert _held(path)[1][-1]["id"] == "torn"


@pytest.mark.parametrize("damage", ["garbage", "version", "truncated"])
def test_a_damaged_or_foreign_catalog_is_rebuilt_silently(tmp_path: Path, damage: str) -> None:
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(3))
    _held(path)
    database = cache_path()
    if damage == "garbage":
        database.write_bytes(b"this is not a database" * 100)
    elif damage == "version":
        with sqlite3.connect(database) as db:
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION - 1}")
    else:
        with database.open("r+b") as handle:
            handle.truncate(1000)
    assert _held(path) == _full(path)
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_without_a_writable_catalog_the_reports_read_the_sessions(tmp_path: Path) -> None:
    paths = sorted(SAMPLES.rglob("*.jsonl"))
    expected = collect_records(paths, catalog=Catalog(ListingCache.disabled()))
    catalog = Catalog(ListingCache.disabled())
    assert catalog.sessions(paths) == []
    assert catalog.uncatalogued == {os.fspath(path) for path in paths}
    got = collect_records(paths)
    assert expected.records and not expected.summed
    for view in VIEWS:
        options = ReportOptions()
        assert (
            collected_report(got, view, options).to_dict()
            == collected_report(expected, view, options).to_dict()
        )


def _recount(paths: list[Path], view: str) -> dict[str, Any]:
    collected = collect_records(paths, catalog=Catalog(ListingCache.disabled()))
    return collected_report(collected, view, ReportOptions()).to_dict()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions=st.lists(session_lines(), min_size=1, max_size=4), grow=st.integers(0, 3))
def test_usage_from_the_catalog_equals_a_full_recount(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[list[bytes]], grow: int
) -> None:
    folder = tmp_path_factory.mktemp("store")
    paths = []
    for number, lines in enumerate(sessions):
        path = folder / f"{number}.jsonl"
        cut = max(len(lines) - grow, 1)
        path.write_bytes(b"".join(lines[:cut]))
        paths.append((path, lines[cut:]))
    files = [path for path, _rest in paths]
    with Catalog() as catalog:
        catalog.refresh(files)  # the first build...
    for path, rest in paths:
        with path.open("ab") as handle:  # ...then each session grows
            handle.write(b"".join(rest))
    for view in ("daily", "weekly", "session", "model", "project", "blocks"):
        collected = collect_records(files)
        report = collected_report(collected, view, ReportOptions())
        assert report.to_dict() == _recount(files, view)


def test_corpora_usage_from_the_catalog_equals_a_full_recount() -> None:
    corpora = Path(__file__).resolve().parents[1]
    files = sorted(
        path
        for folder in ("conformance", "conformance_omp18", "conformance_omp183", "omp1823_recorded")
        for path in (corpora / folder).rglob("*.jsonl")
    )
    assert len(files) > 100
    held = collect_records(files)
    full = collect_records(files, catalog=Catalog(ListingCache.disabled()))
    for view in ("daily", "model"):
        report = collected_report(held, view, ReportOptions())
        recount = collected_report(full, view, ReportOptions())
        assert report.to_dict() == recount.to_dict()
    assert held.skipped == full.skipped and held.skipped  # the broken files are named, the same way


def test_concurrent_commands_share_the_catalog(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "-p"
    for number in range(12):
        write_session(
            root / f"{number:02}.jsonl", _turns(20, start=number * 100), {**HEADER, "id": f"s{number}"}
        )
    command = [
        sys.executable,
        "-m",
        "omp_session",
        "--dir",
        str(tmp_path / "sessions"),
        "usage",
        "--all",
        "--json",
    ]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outputs = [run.communicate(timeout=60) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _out, err in outputs]
    reports = [json.loads(out) for out, _err in outputs]
    assert all(report == reports[0] for report in reports)
    assert reports[0]["total"]["turns"] == 12 * 20
    with Catalog() as catalog:  # and the catalog they built holds every session
        catalog.refresh(sorted(root.glob("*.jsonl")))
        assert catalog.sessions_read == 0


# -- search --------------------------------------------------------------------------------------


def test_needles_are_what_every_match_contains() -> None:
    assert needles_of('"command": "grep', regex=False) == ['"command"', '"grep']
    assert needles_of("ab", regex=False) == []
    assert needles_of("colou?r sch[ae]me", regex=True) == ["colo", "r sch"]
    assert needles_of("foo|barbaz", regex=True) == []
    assert needles_of(".*", regex=True) == []
    assert needles_of("café au lait", regex=False) == []  # not ASCII: every session is searched


@pytest.mark.parametrize(
    ("query", "regex"),
    [
        ("migration", False),
        ("POSTGRES", False),
        ("sequence reset", False),
        ("migr.tion", True),
        ("(SQLite|Postgres)", True),
        ("zzzz-not-there", False),
        ('"path":', False),
        ("a", False),
    ],
)
def test_narrowed_search_finds_exactly_what_a_full_scan_finds(query: str, regex: bool) -> None:
    paths = sorted(SAMPLES.rglob("*.jsonl"))
    pattern = compile_query(query, regex=regex)
    full = list(search_sessions(paths, pattern))
    with Catalog() as catalog:
        narrowed = candidate_paths(paths, query, regex=regex, catalog=catalog)
    assert list(search_sessions(narrowed, pattern)) == full
    if needles_of(query, regex=regex):
        assert {hit.path for hit in full} <= {os.fspath(path) for path in narrowed}
        assert len(narrowed) <= len({hit.path for hit in full}) or not full


def test_ranked_search_filters_and_snippets(tmp_path: Path) -> None:
    tool_call = assistant("looking", usage=usage(1, 1, 0.0))
    tool_call["content"].append(
        {"type": "toolCall", "id": "c1", "name": "grep", "arguments": {"pattern": "needle"}}
    )
    other = dict(assistant("a needle in prose " * 3, model="gpt-5", provider="openai"))
    entries = [
        msg("u1", None, user("where is the needle? needle needle")),
        msg("a1", "u1", tool_call, "2025-06-03T10:00:00.000Z"),
        msg("a2", "a1", other, "2025-06-04T10:00:00.000Z"),
    ]
    path = write_session(tmp_path / "p" / "s.jsonl", entries)
    with Catalog() as catalog:
        hits = catalog.ranked([path], "needle")
        assert hits[0].entry_id == "u1"  # three matches in a short entry rank first
        assert {hit.entry_id for hit in hits} == {"u1", "a1", "a2"}
        assert "\x02needle\x03" in hits[0].snippet
        assert [h.entry_id for h in catalog.ranked([path], "needle", roles=["user"])] == ["u1"]
        assert [h.entry_id for h in catalog.ranked([path], "needle", tool="grep")] == ["a1"]
        assert [h.entry_id for h in catalog.ranked([path], "needle", model="gpt")] == ["a2"]
        assert [h.entry_id for h in catalog.ranked([path], "needle", since="2025-06-04")] == ["a2"]
        assert [h.entry_id for h in catalog.ranked([path], "eedl")] != []  # substrings match
        assert [h.entry_id for h in catalog.ranked([path], '"the needle"')] == ["u1"]  # a phrase
        assert catalog.ranked([path], "needle NOT prose NOT grep") == catalog.ranked(
            [path], "needle", roles=["user"]
        )
        with pytest.raises(ValueError, match="not a search query"):
            catalog.ranked([path], '"unclosed')


@pytest.mark.parametrize("at_once", [2000, 1])  # texts read at once, or one session at a time
@pytest.mark.parametrize(
    ("query", "regex"), [("the", False), ("sort", False), ('"path":', False), (".*", True), ("e", False)]
)
def test_search_from_the_catalog_equals_a_full_scan_on_the_corpora(
    query: str, regex: bool, at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_search, "_AT_ONCE", at_once)
    corpora = Path(__file__).resolve().parents[1]
    files = sorted(
        path
        for folder in ("conformance", "conformance_omp18", "conformance_omp183")
        for path in (corpora / folder).rglob("*.jsonl")
    )
    pattern = compile_query(query, regex=regex)
    full_errors: list[tuple[str, str]] = []
    full = list(search_sessions(files, pattern, errors=full_errors))
    errors: list[tuple[str, str]] = []
    with Catalog() as catalog:
        found = list(search_store(files, pattern, query, regex=regex, catalog=catalog, errors=errors))
        assert catalog.sessions_read > 100  # answered from the catalog it built
    assert found == full and full
    assert errors == full_errors
    assert any(not hit.on_current_branch for hit in full) or query == '"path":'


def test_stats_of_every_session_from_the_catalog_equals_a_full_read(
    isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from omp_session.tools.stats import collect_stats

    corpora = Path(__file__).resolve().parents[1]
    files = sorted(
        path for folder in ("conformance", "omp1823_recorded") for path in (corpora / folder).rglob("*.jsonl")
    )
    held = collect_stats(files, branches=False).to_dict()
    with sqlite3.connect(cache_path()) as db:  # it was answered from the catalog
        assert db.execute("SELECT count(*) FROM catalog_files").fetchone()[0] > 30
    unwritable = tmp_path / "agent"
    unwritable.mkdir()
    (unwritable / "cache").write_text("a file where the cache directory would be")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(unwritable))
    full = collect_stats(files, branches=False).to_dict()
    assert held == full
    assert held["sessions"] and held["skipped"]


def test_id_prefixes_resolve_from_the_catalog_as_from_the_files(tmp_path: Path) -> None:
    from omp_session.tools.resolve import session_candidates

    corpora = Path(__file__).resolve().parents[1]
    files = sorted(
        path
        for folder in ("conformance", "conformance_omp18", "conformance_omp183")
        for path in (corpora / folder).rglob("*.jsonl")
    )
    read = session_candidates(files)  # no catalog yet: every first line is read
    with Catalog() as catalog:
        catalog.refresh(files)
        known = catalog.known_ids(files)
    assert len(known) > 100
    assert session_candidates(files) == read  # the ids of the catalogued ones, the same answer
    # A session changed since it was catalogued is not answered from its stale row.
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(2), {**HEADER, "id": "old-id"})
    with Catalog() as catalog:
        catalog.refresh([path])
        assert catalog.known_ids([path]) == {os.fspath(path): ("old-id", path.stat().st_mtime)}
    write_session(path, _turns(2), {**HEADER, "id": "new-id"})
    with Catalog() as catalog:
        assert catalog.known_ids([path]) == {}
    assert [candidate.id for candidate in session_candidates([path])] == ["new-id"]


def _catalog_counts() -> dict[str, int]:
    tables = ("catalog_files", "catalog_sessions", "catalog_entries", "catalog_text", "catalog_usage")
    with sqlite3.connect(cache_path()) as db:
        counts = {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}
        counts["keys"] = db.execute("SELECT count(*) FROM catalog_keys").fetchone()[0]
        counts["pairs"] = db.execute("SELECT count(*) FROM catalog_pairs").fetchone()[0]
    return counts


def test_sessions_deleted_or_moved_from_the_store_leave_the_catalog(tmp_path: Path) -> None:
    from omp_session.tools.listing import list_all_sessions, session_files

    root = tmp_path / "sessions"
    kept = write_session(root / "p" / "kept.jsonl", _turns(5, text="kept"))
    deleted = write_session(root / "p" / "deleted.jsonl", _turns(5, text="deleted"))
    moved = write_session(root / "q" / "moved.jsonl", _turns(5, text="moved"))
    # A fork of the deleted one: shares its copy keys (a pair in catalog_pairs).
    fork = write_session(root / "q" / "fork.jsonl", _turns(5, text="deleted"))
    with Catalog() as catalog:
        catalog.refresh(list(session_files(root)))
    before = _catalog_counts()
    assert before["catalog_files"] == 4 and before["pairs"] == 12  # every two of the four share keys
    deleted.unlink()
    fork.unlink()
    target = root / "r" / "moved.jsonl"
    target.parent.mkdir()
    os.replace(moved, target)
    # The next store-wide command neither lists nor finds them ...
    listed = {os.fspath(item.path) for item in list_all_sessions(root)}
    assert listed == {os.fspath(kept), os.fspath(target)}
    paths = list(session_files(root))
    with Catalog() as catalog:
        found = list(search_store(paths, compile_query("deleted"), "deleted", regex=False, catalog=catalog))
        assert found == []
        assert {os.fspath(session.path) for session in catalog.sessions(paths)} == listed
    # ... and their rows are gone: only the two sessions there are remain, once each.
    after = _catalog_counts()
    assert after["catalog_files"] == after["catalog_sessions"] == 2
    assert after["catalog_entries"] == after["catalog_text"] == before["catalog_entries"] // 2
    assert after["keys"] == before["keys"] // 2
    with sqlite3.connect(cache_path()) as db:
        owners = {row[0] for row in db.execute("SELECT owner FROM catalog_sessions")}
        assert {row[0] for row in db.execute("SELECT owner FROM catalog_keys")} == owners
        assert {owner for pair in db.execute("SELECT a, b FROM catalog_pairs") for owner in pair} <= owners
        held = {row[0] for row in db.execute("SELECT DISTINCT path FROM catalog_usage")}
        assert held == listed
    # A command on one session prunes as well (the rows of a session gone are of no use).
    os.remove(target)
    with Catalog() as catalog:
        catalog.refresh([kept])
    assert _catalog_counts()["catalog_files"] == 1


def test_one_catalog_object_looks_for_gone_sessions_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command refreshes several times (stats: the usage index, then the sessions): only its
    # first refresh stats the rows it was not asked about.
    paths = [write_session(tmp_path / "p" / f"s{number}.jsonl", _turns(2)) for number in range(3)]
    with Catalog() as catalog:
        catalog.refresh(paths)
    looked: list[str] = []
    real_lstat = os.lstat

    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        looked.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counted)
    with Catalog() as catalog:
        catalog.refresh(paths[:1])
        assert sorted(looked) == sorted(os.fspath(path) for path in paths[1:])
        catalog.refresh(paths[:1])
        catalog.refresh(paths[1:2])
    assert len(looked) == 2


def test_a_file_store_command_keeps_rows_that_are_not_files(tmp_path: Path) -> None:
    # Rows a database store catalogued (inode -1) are no files: a file-store refresh keeps them.
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(2))
    with Catalog() as catalog:
        catalog.refresh([path])
    with sqlite3.connect(cache_path()) as db:
        db.execute(
            "INSERT INTO catalog_files (path, size, mtime_ns, ctime_ns, ino)"
            " VALUES ('/db/x.jsonl', 1, 1, -1, -1)"
        )
    with Catalog() as catalog:
        catalog.refresh([path])
    with sqlite3.connect(cache_path()) as db:
        assert db.execute("SELECT count(*) FROM catalog_files").fetchone() == (2,)


def test_a_search_stopped_early_reads_only_the_sessions_of_its_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A word most entries hold: the hits are made one session at a time, as they are asked for.
    paths = [
        write_session(tmp_path / "p" / f"s{number:02d}.jsonl", _turns(3, text=f"common {number}"))
        for number in range(12)
    ]
    pattern = compile_query("common")
    full = list(search_sessions(paths, pattern))
    monkeypatch.setattr(catalog_search, "_AT_ONCE", 5)
    read: list[str] = []
    real = Catalog.session_texts

    def spy(self: Catalog, path: str, needles: Any) -> Any:
        read.append(path)
        return real(self, path, needles)

    monkeypatch.setattr(Catalog, "session_texts", spy)
    with Catalog() as catalog:
        catalog.refresh(paths)
        hits = search_store(paths, pattern, "common", regex=False, catalog=catalog)
        first = [next(hits) for _ in range(4)]
        assert first == full[:4]
        assert read == [os.fspath(paths[0]), os.fspath(paths[1])]  # three hits in each
        read.clear()
        assert list(search_store(paths, pattern, "common", regex=False, catalog=catalog)) == full
        assert len(read) == len(paths)
        read.clear()
        # A rare word (fewer matching entries than _AT_ONCE) is read in one query.
        rare = compile_query("common 7 ")
        found = list(search_store(paths, rare, "common 7 ", regex=False, catalog=catalog))
        assert found == list(search_sessions(paths, rare)) and found and read == []


def test_a_damaged_resume_point_or_import_marker_row_is_read_again(tmp_path: Path) -> None:
    path = write_session(tmp_path / "p" / "s.jsonl", _turns(5))
    assert _held(path) == _full(path)
    with sqlite3.connect(cache_path()) as db:
        db.execute("UPDATE catalog_files SET prompt = ?, imports = ?", (b"[1,", b"{{"))
    with Catalog() as catalog:
        assert catalog.known_imports([path]) == {}  # left to the importers' own scan
    with path.open("ab") as handle:  # grown: the refresh would resume from the damaged row
        handle.write(jsonl(_turns(1, start=5)))
    with Catalog() as catalog:
        catalog.refresh([path])
        assert catalog.bytes_read == path.stat().st_size  # read again from its start
    assert _held(path) == _full(path)
