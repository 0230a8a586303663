"""One writer per session across processes, and durability: kill -9 of a writer process and
dropped connections (pg_terminate_backend) against the real server lose nothing acknowledged."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from omp_session import SessionChangedError, SessionError, SessionLockedError, SessionManager
from omp_session.store.postgres import PostgresStorage
from tests.durability.conftest import REPO, kill_after
from tests.pg_server import ThrowawayServer
from tests.postgres.children import open_when_free

Sql = psycopg.Connection[tuple[Any, ...]]
ANSWER = {"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 0}


def start_child(mode: str, server: ThrowawayServer, table: str, path: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.postgres.children", mode, server.dsn, table, path],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def new_session(store: PostgresStorage, tmp_path: Path) -> str:
    with SessionManager.create("/work/project", tmp_path, storage=store) as session:
        session.append_message(dict(ANSWER))
        path = session.get_session_file()
    assert path is not None
    return path


def stored_ids(store: PostgresStorage, path: str) -> list[str]:
    with SessionManager.open(path, read_only=True, storage=store) as session:
        assert not session.get_load_issues()
        return [entry["id"] for entry in session.get_entries()]


def test_a_second_writer_in_this_process_is_refused(pg_store: PostgresStorage, tmp_path: Path) -> None:
    path = new_session(pg_store, tmp_path)
    first = SessionManager.open(path, storage=pg_store)
    with pytest.raises(SessionLockedError, match="locked for writing") as caught:
        SessionManager.open(path, storage=pg_store)
    assert caught.value.holder_pid == os.getpid()
    with SessionManager.open(path, read_only=True, storage=pg_store) as reader:  # readers take no lock
        assert reader.get_entries() == first.get_entries()
    first.close()
    SessionManager.open(path, storage=pg_store).close()  # released on close


def test_a_writer_in_another_process_is_refused_until_it_closes(
    postgres_server: ThrowawayServer, pg_store: PostgresStorage, table_name: str, tmp_path: Path
) -> None:
    path = new_session(pg_store, tmp_path)
    holder = start_child("hold", postgres_server, table_name, path)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline() == b"locked\n"
    prober = start_child("try-open", postgres_server, table_name, path)
    out, _ = prober.communicate(timeout=60)
    assert out.decode() == f"locked by {holder.pid}\n"  # the holder's pid, from any host
    with pytest.raises(SessionLockedError):
        SessionManager.open(path, storage=pg_store)
    holder.stdin.close()
    assert holder.wait(timeout=60) == 0
    with SessionManager.open(path, storage=pg_store) as session:
        session.append_message({"role": "user", "content": "mine now", "timestamp": 1})


def test_a_killed_writers_lock_is_released_by_the_server(
    postgres_server: ThrowawayServer, pg_store: PostgresStorage, table_name: str, tmp_path: Path
) -> None:
    path = new_session(pg_store, tmp_path)
    holder = start_child("hold", postgres_server, table_name, path)
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    holder.kill()
    holder.wait()
    prober = start_child("append", postgres_server, table_name, path)  # retries while locked
    acknowledged = kill_after(prober, 3, 0)
    assert len(acknowledged) >= 3
    assert set(acknowledged) <= set(stored_ids(pg_store, path))


def test_sigkill_of_writers_loses_nothing_acknowledged(
    postgres_server: ThrowawayServer, pg_store: PostgresStorage, table_name: str, tmp_path: Path
) -> None:
    path = new_session(pg_store, tmp_path)
    rng = random.Random(20261130)
    acknowledged: list[str] = []
    for _ in range(25):
        child = start_child("append", postgres_server, table_name, path)
        acknowledged += kill_after(child, rng.randint(0, 15), rng.choice([0, 0, 0.001, 0.005]))
    assert len(acknowledged) > 100
    # A killed client's last statement may still be running in its server backend, which holds the
    # lock until it ends: wait for that, as the next writer would.
    with open_when_free(pg_store, path) as session:
        pass
    ids = stored_ids(pg_store, path)
    assert set(acknowledged) <= set(ids)
    assert len(ids) == len(set(ids))
    with SessionManager.open(path, read_only=True, storage=pg_store) as session:
        assert [entry["id"] for entry in session.get_branch()] == ids  # one chain: nothing torn


def _writer_backends(sql: Sql) -> list[int]:
    rows = sql.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
        (f"omp-session pid {os.getpid()} on {os.uname().nodename}"[:63],),
    ).fetchall()
    return [int(row[0]) for row in rows]


def test_a_dropped_connection_is_replaced_and_nothing_is_lost(
    pg_store: PostgresStorage, sql: Sql, tmp_path: Path
) -> None:
    path = new_session(pg_store, tmp_path)
    session = SessionManager.open(path, storage=pg_store)
    before = [session.append_message({"role": "user", "content": f"b{n}", "timestamp": n}) for n in range(3)]
    backends = _writer_backends(sql)
    assert len(backends) >= 2  # the store's connection and the writer's (holding the lock)
    for pid in backends:
        sql.execute("SELECT pg_terminate_backend(%s)", (pid,))
    after = session.append_message({"role": "user", "content": "after", "timestamp": 9})
    with pytest.raises(SessionLockedError):  # the lock was taken again with the new connection
        SessionManager.open(path, storage=pg_store)
    session.close()
    assert stored_ids(pg_store, path)[-4:] == [*before, after]


def test_a_lock_lost_with_the_connection_never_lets_two_writers_write(
    pg_store: PostgresStorage, sql: Sql, tmp_path: Path
) -> None:
    path = new_session(pg_store, tmp_path)
    first = SessionManager.open(path, storage=pg_store)
    first.append_message({"role": "user", "content": "one", "timestamp": 1})
    for pid in _writer_backends(sql):
        sql.execute("SELECT pg_terminate_backend(%s)", (pid,))
    second = open_when_free(pg_store, path)  # the lock went with the connection
    kept = second.append_message({"role": "user", "content": "two", "timestamp": 2})
    with pytest.raises(SessionLockedError):
        first.append_message({"role": "user", "content": "three", "timestamp": 3})
    second.close()
    with pytest.raises(SessionChangedError):  # lock free again, but the row is not what first saw
        first.append_message({"role": "user", "content": "three", "timestamp": 3})
    first.close()
    assert stored_ids(pg_store, path)[-1] == kept


def test_connections_dropped_during_appends_lose_nothing_acknowledged(
    pg_store: PostgresStorage, postgres_server: ThrowawayServer, tmp_path: Path
) -> None:
    path = new_session(pg_store, tmp_path)
    stop = threading.Event()
    terminations = 0

    def terminate() -> None:
        nonlocal terminations
        rng = random.Random(7)
        with psycopg.connect(postgres_server.dsn, autocommit=True) as killer:
            while not stop.wait(rng.uniform(0.005, 0.03)):
                backends = _writer_backends(killer)
                if backends:  # one of the writer's or the store's connections, at a random moment
                    killer.execute("SELECT pg_terminate_backend(%s)", (rng.choice(backends),))
                    terminations += 1

    thread = threading.Thread(target=terminate)
    thread.start()
    acknowledged: list[str] = []
    failures = 0
    kinds: dict[str, int] = {}
    session: SessionManager | None = None
    # At least 300 appends, and on until the killer has struck often enough and enough appends
    # were acknowledged between its strikes (a loaded machine schedules the two threads unevenly);
    # bounded in time either way.
    deadline = time.monotonic() + 120
    number = -1
    try:
        while number < 299 or (
            (terminations <= 20 or len(acknowledged) <= 150) and time.monotonic() < deadline
        ):
            number += 1
            try:
                if session is None:
                    session = SessionManager.open(path, storage=pg_store)
                acknowledged.append(
                    session.append_message({"role": "user", "content": f"m{number}", "timestamp": number})
                )
            except SessionError as exc:
                failures += 1  # not acknowledged: start over with a fresh writer
                kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
                if session is not None:
                    session.close()
                session = None
    finally:
        stop.set()
        thread.join()
        if session is not None:
            session.close()
    assert terminations > 20, kinds
    ids = stored_ids(pg_store, path)
    assert set(acknowledged) <= set(ids), f"{failures} failures"
    assert len(ids) == len(set(ids))
    assert len(acknowledged) > 150
