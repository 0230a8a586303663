"""One writer per session across processes; readers follow a live writer."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from omp_session import SessionLockedError, SessionManager

from .conftest import start_child


def test_second_writer_process_gets_locked_error_naming_the_holder(session_file: Callable[[], Path]) -> None:
    path = session_file()
    holder = start_child("hold", str(path), stdin=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline() == b"opened\n"
    try:
        contender = start_child("hold", str(path), stdin=True)
        out, _ = contender.communicate(timeout=20)
        assert out == f"locked {holder.pid}\n".encode()
        with pytest.raises(SessionLockedError, match=f"locked for writing by process {holder.pid}"):
            SessionManager.open(path)
    finally:
        holder.stdin.write(b"\n")
        holder.stdin.flush()
        holder.wait(timeout=20)
    SessionManager.open(path).close()  # released when the holder closed


def test_lock_is_released_when_the_holder_is_killed(session_file: Callable[[], Path]) -> None:
    path = session_file()
    holder = start_child("hold", str(path), stdin=True)
    assert holder.stdout is not None
    assert holder.stdout.readline() == b"opened\n"
    holder.kill()
    holder.wait()
    SessionManager.open(path).close()  # no stale lock


def test_reader_follows_a_live_writer(session_file: Callable[[], Path]) -> None:
    path = session_file()
    reader = SessionManager.open(path, read_only=True)
    initial = [e["id"] for e in reader.get_entries()]
    writer = start_child("write-many", str(path), "300")
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline:
        seen += [entry["id"] for entry in reader.refresh()]
        time.sleep(0.001)
    assert writer.stdout is not None
    written = writer.stdout.read().decode().split()
    seen += [entry["id"] for entry in reader.refresh()]
    assert seen == written
    assert [e["id"] for e in reader.get_entries()] == initial + written
    assert reader.get_leaf_id() == written[-1]
    assert reader.build_session_context().messages[-1]["content"] == "live 299"


def test_rewrite_refuses_when_another_program_appended(session_file: Callable[[], Path]) -> None:
    # omp itself takes no lock; if it appends behind our back, a rewrite must not discard its line.
    path = session_file()
    session = SessionManager.open(path)
    with open(path, "ab") as foreign:
        foreign.write(b'{"type":"custom","customType":"omp","id":"f1","parentId":null,"timestamp":"x"}\n')
    from omp_session import SessionChangedError

    with pytest.raises(SessionChangedError, match="changed on disk"):
        session.set_session_name("new name")
    assert b'"id":"f1"' in path.read_bytes()
    session.close()
    assert os.path.exists(path)


def test_reader_follows_a_writer_across_a_full_rewrite(session_file: Callable[[], Path]) -> None:
    path = session_file()
    reader = SessionManager.open(path, read_only=True)
    with SessionManager.open(path) as writer:
        first = writer.append_message({"role": "user", "content": "before", "timestamp": 1})
        assert [e["id"] for e in reader.refresh()] == [first]
        writer.set_session_name("renamed")  # a full rewrite: a new inode at the same path
        second = writer.append_message({"role": "user", "content": "after", "timestamp": 2})
    assert [e["id"] for e in reader.refresh()] == [second]
    assert reader.get_session_name() == "renamed"
    assert reader.get_leaf_id() == second
    assert [e["id"] for e in reader.get_entries()] == [
        e["id"] for e in SessionManager.open(path, read_only=True).get_entries()
    ]
