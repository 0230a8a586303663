"""One run of one case of ``bench.compare``, in a fresh interpreter of the side under test.

Only the public API is used (``SessionManager`` and the ``omp-session`` command), which every
commit compared has, so the same code times both sides: a difference in the figures is a
difference in the library. Each case prints ``{"wall": seconds, "cpu": seconds}``; CPU time is
the figure ``bench.compare`` compares, since other work on a shared machine inflates wall time
but not the CPU time of this process (or, for a command, of its child).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.measure import drop_from_page_cache, settle
from omp_session import SessionManager

_MESSAGE = {"role": "user", "content": "a short message of a few words", "timestamp": 1}


def _timed(action: Callable[[], Any]) -> dict[str, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    settle()
    timing = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    del result
    return timing


def _fresh_agent_dir() -> None:
    """An empty agent directory (no offset index, no listing cache) sharing the blobs: the state
    of a first open of a session omp wrote."""
    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    for child in ("cache",):
        shutil.rmtree(agent / child, ignore_errors=True)


def _open_context(path: str) -> int:
    with SessionManager.open(path) as manager:
        return len(manager.build_session_context().messages)


def open_context(path: str, state: str) -> dict[str, float]:
    """``SessionManager.open`` + ``build_session_context``, warm (index built, file cached) or
    cold (no index, file evicted from the page cache)."""
    if state == "cold":
        _fresh_agent_dir()
        drop_from_page_cache(path)
    else:
        _open_context(path)
    return _timed(lambda: _open_context(path))


def after_open(path: str, call: str) -> dict[str, float]:
    """The first walk through ``get_entries()`` or the first ``get_tree()`` after a warm open."""
    _open_context(path)
    with SessionManager.open(path) as manager:
        if call == "tree":
            return _timed(manager.get_tree)
        return _timed(lambda: sum(1 for _ in manager.get_entries()))


def appends(count: int) -> dict[str, float]:
    """``count`` calls of ``append_message`` (a small message), per call."""
    with tempfile.TemporaryDirectory() as directory, SessionManager.create("/bench", directory) as session:
        for _ in range(100):
            session.append_message(_MESSAGE)  # warm up
        timing = _timed(lambda: [session.append_message(_MESSAGE) for _ in range(count)])
    return {key: value / count for key, value in timing.items()}


def listing(directory: str, state: str) -> dict[str, float]:
    """``SessionManager.list`` of one project directory, cold (no listing cache) or warm (a
    second call); ``cold, every field``: cold, with every field of every session read inside the
    timer (a listing may defer what it does not show until it is asked)."""
    if state.startswith("cold"):
        _fresh_agent_dir()
    else:
        SessionManager.list("/bench", directory)
    if state == "cold, every field":
        return _timed(lambda: [info.to_dict() for info in SessionManager.list("/bench", directory)])
    return _timed(lambda: SessionManager.list("/bench", directory))


def command(path: str, name: str) -> dict[str, float]:
    """``omp-session NAME path`` in a child process (output to /dev/null); its CPU time is the
    child's user + system time."""
    argv = [sys.executable, "-c", "from omp_session.cli import main; main()", name]
    argv += ["--no-pager"] if name == "show" else []
    path_bytes = Path(path).read_bytes()  # cached, as a user's recent session is
    del path_bytes
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([*argv, path], stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu}


if __name__ == "__main__":
    case, arguments = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(globals()[case](*arguments)))
