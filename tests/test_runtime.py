"""The manager's seams: clock, id sources, agent directory and caches come from one Runtime."""

from __future__ import annotations

import json
from pathlib import Path

from omp_session import Runtime, SessionManager, Tuning


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


def _assistant() -> dict[str, object]:
    return {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2}


def test_a_fixed_runtime_makes_sessions_reproducible(tmp_path: Path) -> None:
    def build(directory: Path) -> list[str]:
        runtime = Runtime.fixed(1_750_000_000_000, seed=7, agent_dir=tmp_path / "agent", breadcrumbs=False)
        session = SessionManager.create("/work", directory, runtime=runtime)
        first = session.append_message(_user("hi"))
        session.append_message(_assistant())
        session.branch_with_summary(first, "went another way")
        session.create_branched_session(first)
        path = Path(str(session.get_session_file()))
        session.close()
        return [path.name, *path.read_text().replace(str(directory), "<dir>").splitlines()]

    one, two = build(tmp_path / "a"), build(tmp_path / "b")
    assert one == two
    header = json.loads(one[1])
    assert header["timestamp"].startswith("2025-06-15T15:")
    assert not (tmp_path / "agent" / "terminal-sessions").exists()  # breadcrumbs off


def test_the_agent_directory_holds_blobs_and_breadcrumbs(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    runtime = Runtime(agent_dir=agent)
    session = SessionManager.in_memory("/work", runtime=runtime)
    info = session.put_blob(b"image bytes")
    assert Path(info.path).parent == agent / "blobs"
    assert runtime.terminal_sessions_dir() == agent / "terminal-sessions"


def test_the_offset_index_cache_can_be_switched_off(tmp_path: Path, isolated_agent_dir: Path) -> None:
    session = SessionManager.create("/work", tmp_path)
    for number in range(3000):  # past the size from which open() builds an offset index
        session.append_message(_user(f"message {number} " + "x" * 100))
    session.append_message(_assistant())
    path = str(session.get_session_file())
    session.close()
    cache = isolated_agent_dir / "cache" / "offsets"
    SessionManager.open(path, read_only=True, runtime=Runtime(offset_index=False)).close()
    assert not cache.exists()
    SessionManager.open(path, read_only=True).close()
    assert any(cache.iterdir())


def test_the_tuning_of_the_runtime_reaches_the_open_of_a_file(
    tmp_path: Path, isolated_agent_dir: Path
) -> None:
    # A small file is loaded in full by default; with a threshold of 0 the same open indexes it
    # (nothing patched: the threshold comes with the runtime, down to the file storage's open).
    session = SessionManager.create("/work", tmp_path)
    session.append_message(_user("a small session"))
    session.append_message(_assistant())
    path = str(session.get_session_file())
    session.close()
    cache = isolated_agent_dir / "cache" / "offsets"
    SessionManager.open(path, read_only=True).close()
    assert not cache.exists() or not any(cache.iterdir())
    indexing = Runtime(tuning=Tuning(min_indexed_bytes=0))
    with SessionManager.open(path, read_only=True, runtime=indexing) as opened:
        assert [entry["message"]["role"] for entry in opened.get_entries()] == ["user", "assistant"]
    assert any(cache.iterdir())
