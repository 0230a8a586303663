"""ENOSPC and failing renames: the original file stays intact and the error is clear."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session import PersistenceError, SessionManager

V1 = Path(__file__).resolve().parents[1] / "conformance" / "load" / "v1-linear-compaction-index.jsonl"


def _fail_writes_after(monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] > allowed:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", failing_write)


@pytest.mark.parametrize("allowed", [0, 1, 3])
def test_enospc_during_migration_rewrite_keeps_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: int
) -> None:
    path = tmp_path / "old.jsonl"
    shutil.copyfile(V1, path)
    original = path.read_bytes()
    session = SessionManager.open(path)
    entries_before = session.get_entries()
    _fail_writes_after(monkeypatch, allowed)
    with pytest.raises(PersistenceError, match=r"old\.jsonl: write failed: .*No space left"):
        session.append_message({"role": "user", "content": "x", "timestamp": 1})
    monkeypatch.undo()
    assert path.read_bytes() == original
    assert not list(tmp_path.glob(".*.tmp"))
    assert session.get_entries() == entries_before  # memory did not run ahead of the disk
    session.append_message({"role": "user", "content": "x", "timestamp": 1})  # works once space is back
    session.close()
    assert SessionManager.open(path, read_only=True).get_header()["version"] == 3


def test_enospc_on_append_keeps_memory_and_disk_in_step(
    session_file: Callable[[], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = session_file()
    session = SessionManager.open(path)
    original = path.read_bytes()
    leaf = session.get_leaf_id()
    _fail_writes_after(monkeypatch, 0)
    with pytest.raises(PersistenceError, match="No space left"):
        session.append_message({"role": "user", "content": "lost?", "timestamp": 1})
    monkeypatch.undo()
    assert path.read_bytes() == original
    assert session.get_leaf_id() == leaf and len(session.get_entries()) == 1


def test_failing_rename_keeps_original_and_removes_temp(
    session_file: Callable[[], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = session_file()
    session = SessionManager.open(path)
    original = path.read_bytes()

    def failing_replace(src: Any, dst: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(PersistenceError, match="Invalid cross-device link"):
        session.set_session_name("renamed")
    monkeypatch.undo()
    assert path.read_bytes() == original
    assert not list(path.parent.glob(".*.tmp"))
    session.set_session_name("renamed")
    session.close()
    assert SessionManager.open(path, read_only=True).get_session_name() == "renamed"


def test_rewrite_preserves_file_mode(session_file: Callable[[], Path]) -> None:
    path = session_file()
    os.chmod(path, 0o600)
    with SessionManager.open(path) as session:
        session.set_session_name("private")
    assert path.stat().st_mode & 0o777 == 0o600


def test_partial_write_then_enospc_never_glues_the_next_entry(
    session_file: Callable[[], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = session_file()
    session = SessionManager.open(path)
    real_write = os.write
    calls = {"n": 0}

    def half_then_fail(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(PersistenceError):
        session.append_message({"role": "user", "content": "torn", "timestamp": 1})
    monkeypatch.undo()
    kept = session.append_message({"role": "user", "content": "kept", "timestamp": 2})
    session.close()
    reloaded = SessionManager.open(path, read_only=True)
    assert reloaded.get_leaf_id() == kept
    assert [i.reason for i in reloaded.get_load_issues() if i.skipped] == ["malformed JSON"]
