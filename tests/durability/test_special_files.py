"""The special-file rule (issue 25 item 2): a FIFO, a socket, a device or a directory named
``*.jsonl`` is refused or skipped by every path that opens a file, and never opened blocking.

Each kind is made inside a project directory of the sessions root (beside a real session), inside
the foreign agents' stores, and as the SESSION argument itself; then every factory and every
command runs under a watchdog (``SIGALRM``, which interrupts a blocking ``open``), and must finish
without a traceback: refusing the special file (an error naming it) or skipping it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from omp_session import SessionManager
from omp_session.cli import main
from omp_session.errors import SessionError
from omp_session.tools import listing
from omp_session.web.app import create_app
from tests.helpers import HEADER, assistant, msg, user, write_session
from tests.web.support import serving

KINDS = ["fifo", "socket", "device", "directory"]
#: Seconds any one call may take (the FIFO hang this guards against is forever).
WATCHDOG = 20


class Hung(Exception):
    pass


@contextlib.contextmanager
def watchdog(what: str) -> Iterator[None]:
    def expire(_signal: int, _frame: FrameType | None) -> None:
        raise Hung(f"{what} did not finish within {WATCHDOG} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(WATCHDOG)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def make_special(path: Path, kind: str, keep: list[socket.socket]) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        here = os.getcwd()
        os.chdir(path.parent)  # a relative name: socket paths are limited to 107 bytes
        try:
            server.bind(path.name)
        finally:
            os.chdir(here)
        server.listen(1)
        keep.append(server)
    elif kind == "device":
        path.symlink_to("/dev/zero")  # reads forever if it is read as a file
    else:
        path.mkdir()
        (path / "inside.jsonl").write_bytes(b"")


@pytest.fixture
def keep_sockets() -> Iterator[list[socket.socket]]:
    sockets: list[socket.socket] = []
    yield sockets
    for server in sockets:
        server.close()


class Layout:
    """A sessions root with one real session and special files around it, and foreign stores."""

    def __init__(self, base: Path, kind: str, keep: list[socket.socket]) -> None:
        self.root = base / "agent" / "sessions"
        self.project = self.root / "-work-proj"
        self.session = write_session(
            self.project / "2025-06-02T14-00-00-000Z_sess-1.jsonl",
            [msg("u1", None, user("hello")), msg("a1", "u1", assistant("hi there"))],
            header={**HEADER, "cwd": "/work/proj"},
        )
        self.special = self.project / "2099-01-01T00-00-00-000Z_zz-special.jsonl"
        make_special(self.special, kind, keep)
        make_special(self.root / "at-the-root.jsonl", kind, keep)
        self.claude = base / "claude"
        self.codex = base / "codex"
        self.pi = base / "pi"
        (self.claude / "projects" / "-work-proj").mkdir(parents=True)
        make_special(self.claude / "projects" / "-work-proj" / "t.jsonl", kind, keep)
        (self.codex / "sessions" / "2025" / "10" / "02").mkdir(parents=True)
        make_special(self.codex / "sessions" / "2025" / "10" / "02" / "rollout-x.jsonl", kind, keep)
        (self.pi / "sessions" / "-work-proj").mkdir(parents=True)
        make_special(self.pi / "sessions" / "-work-proj" / "p.jsonl", kind, keep)


@pytest.fixture(params=KINDS)
def layout(request: pytest.FixtureRequest, tmp_path: Path, keep_sockets: list[socket.socket]) -> Layout:
    return Layout(tmp_path, str(request.param), keep_sockets)


def outcome(call: Callable[[], Any]) -> str:
    """``ok`` or the library's error for a refused file; anything else (a hang, a foreign
    exception) fails the test."""
    try:
        call()
    except SessionError as error:
        return f"refused: {error}"
    return "ok"


def test_every_factory_refuses_or_skips_special_files(layout: Layout) -> None:
    special = str(layout.special)
    calls: dict[str, Callable[[], Any]] = {
        "create (auto dialect probes the directory)": lambda: SessionManager.create(
            "/work/proj", session_dir=layout.project
        ).close(),
        "create + ensure_on_disk": lambda: _create_on_disk(layout.project),
        "open(special)": lambda: SessionManager.open(special).close(),
        "open(special, read_only)": lambda: SessionManager.open(special, read_only=True).close(),
        "open(session)": lambda: SessionManager.open(layout.session).close(),
        "continue_recent": lambda: SessionManager.continue_recent("/work/proj", layout.project).close(),
        "fork_from(special)": lambda: SessionManager.fork_from(special, "/work/proj", layout.project).close(),
        "fork_from(session)": lambda: SessionManager.fork_from(
            layout.session, "/work/proj", layout.project
        ).close(),
        "list": lambda: SessionManager.list("/work/proj", layout.project),
        "list_all": lambda: listing.list_all_sessions(layout.root),
        "list_store": lambda: listing.list_store(layout.root),
        "find_most_recent_session": lambda: listing.find_most_recent_session(layout.project),
    }
    for name, call in calls.items():
        with watchdog(name):
            result = outcome(call)
        if "(special" in name:
            assert result.startswith("refused") and special in result, (name, result)
        else:
            assert result == "ok", (name, result)


def _create_on_disk(directory: Path) -> None:
    session = SessionManager.create("/work/proj", session_dir=directory)
    session.ensure_on_disk()
    session.close()


def commands(layout: Layout) -> list[list[str]]:
    session, special = str(layout.session), str(layout.special)
    return [
        ["list"],
        ["list", "--all"],
        ["list", "--all", "--json"],
        ["show", session],
        ["show", special],
        ["tree", special],
        ["context", special],
        ["export", special, "-f", "md"],
        ["export", session, "-f", "html", "-o", str(layout.root.parent / "out.html")],
        ["stats", special],
        ["stats", "--all"],
        ["usage", "daily", "--all"],
        ["search", "--all", "hello"],
        ["check", special],
        ["check", "--all"],
        ["repair", special],
        ["migrate", "--all", "--dry-run"],
        ["fork", session],
        ["fork", special],
        ["label", special, "u1", "x"],
        ["import", "claude", str(layout.claude)],
        ["import", "codex", str(layout.codex)],
        ["import", "pi", str(layout.pi)],
        ["import", "claude", "--all"],
        ["import", "codex", "--all"],
        ["import", "pi", "--all"],
    ]


def test_every_command_refuses_or_skips_special_files(
    layout: Layout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(layout.claude))
    monkeypatch.setenv("CODEX_HOME", str(layout.codex))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(layout.root.parent))  # pi --all: the agent dir
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in commands(layout):
        with watchdog(" ".join(args)):
            result = runner.invoke(main, ["--dir", str(layout.root), *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output, (
            args,
            result.output,
        )
        if str(layout.special) in args:
            assert result.exit_code == 2, (args, result.output)
            assert str(layout.special) in result.output, (args, result.output)
        else:
            assert result.exit_code in (0, 1), (args, result.output)


def _status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=WATCHDOG) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def test_the_viewer_skips_special_files(layout: Layout) -> None:
    name = quote(layout.special.relative_to(layout.root).as_posix())
    with serving(create_app(layout.root)) as base:
        status, index = _status(base + "/")
        assert status == 200 and "hello" in index
        assert _status(base + "/?q=hello")[0] == 200
        assert _status(f"{base}/session/{name}")[0] in (404, 422)
        assert _status(f"{base}/export/{name}")[0] in (404, 422)
        assert _status(f"{base}/api/version/{name}")[0] in (404, 422)


def test_push_skips_special_files(layout: Layout) -> None:
    from omp_session.tools.sync import local_session_files

    with watchdog("local_session_files"):
        files = local_session_files(layout.root)
    assert layout.session in files and layout.special not in files
    shutil.rmtree(layout.claude)  # not needed here
