"""``omp-session pick`` under a real terminal (issue 30 #4): tmux runs the real command, keys are
sent with ``send-keys`` and the screen read with ``capture-pane``. A private tmux server per test
(``-S``, its socket in the test's directory), so nothing touches the user's own sessions."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Store, run

OMP_SESSION = Path(sys.executable).parent / "omp-session"
#: Where the screens are kept for a human to look at (beside the browser tests' screenshots).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class Terminal:
    """One tmux server and window running a shell command, 120×30."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.started = 0
        self.name = ""

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def start(self, command: str, env: dict[str, str]) -> None:
        exports = " ".join(f"{name}={value}" for name, value in env.items())
        # COLUMNS and LINES unset: the app must measure the terminal itself.
        shell = f"env -u COLUMNS -u LINES {exports} {command}"
        old = self.name
        self.started += 1
        self.name = f"t{self.started}"
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", self.name, "-x", "120", "-y", "30", shell)
        if old:  # closed after the new one started: a server left without sessions exits (a race)
            self.tmux("kill-session", "-t", old)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def save(self, name: str) -> Path:
        """The screen with its colours kept under test-artifacts/: as captured (ANSI escapes) and
        drawn as an SVG picture (rich's export) to look at."""
        from rich.console import Console
        from rich.text import Text

        ARTIFACTS.mkdir(exist_ok=True)
        screen = self.tmux("capture-pane", "-e", "-p", "-t", self.name)
        (ARTIFACTS / f"{name}.ansi").write_text(screen, encoding="utf-8")
        picture = Console(record=True, width=120, file=io.StringIO(), force_terminal=True)
        picture.print(Text.from_ansi(screen.rstrip("\n")), soft_wrap=True)
        target = ARTIFACTS / f"{name}.svg"
        picture.save_svg(str(target), title="omp-session pick")
        return target

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, text: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on the screen:\n{self.screen()}")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    socket = str(tmp_path / "tmux.sock")  # the server's socket in the test's own directory
    term = Terminal(socket)
    yield term
    subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, check=False)


def _store(store: Store) -> tuple[Path, Path]:
    sort = store.add("v3-branch-summaries", session_id="aaaa0000sort0001")
    labels = store.add("v3-labels", project="-src-lib", session_id="bbbb0000labels01")
    return sort, labels


def _env(store: Store, tmp_path: Path, path: str) -> dict[str, str]:
    return {
        "PI_CODING_AGENT_DIR": str(store.root.parent),
        "PATH": path,
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
    }


def _command(tmp_path: Path) -> str:
    out = tmp_path / "out.txt"
    # stdout captured, as in $(omp-session pick); the exit status is written after it.
    return f"sh -c '{OMP_SESSION} pick > {out}; echo exit=$? >> {out}; sleep 60'"


def _output(tmp_path: Path, timeout: float = 10) -> str:
    out = tmp_path / "out.txt"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if out.exists() and "exit=" in (text := out.read_text()):
            return text
        time.sleep(0.1)
    raise AssertionError("pick did not exit")


def test_type_to_search_preview_and_escape_prints_nothing(
    store: Store, tmp_path: Path, terminal: Terminal
) -> None:
    _store(store)
    terminal.start(_command(tmp_path), _env(store, tmp_path, "/usr/bin:/bin"))
    screen = terminal.wait_for("Type to search")
    # Both sessions listed; the newest highlighted, its transcript in the preview.
    assert "Write a sort function" in screen and "first" in screen
    assert "assistant: B reply" in screen
    lines = screen.splitlines()
    assert len(lines[0]) == 120 and max(len(line) for line in lines) <= 120  # the real size, stdout captured
    # Text of an entry: the catalog's full-text index finds it ("r" typed here is text, no resume).
    terminal.save("picker")
    terminal.keys("merge")
    screen = terminal.wait_for("user: Add a delete method")
    assert "B reply" not in screen
    terminal.save("picker-search")
    terminal.keys("Escape")
    assert _output(tmp_path) == "exit=0\n"  # Escape: nothing chosen, nothing printed


def test_arrows_move_and_enter_prints_that_path(store: Store, tmp_path: Path, terminal: Terminal) -> None:
    sort, _labels = _store(store)
    terminal.start(_command(tmp_path), _env(store, tmp_path, "/usr/bin:/bin"))
    terminal.wait_for("assistant: B reply")
    terminal.keys("Down")
    terminal.wait_for("user: Add a delete method")
    terminal.keys("Enter")
    assert _output(tmp_path) == f"{sort}\nexit=0\n"


def test_r_resumes_with_omp_or_shows_the_command(store: Store, tmp_path: Path, terminal: Terminal) -> None:
    _store(store)
    # No omp on PATH: the command is shown, the picker stays.
    terminal.start(_command(tmp_path), _env(store, tmp_path, "/usr/bin:/bin"))
    terminal.wait_for("assistant: B reply")
    terminal.keys("Tab")  # to the list: there r resumes (typed in the search box it is text)
    time.sleep(0.5)
    terminal.keys("r")
    terminal.wait_for("omp is not on PATH; to resume: omp --resume bbbb0000labels01")
    terminal.keys("Escape")
    _output(tmp_path)
    # A fake omp on PATH records how it was called.
    (tmp_path / "out.txt").unlink()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "omp"
    fake.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "omp-args.txt"}\nexit 3\n')
    fake.chmod(0o755)
    terminal.start(_command(tmp_path), _env(store, tmp_path, f"{bin_dir}:/usr/bin:/bin"))
    terminal.wait_for("assistant: B reply")
    terminal.keys("C-r")
    assert _output(tmp_path) == "exit=3\n"  # omp's own exit status
    assert (tmp_path / "omp-args.txt").read_text() == "--resume bbbb0000labels01\n"


def test_pick_without_a_terminal_is_a_one_line_error(store: Store) -> None:
    _store(store)
    result = run("pick")
    assert result.exit_code == 2
    assert result.stderr == (
        "omp-session: error: pick needs a terminal (stdin and stderr); use `omp-session list` in scripts\n"
    )


def test_tmux_is_installed() -> None:
    assert shutil.which("tmux"), "tmux is needed by the picker tests (.ci/run installs it)"
