"""``omp-session serve`` and ``make run``'s entry point, as real processes where it matters."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from omp_session.cli import main
from omp_session.web.run_default import SAMPLES, choose_root
from omp_session.web.server import allowed_hosts_for, viewer_url

from .support import free_port


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> bytes:
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bytes(response.read())
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_serve_command_serves_a_directory_on_localhost(tmp_path: Path) -> None:
    port = free_port()
    code = "from omp_session.cli import main; main()"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--dir", str(SAMPLES / "sessions"), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        page = _wait_for(f"http://127.0.0.1:{port}/", process)
        assert b"Flaky payment webhook test" in page
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=10)
    assert f"http://127.0.0.1:{port}/" in err.decode()


def test_serve_help_and_defaults() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--dir", "--host", "--port", "--open", "--blobs"):
        assert option in result.output
    assert "[default: 127.0.0.1]" in result.output and "[default: 8765" in result.output
    missing = CliRunner().invoke(main, ["serve", "--dir", "/nonexistent/sessions"])
    assert missing.exit_code == 2 and "no such directory" in missing.output


def test_urls_and_host_names() -> None:
    assert viewer_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/"
    assert viewer_url("0.0.0.0", 80) == "http://127.0.0.1:80/"
    assert viewer_url("::1", 9) == "http://[::1]:9/"
    assert "127.0.0.1" in allowed_hosts_for("127.0.0.1") and "*" not in allowed_hosts_for("127.0.0.1")
    assert allowed_hosts_for("0.0.0.0") == ["*"]


def test_make_run_uses_the_samples_until_there_are_sessions(isolated_agent_dir: Path) -> None:
    root, blobs, why = choose_root()
    assert (root, blobs) == (SAMPLES / "sessions", SAMPLES / "blobs") and "samples" in why
    project = isolated_agent_dir / "sessions" / "-work"
    project.mkdir(parents=True)
    (project / "notes.jsonl").write_text("not a session\n")
    assert choose_root()[0] == SAMPLES / "sessions"
    (project / "s.jsonl").write_text(
        '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
    )
    root, blobs, why = choose_root()
    assert (root, blobs) == (
        isolated_agent_dir / "sessions",
        isolated_agent_dir / "blobs",
    ) and why == "your omp sessions"


def test_a_busy_port_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--dir", str(tmp_path), "--port", str(port)])
    assert result.exit_code == 2
    message = f"port {port} on 127.0.0.1 is already in use; pick another with --port (0: any free one)"
    assert result.stderr.splitlines() == [f"omp-session: error: {message}"]
    assert "http://" not in result.output  # no URL announced for a server that never ran
