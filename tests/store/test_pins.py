"""Pinned sessions (omp 18): lenient reading, lost-update-free toggles, pinned first in omp 18 listings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from omp_session import SessionManager
from omp_session.store.pins import load_pinned_session_ids, pins_path, sort_pinned_first, toggle_session_pin


def test_missing_or_damaged_pins_are_no_pins(tmp_path: Path) -> None:
    assert load_pinned_session_ids(tmp_path) == set()
    for content in ("not json", '{"a": 1}', "", "null"):
        pins_path(tmp_path).write_text(content)
        assert load_pinned_session_ids(tmp_path) == set()
    pins_path(tmp_path).write_text('["a", 1, null, "b"]')
    assert load_pinned_session_ids(tmp_path) == {"a", "b"}


def test_toggle_pins_and_unpins_and_writes_omp_s_format(tmp_path: Path) -> None:
    assert toggle_session_pin("s1", tmp_path) is True
    assert toggle_session_pin("s2", tmp_path) is True
    assert pins_path(tmp_path).read_text() == json.dumps(["s1", "s2"], indent="\t")
    assert toggle_session_pin("s1", tmp_path) is False
    assert load_pinned_session_ids(tmp_path) == {"s2"}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_concurrent_toggles_from_processes_lose_nothing(tmp_path: Path) -> None:
    script = "import sys; from pathlib import Path; from omp_session.store.pins import toggle_session_pin\n"
    script += "for n in range(20): toggle_session_pin(f'{sys.argv[1]}-{n}', Path(sys.argv[2]))\n"
    workers = [
        subprocess.Popen([sys.executable, "-c", script, f"w{number}", str(tmp_path)]) for number in range(6)
    ]
    deadline = time.monotonic() + 120
    for worker in workers:
        assert worker.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
    assert load_pinned_session_ids(tmp_path) == {f"w{w}-{n}" for w in range(6) for n in range(20)}


def _session(directory: Path, text: str, mtime: int) -> str:
    session = SessionManager.create("/work/app", directory, dialect="13")
    session.append_message({"role": "user", "content": text, "timestamp": 1})
    session.append_message(
        {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2}
    )
    path, session_id = str(session.get_session_file()), session.get_session_id()
    session.close()
    os.utime(path, (mtime, mtime))
    return session_id


def test_omp_18_lists_pinned_sessions_first_and_13_does_not(tmp_path: Path, isolated_agent_dir: Path) -> None:
    old, middle, new = (
        _session(tmp_path, text, mtime) for text, mtime in (("a", 1000), ("b", 2000), ("c", 3000))
    )
    toggle_session_pin(old)  # the configured agent directory, as omp's resume picker reads it
    toggle_session_pin("a-deleted-session")  # unknown ids change nothing
    assert pins_path() == isolated_agent_dir / "session-pins.json"
    assert [i.id for i in SessionManager.list("/work/app", tmp_path, dialect="18")] == [old, new, middle]
    assert [i.id for i in SessionManager.list("/work/app", tmp_path, dialect="13")] == [new, middle, old]
    assert [i.id for i in SessionManager.list("/work/app", tmp_path)] == [new, middle, old]


def test_sort_keeps_each_group_in_order() -> None:
    class Info:
        def __init__(self, session_id: str) -> None:
            self.id = session_id

    infos = [Info(name) for name in "abcde"]
    assert [i.id for i in sort_pinned_first(infos, {"d", "b"})] == ["b", "d", "a", "c", "e"]
    assert sort_pinned_first(infos, set()) == infos
