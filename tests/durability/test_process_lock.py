"""The writer lock belongs to the process (issue 11, items 2 and 9): managers of one process share
it and may all append; other processes are refused; creating a missing file is atomic under it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from omp_session import SessionChangedError, SessionManager
from omp_session.format.codec import decode_lines
from omp_session.store.blobs import FileBlobStore
from omp_session.store.file import FileStorage

from .conftest import start_child

FOREIGN = '{"type":"session","version":3,"id":"theirs","timestamp":"t","cwd":"/"}'


def _hold_in_child(path: Path) -> str:
    child = start_child("hold", str(path), stdin=True)
    out, _ = child.communicate(b"\n", timeout=30)
    return out.decode().strip()


def test_one_process_may_reopen_its_own_session_and_append_from_both(
    session_file: Callable[[], Path],
) -> None:
    path = session_file()
    first = SessionManager.open(path)
    second = SessionManager.open(path)  # the "reload" pattern: no SessionLockedError
    written = []
    for number in range(50):
        manager = first if number % 2 else second
        written.append(manager.append_message({"role": "user", "content": f"m{number}", "timestamp": number}))
    decoded = decode_lines(path.read_bytes())
    assert not decoded.skipped  # one write per line: nothing interleaved
    assert [record["id"] for record in decoded.records[2:]] == written
    assert _hold_in_child(path).startswith("locked ")  # other processes are still refused
    first.close()
    assert _hold_in_child(path).startswith("locked ")  # the second manager still holds it
    second.append_message({"role": "user", "content": "after the first closed", "timestamp": 99})
    second.close()
    assert _hold_in_child(path) == "opened"  # released with the last manager


def test_a_rewrite_by_one_manager_is_refused_to_another_that_missed_it(
    session_file: Callable[[], Path],
) -> None:
    path = session_file()
    first = SessionManager.open(path)
    second = SessionManager.open(path)
    first.append_message({"role": "user", "content": "by first", "timestamp": 1})
    with pytest.raises(SessionChangedError):
        second.set_session_name("would drop the first manager's entry")
    first.set_session_name("renamed")  # a new inode at the path
    with pytest.raises(SessionChangedError):
        second.append_message({"role": "user", "content": "to the old inode", "timestamp": 2})
    assert _hold_in_child(path).startswith("locked ")  # the lock moved with the rewrite
    first.close()
    second.close()
    reloaded = SessionManager.open(path, read_only=True)
    assert [e["message"]["content"] for e in reloaded.get_entries()] == ["first", "by first"]


def _race_once(path: Path) -> tuple[list[str], list[str]]:
    children = [start_child("create-on-go", str(path), stdin=True) for _ in range(2)]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.flush()
    outputs = [child.communicate(timeout=30)[0].decode().split() for child in children]
    acknowledged = [word for out in outputs for word in out if word != "locked"]
    return acknowledged, [word for out in outputs for word in out if word == "locked"]


@pytest.mark.parametrize("tries", [30])
def test_two_processes_creating_the_same_missing_file_never_both_write(tmp_path: Path, tries: int) -> None:
    lost = 0
    for attempt in range(tries):
        path = tmp_path / f"race-{attempt}.jsonl"
        acknowledged, _locked = _race_once(path)
        on_disk = {e["id"] for e in SessionManager.open(path, read_only=True).get_entries()}
        lost += len(set(acknowledged) - on_disk)
    assert lost == 0


@pytest.mark.slow
def test_creation_race_many_times(tmp_path: Path) -> None:
    test_two_processes_creating_the_same_missing_file_never_both_write(tmp_path, 200)


def test_creating_never_replaces_a_file_that_appeared_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "appears.jsonl"
    storage = FileStorage(path, FileBlobStore(tmp_path / "blobs"))  # nothing at the path yet
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$2" > "$1"', "sh", str(path), FOREIGN], check=True)
    with pytest.raises(SessionChangedError, match="appeared"):
        storage.rewrite([b'{"type":"session","version":3,"id":"mine","timestamp":"t","cwd":"/"}\n'])
    storage.close()
    assert path.read_text() == FOREIGN + "\n"
    assert [p.name for p in tmp_path.iterdir()] == ["appears.jsonl"]
