"""What a call writes is what its docstring and docs/api.md ("What each call writes") say.

Each test lists every file and directory under the agent directory and the session directory
before and after the call and compares the difference with the documented one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.store.tuning import DEFAULT_TUNING
from omp_session.tools.listing import list_sessions

ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "text", "text": "hi"}],
    "api": "x",
    "provider": "p",
    "model": "m",
    "stopReason": "stop",
    "timestamp": 2,
}
IMAGE = {"type": "image", "data": "iVBORw0KGgo" * 2000, "mimeType": "image/png"}


def _tree(*roots: Path) -> dict[str, int]:
    """Every path under ``roots`` with its modification time in nanoseconds."""
    return {str(p): p.stat().st_mtime_ns for root in roots if root.exists() for p in root.rglob("*")}


def _changed(before: dict[str, int], after: dict[str, int], base: Path) -> list[str]:
    """Paths (relative to ``base``) created or modified between the two trees, and the deleted ones."""
    changed = [Path(path) for path, mtime in after.items() if before.get(path) != mtime]
    deleted = [Path(path) for path in before if path not in after]
    return sorted(
        [str(path.relative_to(base)) for path in changed]
        + [f"deleted {path.relative_to(base)}" for path in deleted]
    )


@pytest.fixture(autouse=True)
def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMUX_PANE", "%7")  # a terminal id, so breadcrumbs would be written


def test_in_memory_writes_nothing_but_put_blob(isolated_agent_dir: Path, tmp_path: Path) -> None:
    before = _tree(isolated_agent_dir, tmp_path)
    session = SessionManager.in_memory(tmp_path / "project")
    question = session.append_message({"role": "user", "content": [IMAGE], "timestamp": 1})
    session.append_message(ASSISTANT)
    session.save_artifact("output", "bash")
    session.append_label_change(question, "start")
    session.branch_with_summary(question, "summary")
    session.set_session_name("name")
    session.ensure_on_disk()
    session.rewrite_entries()
    assert session.create_branched_session(question) is None and session.fork() is None
    session.new_session()
    session.flush()
    session.close()
    assert _changed(before, _tree(isolated_agent_dir, tmp_path), tmp_path.parent) == []
    blob = SessionManager.in_memory("/p").put_blob(b"bytes")
    assert _changed(before, _tree(isolated_agent_dir, tmp_path), isolated_agent_dir) == [
        "blobs",
        f"blobs/{blob.hash}",
    ]


def _large_session(directory: Path) -> Path:
    with SessionManager.create("/work/project", directory) as session:
        session.append_message(
            {"role": "user", "content": "q" * DEFAULT_TUNING.min_indexed_bytes, "timestamp": 1}
        )
        session.append_message(ASSISTANT)
        return Path(str(session.get_session_file()))


def test_read_only_open_writes_only_the_offset_index_cache(isolated_agent_dir: Path, tmp_path: Path) -> None:
    path = _large_session(tmp_path / "sessions")
    (isolated_agent_dir / "terminal-sessions").rename(tmp_path / "breadcrumbs")  # written by create
    before = _tree(isolated_agent_dir, tmp_path)
    with SessionManager.open(path, read_only=True) as reader:
        assert [m["role"] for m in reader.build_session_context().messages] == ["user", "assistant"]
    changed = _changed(before, _tree(isolated_agent_dir, tmp_path), isolated_agent_dir)
    assert changed[:2] == ["cache", "cache/offsets"] and len(changed) == 3
    assert changed[2].startswith("cache/offsets/") and changed[2].endswith(".idx")
    again = _tree(isolated_agent_dir, tmp_path)
    SessionManager.open(path, read_only=True).close()  # served by the index: nothing to write
    assert _changed(again, _tree(isolated_agent_dir, tmp_path), isolated_agent_dir) == []


def test_read_only_open_of_a_small_file_writes_nothing(isolated_agent_dir: Path, tmp_path: Path) -> None:
    with SessionManager.create("/work/project", tmp_path / "sessions") as session:
        session.append_message(ASSISTANT)
        path = Path(str(session.get_session_file()))
    before = _tree(isolated_agent_dir, tmp_path)
    SessionManager.open(path, read_only=True).close()
    assert _changed(before, _tree(isolated_agent_dir, tmp_path), tmp_path.parent) == []


def test_writable_open_writes_the_breadcrumb(isolated_agent_dir: Path, tmp_path: Path) -> None:
    with SessionManager.create("/work/project", tmp_path / "sessions") as session:
        session.append_message(ASSISTANT)
        path = Path(str(session.get_session_file()))
    (isolated_agent_dir / "terminal-sessions" / "tmux-%7").unlink()
    before = _tree(isolated_agent_dir, tmp_path)
    SessionManager.open(path).close()
    assert _changed(before, _tree(isolated_agent_dir, tmp_path), isolated_agent_dir) == [
        "terminal-sessions",
        "terminal-sessions/tmux-%7",
    ]


def test_listing_writes_only_its_cache(isolated_agent_dir: Path, tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    with SessionManager.create("/work/project", directory) as session:
        session.append_message(ASSISTANT)
    before = _tree(isolated_agent_dir, tmp_path)
    [info] = list_sessions(directory)
    assert info.message_count == 1
    assert _changed(before, _tree(isolated_agent_dir, tmp_path), isolated_agent_dir) == [
        "cache",
        "cache/session-list.sqlite3",
    ]


def test_list_without_a_session_dir_creates_the_project_directory(isolated_agent_dir: Path) -> None:
    before = _tree(isolated_agent_dir)
    assert SessionManager.list("/work/elsewhere") == []
    changed = _changed(before, _tree(isolated_agent_dir), isolated_agent_dir)
    assert "sessions/--work-elsewhere--" in changed
    assert set(changed) <= {"sessions", "sessions/--work-elsewhere--", "cache", "cache/session-list.sqlite3"}
