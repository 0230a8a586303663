"""Another program replaces, truncates or edits the file we hold (issue 11, items 1 and 3).

The "other program" is a real process (``cp``/``mv``, ``truncate``, a Python one-liner); the
writer under test is a real child process too where the lost appends happened.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from omp_session import SessionChangedError, SessionManager

from .conftest import start_child


def _command(child: subprocess.Popen[bytes]) -> str:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b"go\n")
    child.stdin.flush()
    return child.stdout.readline().decode().strip()


def _replace_by_copy(path: Path) -> None:
    # What an editor or a sync tool does: write a copy, rename it over the original.
    subprocess.run(["sh", "-c", 'cp "$1" "$1.new" && mv "$1.new" "$1"', "sh", str(path)], check=True)


def _edit_in_place(path: Path, old: bytes, new: bytes, *, keep_mtime: bool) -> None:
    assert len(old) == len(new)
    script = (
        "import os, sys\n"
        "path, old, new, keep = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode(), sys.argv[4] == '1'\n"
        "st = os.stat(path)\n"
        "data = open(path, 'rb').read()\n"
        "with open(path, 'r+b') as f:\n"
        "    f.seek(data.index(old))\n"
        "    f.write(new)\n"
        "if keep:\n"
        "    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(path), old.decode(), new.decode(), "1" if keep_mtime else "0"],
        check=True,
    )


def test_appends_after_a_foreign_rename_replace_are_refused_not_lost(
    session_file: Callable[[], Path],
) -> None:
    path = session_file()
    child = start_child("append-on-command", str(path), stdin=True)
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline() == b"ready\n"
    before = [_command(child) for _ in range(3)]
    _replace_by_copy(path)
    after = [_command(child) for _ in range(5)]
    child.stdin.close()
    child.wait(timeout=30)
    assert after == ["changed"] * 5  # never acknowledged: the path names another file now
    on_disk = [e["id"] for e in SessionManager.open(path, read_only=True).get_entries()]
    assert set(before) <= set(on_disk)
    assert [a for a in before + after if a != "changed"] == before


def test_append_after_a_foreign_truncation_is_refused(session_file: Callable[[], Path]) -> None:
    path = session_file()
    session = SessionManager.open(path)
    session.append_message({"role": "user", "content": "second", "timestamp": 1})
    header_only = path.read_bytes().split(b"\n")[0] + b"\n"
    subprocess.run(["truncate", "-s", str(len(header_only)), str(path)], check=True)
    leaf = session.get_leaf_id()
    with pytest.raises(SessionChangedError, match="truncated"):
        session.append_message({"role": "user", "content": "into the void?", "timestamp": 2})
    assert path.read_bytes() == header_only  # nothing written after the truncation
    assert session.get_leaf_id() == leaf
    session.close()


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["mtime-changed", "mtime-restored"])
def test_same_size_in_place_edit_after_our_append_blocks_a_rewrite(
    session_file: Callable[[], Path], keep_mtime: bool
) -> None:
    path = session_file()
    session = SessionManager.open(path)
    session.append_message({"role": "user", "content": "ours", "timestamp": 1})
    _edit_in_place(path, b'"content":"first"', b'"content":"FIRST"', keep_mtime=keep_mtime)
    edited = path.read_bytes()
    with pytest.raises(SessionChangedError, match="changed on disk"):
        session.set_session_name("would overwrite the edit")
    assert path.read_bytes() == edited
    session.close()


def test_same_size_edit_before_our_append_still_blocks_a_rewrite(session_file: Callable[[], Path]) -> None:
    path = session_file()
    session = SessionManager.open(path)
    _edit_in_place(path, b'"content":"first"', b'"content":"FIRST"', keep_mtime=True)
    session.append_message({"role": "user", "content": "ours", "timestamp": 1})  # appends stay fine
    edited = path.read_bytes()
    with pytest.raises(SessionChangedError):
        session.set_session_name("would overwrite the edit")
    assert path.read_bytes() == edited
    session.close()


def test_our_own_appends_and_rewrites_never_trip_the_check(session_file: Callable[[], Path]) -> None:
    path = session_file()
    with SessionManager.open(path) as session:
        for number in range(20):
            session.append_message({"role": "user", "content": f"m{number}", "timestamp": number})
            if number % 5 == 0:
                session.set_session_name(f"name {number}")
    reloaded = SessionManager.open(path, read_only=True)
    assert reloaded.get_session_name() == "name 15" and len(reloaded.get_entries()) == 21


def test_a_rewrite_through_a_symlink_rewrites_the_target_and_keeps_the_link(
    session_file: Callable[[], Path], tmp_path: Path
) -> None:
    target = session_file()
    link = tmp_path / "elsewhere" / "link.jsonl"
    link.parent.mkdir()
    link.symlink_to(target)
    with SessionManager.open(link) as session:
        session.set_session_name("through the link")
        session.append_message({"role": "user", "content": "after", "timestamp": 1})
    assert link.is_symlink() and link.resolve() == target.resolve()
    reloaded = SessionManager.open(target, read_only=True)
    assert reloaded.get_session_name() == "through the link" and len(reloaded.get_entries()) == 2
    assert sorted(p.name for p in link.parent.iterdir()) == ["link.jsonl"]
