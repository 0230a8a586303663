"""PostgresStorage against a real server: omp 18's table, byte-identical rows, omp's semantics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from omp_session import SessionChangedError, SessionManager, SessionNotFoundError
from omp_session.format.codec import encode_line
from omp_session.format.title_slot import TitleSlot, encode_slot
from omp_session.store.postgres import PostgresStorage

Sql = psycopg.Connection[tuple[Any, ...]]
ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "text", "text": "hello ✓"}],
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3},
    "stopReason": "stop",
    "timestamp": 1,
}


def row(sql: Sql, table: str, path: Path | str) -> tuple[Any, ...] | None:
    query = f"SELECT content, mtime_ms, title, title_source, title_updated_at FROM {table} WHERE path = %s"
    return sql.execute(query, (str(path),)).fetchone()


def canonical_bytes(session: SessionManager) -> bytes:
    """What the file store writes for this session: the header and every entry, one line each."""
    return b"".join(encode_line(item) for item in (session.get_header(), *session.get_entries()))


def test_creates_omps_table_with_omps_columns(pg_store: PostgresStorage, sql: Sql, table_name: str) -> None:
    assert pg_store.all_sessions() == []
    columns = sql.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = %s ORDER BY ordinal_position",
        (table_name,),
    ).fetchall()
    assert columns == [
        ("path", "text", "NO"),
        ("content", "text", "NO"),
        ("mtime_ms", "bigint", "NO"),
        ("title", "text", "YES"),
        ("title_source", "text", "YES"),
        ("title_updated_at", "text", "YES"),
    ]
    primary = sql.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
        (table_name,),
    ).fetchall()
    assert primary == [("path",)]


def test_adds_title_columns_to_a_table_older_than_titles(
    postgres_server: Any, sql: Sql, table_name: str
) -> None:
    sql.execute(
        f"CREATE TABLE {table_name} (path TEXT PRIMARY KEY, content TEXT NOT NULL, mtime_ms BIGINT NOT NULL)"
    )
    sql.execute(f"INSERT INTO {table_name} VALUES ('/s/a.jsonl', 'x', 1)")
    with PostgresStorage(postgres_server.dsn, table_name) as store:
        assert store.read_session(Path("/s/a.jsonl")) == b"x"
    assert row(sql, table_name, "/s/a.jsonl") == ("x", 1, None, None, None)


def test_refuses_a_table_name_omp_would_refuse(postgres_server: Any) -> None:
    with pytest.raises(ValueError, match="table name"):
        PostgresStorage(postgres_server.dsn, "sessions; DROP TABLE x")


def test_a_session_is_one_row_byte_identical_to_its_file(
    pg_store: PostgresStorage, sql: Sql, table_name: str, tmp_path: Path
) -> None:
    with SessionManager.create("/work/project", tmp_path / "s", storage=pg_store) as session:
        first = session.append_message({"role": "user", "content": 'hi ü 😀\n"quoted"', "timestamp": 0})
        assert row(sql, table_name, session.get_session_file() or "") is None  # held until an answer
        session.append_message(dict(ASSISTANT))
        session.append_label_change(first, "start")
        path = session.get_session_file()
        assert path is not None and path.startswith(str(tmp_path / "s") + "/") and path.endswith(".jsonl")
        stored = row(sql, table_name, path)
        assert stored is not None
        assert stored[0].encode() == canonical_bytes(session)
        assert stored[2:] == (None, None, None)
    assert not Path(path).exists()  # nothing on the local disk
    reopened = SessionManager.open(path, storage=pg_store)
    assert reopened.get_entries() == session.get_entries()
    assert reopened.get_header() == session.get_header()
    reopened.close()


def test_appends_add_to_the_content(
    pg_store: PostgresStorage, sql: Sql, table_name: str, tmp_path: Path
) -> None:
    session = SessionManager.create("/p", tmp_path, storage=pg_store)
    session.append_message(dict(ASSISTANT))
    path = str(session.get_session_file())
    before = row(sql, table_name, path)
    assert before is not None
    entry_id = session.append_message({"role": "user", "content": "next", "timestamp": 2})
    after = row(sql, table_name, path)
    assert after is not None
    assert after[0].startswith(before[0])
    assert after[0][len(before[0]) :].encode() == encode_line(session.get_entry(entry_id))
    assert after[1] > before[1]  # mtime_ms moves on
    session.close()


def test_rewrite_replaces_only_what_this_writer_last_saw(
    pg_store: PostgresStorage, sql: Sql, table_name: str, tmp_path: Path
) -> None:
    session = SessionManager.create("/p", tmp_path, storage=pg_store)
    session.append_message(dict(ASSISTANT))
    path = str(session.get_session_file())
    # Another program (omp, which takes no lock) appends a line behind our back.
    sql.execute(f"UPDATE {table_name} SET content = content || %s WHERE path = %s", ('{"x":1}\n', path))
    changed = row(sql, table_name, path)
    with pytest.raises(SessionChangedError, match="size"):
        session.set_session_name("renamed")
    with pytest.raises(SessionChangedError, match="size"):
        session.append_message({"role": "user", "content": "lost?", "timestamp": 3})
    assert row(sql, table_name, path) == changed  # untouched
    session.close()


def test_rewrite_of_a_migrated_session_keeps_a_backup_row(
    pg_store: PostgresStorage, sql: Sql, table_name: str
) -> None:
    v1 = b'{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
    v1 += (
        b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a"}}\n'
    )
    pg_store.write_session(Path("/d/v1.jsonl"), v1, expected_size=None)
    with SessionManager.open("/d/v1.jsonl", storage=pg_store) as session:
        session.append_message({"role": "user", "content": "b", "timestamp": 2})
    backup = row(sql, table_name, "/d/v1.jsonl.v1.bak")
    assert backup is not None and backup[0].encode() == v1
    migrated = pg_store.read_session(Path("/d/v1.jsonl"))
    assert b'"version":3' in migrated and migrated.count(b"\n") == 3


def test_titles_are_updated_without_rewriting_the_body(
    pg_store: PostgresStorage, sql: Sql, table_name: str
) -> None:
    old = TitleSlot("first", "2025-01-01T00:00:00.000Z", "auto")
    body = b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
    pg_store.write_session(Path("/d/t.jsonl"), encode_slot(old) + body, expected_size=None)
    assert row(sql, table_name, "/d/t.jsonl")[2:] == ("first", "auto", "2025-01-01T00:00:00.000Z")  # type: ignore[index]
    new = TitleSlot("a much better title", "2025-01-02T00:00:00.000Z", "user")
    pg_store.update_title(Path("/d/t.jsonl"), new)
    stored = row(sql, table_name, "/d/t.jsonl")
    assert stored is not None
    assert stored[0].encode() == encode_slot(old) + body  # the body is not rewritten
    assert stored[2:] == ("a much better title", "user", "2025-01-02T00:00:00.000Z")
    # Read as omp reads it: the columns laid over the slot, the same bytes a file would hold.
    assert pg_store.read_session(Path("/d/t.jsonl")) == encode_slot(new) + body
    with pytest.raises(SessionNotFoundError):
        pg_store.update_title(Path("/d/missing.jsonl"), new)


def test_a_slotless_body_is_never_overlaid(pg_store: PostgresStorage) -> None:
    body = b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
    pg_store.write_session(Path("/d/h.jsonl"), body, expected_size=None)
    pg_store.update_title(Path("/d/h.jsonl"), TitleSlot("t", "2025-01-02T00:00:00.000Z", "user"))
    assert pg_store.read_session(Path("/d/h.jsonl")) == body


def test_write_session_checks_the_size(pg_store: PostgresStorage) -> None:
    path = Path("/d/w.jsonl")
    pg_store.write_session(path, b"one\n", expected_size=None)
    with pytest.raises(SessionChangedError):
        pg_store.write_session(path, b"two\n", expected_size=None)
    with pytest.raises(SessionChangedError):
        pg_store.write_session(path, b"two\n", expected_size=3)
    pg_store.write_session(path, b"two!\n", expected_size=4)
    assert pg_store.read_session(path) == b"two!\n"


def test_text_postgresql_cannot_hold_is_refused_before_anything_is_written(pg_store: PostgresStorage) -> None:
    from omp_session import PersistenceError

    with pytest.raises(PersistenceError, match="UTF-8"):
        pg_store.write_session(Path("/d/bad.jsonl"), b"\xff\n", expected_size=None)
    with pytest.raises(PersistenceError, match="NUL"):
        pg_store.write_session(Path("/d/bad.jsonl"), b"a\x00\n", expected_size=None)
    assert not pg_store.session_exists(Path("/d/bad.jsonl"))


def test_an_omp18_rename_sets_the_title_columns_and_leaves_the_body(
    pg_store: PostgresStorage, sql: Sql, table_name: str, tmp_path: Path
) -> None:
    session = SessionManager.create("/work/project", tmp_path, storage=pg_store, dialect="18")
    session.append_message(dict(ASSISTANT))
    path = str(session.get_session_file())
    before = row(sql, table_name, path)
    assert before is not None and before[2:4] == ("", None)  # the untitled slot of a new session
    session.set_session_name("Renamed in place", "user")
    after = row(sql, table_name, path)
    assert after is not None
    # The rename appended its title_change entry; the body before it is untouched, slot included.
    assert after[0].startswith(before[0]) and after[0][:256] == before[0][:256]
    assert after[2:4] == ("Renamed in place", "user") and after[4] is not None
    stored = pg_store.read_session(Path(path))
    assert stored[:256] == encode_slot(TitleSlot("Renamed in place", after[4], "user"))
    assert stored[256:] == after[0].encode()[256:]
    session.close()
    with SessionManager.open(path, storage=pg_store, read_only=True) as reopened:
        assert reopened.get_session_name() == "Renamed in place"
