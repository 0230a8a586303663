from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from omp_session import SessionManager

REPO = Path(__file__).resolve().parents[2]


def start_child(*args: str, stdin: bool = False) -> subprocess.Popen[bytes]:
    """Start ``python -m tests.durability.children ARGS`` from the repository root."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.durability.children", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def kill_after(child: subprocess.Popen[bytes], lines: int, delay: float) -> list[str]:
    """Read ``lines`` acknowledgements, wait ``delay`` s, SIGKILL; return every complete line printed."""
    assert child.stdout is not None
    seen = [child.stdout.readline() for _ in range(lines)]
    if delay:
        time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    rest = child.stdout.read()
    child.wait()
    text = b"".join(seen) + rest
    return [line.decode() for line in text.split(b"\n")[:-1]]  # a partial last line is not acknowledged


@pytest.fixture
def session_file(tmp_path: Path) -> Callable[[], Path]:
    def make() -> Path:
        with SessionManager.create("/work/project", tmp_path) as session:
            session.append_message({"role": "user", "content": "first", "timestamp": 0})
            session.ensure_on_disk()
            path = session.get_session_file()
        assert path is not None
        return Path(path)

    return make
