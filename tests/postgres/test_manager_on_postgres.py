"""Every factory and whole-session operation of the manager on a PostgreSQL store."""

from __future__ import annotations

from pathlib import Path

import psycopg

from omp_session import Runtime, SessionInfo, SessionManager
from omp_session.format.title_slot import TitleSlot, encode_slot
from omp_session.store.postgres import PostgresStorage

ANSWER = {
    "role": "assistant",
    "content": [{"type": "text", "text": "ok"}],
    "stopReason": "stop",
    "timestamp": 0,
}


def started(store: PostgresStorage, directory: Path) -> SessionManager:
    session = SessionManager.create("/work/project", directory, storage=store)
    session.append_message({"role": "user", "content": "question", "timestamp": 0})
    session.append_message(dict(ANSWER))
    return session


def test_list_and_continue_recent_read_the_database(pg_store: PostgresStorage, tmp_path: Path) -> None:
    older = started(pg_store, tmp_path)
    older.close()
    newer = started(pg_store, tmp_path)
    newer.append_message({"role": "user", "content": "latest", "timestamp": 5})
    newer.close()
    pg_store.write_session(tmp_path / "not-a-session.jsonl", b"garbage\n", expected_size=None)
    pg_store.write_session(tmp_path / "sub" / "deeper.jsonl", b"", expected_size=None)
    listed = SessionManager.list("/work/project", tmp_path, storage=pg_store)
    assert [info.path for info in listed] == [newer.get_session_file(), older.get_session_file()]
    assert listed[0].message_count == 3 and listed[0].first_message == "question"
    assert SessionManager.list("/work/project", tmp_path) == []  # the local directory holds nothing
    with SessionManager.continue_recent("/work/project", tmp_path, storage=pg_store) as resumed:
        assert resumed.get_session_file() == newer.get_session_file()
        assert resumed.get_entries() == newer.get_entries()
    all_listed = SessionManager.list_all(storage=pg_store)
    assert all_listed == []  # the default sessions root holds none of these
    root_listed = [info.path for info in _list_all_under(pg_store, tmp_path.parent)]
    assert newer.get_session_file() in root_listed


def _list_all_under(store: PostgresStorage, root: Path) -> list[SessionInfo]:
    from omp_session.tools.listing import list_all_sessions

    return list_all_sessions(root, storage=store)


def test_continue_recent_creates_a_session_in_the_database(pg_store: PostgresStorage, tmp_path: Path) -> None:
    with SessionManager.continue_recent("/p", tmp_path, storage=pg_store) as session:
        session.append_message(dict(ANSWER))
        path = session.get_session_file()
    assert path is not None and pg_store.session_exists(Path(path))
    assert not Path(path).exists()


def test_fork_branch_new_session_and_move_stay_in_the_database(
    pg_store: PostgresStorage, tmp_path: Path
) -> None:
    session = started(pg_store, tmp_path)
    source = session.get_session_file()
    assert source is not None
    copy = SessionManager.fork_from(source, "/elsewhere", tmp_path / "forks", storage=pg_store)
    assert [e["id"] for e in copy.get_entries()] == [e["id"] for e in session.get_entries()]
    assert pg_store.session_exists(Path(str(copy.get_session_file())))
    copy.close()

    first = session.get_entries()[0]["id"]
    branched = session.create_branched_session(first)
    assert branched is not None and branched != source
    assert pg_store.read_session(Path(branched)).count(b"\n") == 2  # header + the one entry

    forked = session.fork()
    assert forked is not None and pg_store.session_exists(Path(forked.new_session_file))

    fresh = session.new_session()
    assert fresh is not None
    session.append_message(dict(ANSWER))
    assert pg_store.session_exists(Path(fresh))

    session.move_to("/work/moved")
    moved = session.get_session_file()
    assert moved is not None and moved != fresh and "moved" in moved
    assert pg_store.session_exists(Path(moved)) and not pg_store.session_exists(Path(fresh))
    assert b'"cwd":"/work/moved"' in pg_store.read_session(Path(moved))
    session.close()
    assert not list(tmp_path.rglob("*.jsonl"))


def test_a_read_only_follower_refreshes_from_the_row(pg_store: PostgresStorage, tmp_path: Path) -> None:
    writer = started(pg_store, tmp_path)
    path = writer.get_session_file()
    assert path is not None
    reader = SessionManager.open(path, read_only=True, storage=pg_store)
    assert reader.refresh() == []
    added = writer.append_message({"role": "user", "content": "more", "timestamp": 3})
    assert [e["id"] for e in reader.refresh()] == [added]
    writer.set_session_name("renamed")  # a full rewrite: the reader reads it again
    writer.append_message({"role": "user", "content": "after", "timestamp": 4})
    reader.refresh()
    assert reader.get_entries() == writer.get_entries()
    assert reader.get_header().get("title") == "renamed"
    reader.close()
    writer.close()


def test_the_layout_rule_looks_at_the_rows_of_the_directory(
    pg_store: PostgresStorage, tmp_path: Path
) -> None:
    """Auto dialect: a new session gets omp 18's title slot only when the store already holds
    slot sessions in that directory (docs/compatibility.md) — here, rows of the table."""
    plain = started(pg_store, tmp_path / "old-omp")
    plain.close()
    assert not pg_store.read_session(Path(str(plain.get_session_file()))).startswith(b'{"type":"title"')
    header = b'{"type":"session","version":3,"id":"s18","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
    slot = encode_slot(TitleSlot("", "2025-01-01T00:00:00.000Z"))
    pg_store.write_session(tmp_path / "new-omp" / "a.jsonl", slot + header, expected_size=None)
    newer = started(pg_store, tmp_path / "new-omp")
    newer.close()
    assert pg_store.read_session(Path(str(newer.get_session_file()))).startswith(b'{"type":"title"')
    again = started(pg_store, tmp_path / "old-omp")
    again.close()
    assert not pg_store.read_session(Path(str(again.get_session_file()))).startswith(b'{"type":"title"')


def test_the_viewers_listing_cache_keeps_a_rows_summary_until_the_row_changes(
    pg_store: PostgresStorage, tmp_path: Path
) -> None:
    from omp_session.tools.listing import list_store
    from omp_session.tools.listing_cache import ListingCache

    session = started(pg_store, tmp_path / "project")
    path = Path(str(session.get_session_file()))
    cache = ListingCache.in_memory()
    first = list_store(tmp_path, cache=cache, storage=pg_store)
    assert [info.message_count for info in first] == [2]
    # Same size and mtime_ms (a write no writer makes): the cached summary is used, not re-read.
    same_size = pg_store.read_session(path).replace(b'"question"', b'"QUESTION"').decode()
    with psycopg.connect(pg_store.dsn, autocommit=True) as sql:
        sql.execute(f"UPDATE {pg_store.table} SET content = %s WHERE path = %s", (same_size, str(path)))
    assert [info.first_message for info in list_store(tmp_path, cache=cache, storage=pg_store)] == [
        "question"
    ]
    assert [info.first_message for info in list_store(tmp_path, storage=pg_store)] == ["QUESTION"]  # uncached
    session.close()
    with SessionManager.open(path, storage=pg_store) as writer:  # size and mtime_ms move
        writer.append_message({"role": "user", "content": "third", "timestamp": 3})
    assert [info.first_message for info in list_store(tmp_path, cache=cache, storage=pg_store)] == [
        "QUESTION"
    ]
    assert [info.message_count for info in list_store(tmp_path, cache=cache, storage=pg_store)] == [3]


def test_a_store_given_once_is_the_sessions_store_for_good(pg_store: PostgresStorage, tmp_path: Path) -> None:
    # The runtime's store (the command line's --store) reaches every factory, and the session
    # keeps it: what it copies and drops later happens in the database, never in files.
    runtime = Runtime(store=pg_store, breadcrumbs=False)
    session = SessionManager.create("/work/project", tmp_path / "project", runtime=runtime)
    session.append_message({"role": "user", "content": "question", "timestamp": 1})
    session.append_message(dict(ANSWER))
    path = Path(str(session.get_session_file()))
    assert pg_store.session_exists(path) and not path.exists()
    copy = session.persist_copy(tmp_path / "copies")
    copied = Path(str(copy.get_session_file()))
    assert pg_store.session_exists(copied) and not copied.exists()
    copy.drop_session(copied)
    assert not pg_store.session_exists(copied) and pg_store.session_exists(path)
    copy.close()
    session.close()
    with SessionManager.open(path, read_only=True, runtime=runtime) as reader:
        assert reader.get_entries()[0]["message"]["content"] == "question"
    assert not list(tmp_path.rglob("*.jsonl"))
