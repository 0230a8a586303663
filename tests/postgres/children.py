"""Child processes for the PostgreSQL writer tests: ``python -m tests.postgres.children MODE DSN
TABLE PATH``. Each prints one line per acknowledged operation, flushed as soon as the call returned.
"""

from __future__ import annotations

import sys
import time

from omp_session import SessionLockedError, SessionManager
from omp_session.store.postgres import PostgresStorage


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def open_when_free(store: PostgresStorage, path: str, seconds: float = 30) -> SessionManager:
    """Open for writing, waiting while another writer holds the lock: a killed writer's lock goes
    when the server notices its connection is gone, or its last statement ends."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return SessionManager.open(path, storage=store)
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def append_forever(store: PostgresStorage, path: str) -> None:
    session = open_when_free(store, path)
    number = 0
    while True:
        _say(session.append_message({"role": "user", "content": f"message {number}", "timestamp": number}))
        number += 1


def hold(store: PostgresStorage, path: str) -> None:
    session = SessionManager.open(path, storage=store)
    _say("locked")
    sys.stdin.read()  # until the parent closes our stdin
    session.close()


def try_open(store: PostgresStorage, path: str) -> None:
    try:
        SessionManager.open(path, storage=store).close()
        _say("opened")
    except SessionLockedError as exc:
        _say(f"locked by {exc.holder_pid}")


MODES = {"append": append_forever, "hold": hold, "try-open": try_open}

if __name__ == "__main__":
    mode, dsn, table, path = sys.argv[1:5]
    MODES[mode](PostgresStorage(dsn, table), path)
