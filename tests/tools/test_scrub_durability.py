"""secrets scrub --apply under SIGKILL and beside a live writer: the file is the old one or the new
one, never a mix, and a session another process is writing is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from omp_session.format.codec import encode_line
from omp_session.tools.redaction import Redactor
from omp_session.tools.session_redaction import plan_scrub

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _big_session(path: Path, entries: int) -> bytes:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "01a22ce0-b922-758a-b129-cd931c64c0aa",
            "timestamp": "2026-11-30T10:00:00.000Z",
            "cwd": "/src/app",
        }
    ]
    parent = None
    for n in range(entries):
        token = f"ghp_{n:06d}" + "Ab3dEf7Gh9" * 3
        text = f"step {n}: " + ("plain words " * 40) + (f"export GITHUB_TOKEN={token}" if n % 3 == 0 else "")
        entry_id = f"{n:08x}"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-11-30T10:00:00.000Z",
                "message": {"role": "user", "content": text, "timestamp": n},
            }
        )
        parent = entry_id
    data = b"".join(encode_line(line) for line in lines)
    path.write_bytes(data)
    return data


def _scrub(root: Path, path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "omp_session",
            "--dir",
            str(root),
            "secrets",
            "scrub",
            str(path),
            "--apply",
            "--no-omp-config",
        ],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_kill_at_any_point_leaves_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = root / "-src-app" / "2026-11-30T10-00-00-000Z_01a22ce0b922758ab129cd931c64c0aa.jsonl"
    path.parent.mkdir(parents=True)
    old = _big_session(path, 500)
    new, changed = plan_scrub(old, Redactor())
    assert changed and new != old
    started = time.monotonic()
    child = _scrub(root, path)
    assert child.wait(timeout=120) == 0
    duration = time.monotonic() - started
    assert path.read_bytes() == new  # an uninterrupted scrub writes exactly the planned bytes
    outcomes: set[bool] = set()
    # From interpreter start-up, through planning and writing the temporary file, past the rename;
    # on a loaded machine a run can take longer than the timed one, so the kills move on until they
    # have landed on both sides of the rename (or the attempts run out).
    fractions = [0.3 + 0.95 * step / 5 for step in range(6)]
    attempts = 0
    while fractions and attempts < 14:
        fraction = fractions.pop(0)
        attempts += 1
        path.write_bytes(old)
        child = _scrub(root, path)
        time.sleep(duration * fraction)
        child.send_signal(signal.SIGKILL)
        child.wait()
        now = path.read_bytes()
        assert now in (old, new), f"kill {attempts}: a mix of the old and the new file"
        outcomes.add(now == new)
        if not fractions and True not in outcomes:
            fractions.append(fraction * 1.6)
        elif not fractions and False not in outcomes:
            fractions.append(fraction / 2)
    assert outcomes == {True, False}


def test_a_session_with_a_live_writer_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = root / "-src-app" / "2026-11-30T10-00-00-000Z_01a22ce0b922758ab129cd931c64c0aa.jsonl"
    path.parent.mkdir(parents=True)
    _big_session(path, 10)
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from omp_session import SessionManager\n"
            f"m = SessionManager.open({str(path)!r})\n"
            "m.append_message({'role': 'user', 'content': 'live', 'timestamp': 1})\n"
            "print('ready', flush=True); sys.stdin.read()",
        ],
        cwd=REPO,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == b"ready"
        before = path.read_bytes()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "omp_session",
                "--dir",
                str(root),
                "secrets",
                "scrub",
                str(path),
                "--apply",
            ],
            cwd=REPO,
            env=ENV,
            capture_output=True,
            timeout=120,
        )
        assert result.returncode == 1
        assert b"refused" in result.stderr
        assert path.read_bytes() == before
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        writer.wait(timeout=30)
    # Once the writer is gone the scrub goes through.
    result = subprocess.run(
        [sys.executable, "-m", "omp_session", "--dir", str(root), "secrets", "scrub", str(path), "--apply"],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert b"ghp_" not in path.read_bytes()
    assert json.loads(path.read_bytes().split(b"\n")[-2])["message"]["content"] == "live"
