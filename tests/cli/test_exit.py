"""The console script leaves without tearing down what it loaded (issue 26 item 4): its output is
complete, its exit status is the command's, ``atexit`` hooks still run, and a closed pipe is
reported as Python reports it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SAMPLE = next((Path(__file__).resolve().parents[2] / "samples" / "sessions").rglob("*.jsonl"))
LAUNCH = [sys.executable, "-c", "from omp_session._launcher import main; main()"]


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*LAUNCH, *args], capture_output=True, timeout=120, env={**os.environ, **env}, check=False
    )


def test_the_fast_exit_writes_what_the_ordinary_exit_writes() -> None:
    fast = _run("context", str(SAMPLE))
    full = _run("context", str(SAMPLE), OMP_SESSION_FULL_EXIT="1")
    assert fast.returncode == full.returncode == 0
    assert fast.stdout == full.stdout and len(fast.stdout) > 100
    assert fast.stderr == full.stderr == b""


def test_the_exit_status_and_the_error_line_are_the_commands() -> None:
    fast = _run("show", "/nonexistent/session.jsonl")
    full = _run("show", "/nonexistent/session.jsonl", OMP_SESSION_FULL_EXIT="1")
    assert fast.returncode == full.returncode == 2
    assert fast.stderr == full.stderr and b"error" in fast.stderr


def test_atexit_hooks_still_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = (
        "import atexit, pathlib, sys; "
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes'); "
        "from omp_session._launcher import main; main()"
    )
    done = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, timeout=120)
    assert done.returncode == 0 and b"Usage" in done.stdout
    assert marker.read_text() == "yes"


def test_a_closed_pipe_is_reported_as_python_reports_it() -> None:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [*LAUNCH, "context", str(SAMPLE)], stdout=writer, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(writer)
    assert done.returncode != 0


def test_what_a_command_printed_is_left_to_the_exit() -> None:
    # Not freed when the command returns (the console script ends through ``os._exit``); with the
    # ordinary exit, and in a process that is not the console script, nothing is kept.
    code = (
        "import atexit, sys\n"
        "from omp_session.cli import _common\n"
        "atexit.register(lambda: sys.stderr.write(f'kept={len(_common._LEFT_TO_EXIT or [])}'))\n"
        "from omp_session._launcher import main\n"
        "main()\n"
    )
    for env, kept in (({}, b"kept=1"), ({"OMP_SESSION_FULL_EXIT": "1"}, b"kept=0")):
        done = subprocess.run(
            [sys.executable, "-c", code, "context", str(SAMPLE)],
            capture_output=True,
            timeout=120,
            env={**os.environ, **env},
            check=False,
        )
        assert done.returncode == 0 and done.stdout.startswith(b"{")
        assert done.stderr == kept
    from click.testing import CliRunner

    from omp_session.cli import _common, main

    assert CliRunner().invoke(main, ["context", str(SAMPLE)]).exit_code == 0
    assert _common._LEFT_TO_EXIT is None
