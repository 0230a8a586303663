"""A closed manager is freed by reference counting alone, whichever way its file was opened.

The lazy index once held a view of itself and a strong reference to its owner's method, two
cycles with every loaded entry hanging from them: after ``close()`` only a garbage-collector pass
freed them (0.4 s for 50,000 entries, paid by whatever code ran next, and by every command at exit).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.store._indexed import offsets as offset_index
from omp_session.store.tuning import Tuning
from tests.perf.sessions import is_lazy, opened_cold
from tests.perf.tuned import EVERY_FILE, NO_FILE, open_session


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _session(tmp_path: Path) -> Path:
    manager = SessionManager.create(tmp_path, tmp_path / "sessions")
    for number in range(300):
        manager.append_message({"role": "user", "content": f"question {number}", "timestamp": number})
        manager.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {number}"}],
                "api": "a",
                "provider": "p",
                "model": "m",
                "usage": {"input": 1, "output": 2, "cost": {"total": 0.5}},
                "stopReason": "stop",
                "timestamp": number,
            }
        )
    path = Path(manager.get_session_file() or "")
    manager.close()
    return path


def _use_and_close(path: Path, *, read_only: bool, tuning: Tuning = EVERY_FILE) -> tuple[bool, bool]:
    manager = open_session(path, read_only=read_only, tuning=tuning)
    lazy, cold = is_lazy(manager), opened_cold(manager)
    assert len(manager.get_entries()) >= 600 and manager.get_tree()
    manager.build_session_context()
    manager.get_usage_statistics()
    if not read_only:
        manager.append_message({"role": "user", "content": "one more", "timestamp": 0})
    manager.close()
    return lazy, cold


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("read_only", [False, True])
def test_a_closed_lazy_manager_leaves_nothing_for_the_collector(tmp_path: Path, read_only: bool) -> None:
    path = _session(tmp_path)
    offset_index.index_path(path).unlink(missing_ok=True)
    gc.collect()
    assert _use_and_close(path, read_only=read_only) == (True, True)  # the one-pass cold open
    assert gc.collect() == 0
    assert _use_and_close(path, read_only=read_only) == (True, False)  # through the stored index
    assert gc.collect() == 0


@pytest.mark.usefixtures("collector_off")
def test_a_closed_fully_loaded_manager_leaves_nothing_for_the_collector(
    tmp_path: Path,
) -> None:
    path = _session(tmp_path)
    gc.collect()
    assert _use_and_close(path, read_only=False, tuning=NO_FILE) == (False, False)  # loaded in full
    assert gc.collect() == 0
