"""The progress bar of the long commands (issue 30 item 3): drawn on stderr when it is a terminal (a
real pseudo-terminal here), never on a pipe, and never mixed into what the command prints."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from bench.generate import Shape, generate


def _run(args: list[str], *, stderr_terminal: bool) -> tuple[int, bytes, bytes]:
    """Run ``omp-session args`` with stdout on a pipe and stderr on a pseudo-terminal (or a pipe)."""
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    if not stderr_terminal:
        done = subprocess.run(
            [sys.executable, "-m", "omp_session", *args], capture_output=True, env=env, timeout=300
        )
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    seen = bytearray()

    def drain() -> None:  # read as it is drawn: a full terminal buffer would stop the command
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "omp_session", *args], stdout=subprocess.PIPE, stderr=follower, env=env
        )
        os.close(follower)
        stdout, _ = process.communicate(timeout=300)
        reader.join(timeout=10)
    finally:
        os.close(leader)
    return process.returncode, stdout, bytes(seen)


@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("progress") / "sessions"
    path = root / "-w" / "big.jsonl"
    # Thousands of entries: an export renders them block by block (with a bar), and the generator
    # leaves a few tool calls without results on abandoned branches (what `check` reports).
    generate(path, Shape(4_400_000, compaction_every=0))
    return path


def test_export_draws_a_bar_on_a_terminal_only(big_session: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.html"
    root = str(big_session.parents[1])
    code, stdout, terminal = _run(
        ["--dir", root, "export", str(big_session), "-f", "html", "-o", str(out)], stderr_terminal=True
    )
    assert code == 0 and stdout == b""
    assert b"exporting entries" in terminal and b"\x1b[" in terminal  # a drawn, then cleared, bar
    assert b"wrote " in terminal
    first = out.read_bytes()
    code, stdout, piped = _run(
        ["--dir", root, "export", str(big_session), "-f", "html", "-o", str(out)], stderr_terminal=False
    )
    assert code == 0 and stdout == b"" and piped == f"wrote {out}\n".encode()
    assert len(out.read_bytes()) == len(first)  # the bar changes nothing of the output


def test_check_and_migrate_all_draw_a_bar_and_print_their_results_on_stdout(big_session: Path) -> None:
    root = str(big_session.parents[1])
    # (A generated session leaves a few tool calls without results on abandoned branches.)
    code, stdout, terminal = _run(["--dir", root, "check", "--all"], stderr_terminal=True)
    assert code == 1 and b"checking big.jsonl" in terminal and b"problems in 1 of 1 file" in terminal
    assert b"tool-call-without-result" in stdout and b"checking" not in stdout
    code, migrated, terminal = _run(["--dir", root, "migrate", "--all", "--dry-run"], stderr_terminal=True)
    assert code == 0 and b"migrating big.jsonl" in terminal and migrated == b""  # already version 3
    code, piped_out, piped = _run(["--dir", root, "check", "--all"], stderr_terminal=False)
    assert piped_out == stdout and piped.endswith(b" problems in 1 of 1 file\n")
    assert b"checking" not in piped and b"\x1b[" not in piped


def test_the_first_catalog_catch_up_draws_a_bar_on_a_terminal_only(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    for number in range(30):  # enough sessions for a bar, none catalogued yet
        generate(root / "-w" / f"s{number:02d}.jsonl", Shape(4_000, seed=number, compaction_every=0))
    code, stdout, terminal = _run(["--dir", str(root), "usage", "--all", "--json"], stderr_terminal=True)
    assert code == 0 and json.loads(stdout)["view"] == "daily"
    assert b"cataloguing" in terminal and b"\x1b[" in terminal
    code, _stdout, again = _run(["--dir", str(root), "usage", "--all", "--json"], stderr_terminal=True)
    assert code == 0 and b"cataloguing" not in again  # nothing changed: nothing to catch up
    (root / "-w" / "s00.jsonl").unlink()
    for number in range(30, 60):
        generate(root / "-w" / f"s{number:02d}.jsonl", Shape(4_000, seed=number, compaction_every=0))
    code, _stdout, piped = _run(["--dir", str(root), "usage", "--all", "--json"], stderr_terminal=False)
    assert code == 0 and b"cataloguing" not in piped  # a pipe never sees a bar


def test_the_markdown_export_draws_a_bar_on_a_terminal_only(big_session: Path) -> None:
    root = str(big_session.parents[1])
    args = ["--dir", root, "export", str(big_session), "-f", "md"]
    code, markdown, terminal = _run(args, stderr_terminal=True)
    assert code == 0 and markdown.startswith(b"# ") and b"### Assistant" in markdown
    assert b"exporting entries" in terminal and b"\x1b[" in terminal
    assert b"exporting" not in markdown  # stdout holds the document only
    code, piped_markdown, piped = _run(args, stderr_terminal=False)
    assert code == 0 and piped == b"" and piped_markdown == markdown  # the bar changes nothing
