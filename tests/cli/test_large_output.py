"""``show`` and ``tree`` through their own line writer (issue 12 #6), as a user sees them.

Session text is printed as written (never parsed as rich markup), a terminal gets the same text
with colours, tool output is cut at the terminal's edge unless ``--full``, and ``tree`` fits lines
of wide characters by their cells.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from omp_session import SessionManager

from .conftest import Store, run
from .sessions import assistant, text, tool_call, tool_result

ANSI = re.compile(r"\x1b\[[0-9;]*m")
MARKUP = "[bold]x[/bold] and [red]y[/red] :smile:"
LONG_OUTPUT = " ".join(f"word{number}" for number in range(60))  # one line of about 430 characters


def _session(directory: Path) -> Path:
    with SessionManager.create("/home/x/app", directory) as session:
        session.append_message({"role": "user", "content": MARKUP, "timestamp": 1})
        session.append_message(assistant(text("Reading."), tool_call("c1", "read", path="a.txt")))
        session.append_message(tool_result("c1", "read", f"{LONG_OUTPUT}\nsecond line"))
        session.append_message({"role": "user", "content": "数据ファイル " * 30, "timestamp": 4})
        path = session.get_session_file()
    assert path is not None
    return Path(path)


@pytest.fixture
def session(store: Store) -> Path:
    return _session(store.root / "-app")


def test_session_text_is_printed_as_written_never_as_markup(session: Path) -> None:
    out = run("show", str(session)).stdout
    assert MARKUP in out


def test_a_terminal_gets_the_same_text_with_colours(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = run("show", str(session)).stdout
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR")
    coloured = run("show", str(session), "--no-pager").stdout
    assert "\x1b[1;32m" in coloured  # the user header, bold green
    assert ANSI.sub("", coloured) == plain
    assert MARKUP in ANSI.sub("", coloured)


def test_tool_output_is_cut_at_the_edge_and_full_shows_it_wrapped(session: Path) -> None:
    lines = run("show", str(session)).stdout.splitlines()
    cut = next(line for line in lines if "word0 " in line)
    assert cut.startswith("    word0 word1") and cut.endswith("…") and len(cut) == 100
    assert "    second line" in lines
    full = run("show", str(session), "--full").stdout
    # Every line fits, but the session's path, which stays whole (the terminal folds it): how long it
    # is depends on the temporary directory.
    fitted = [line for line in full.splitlines() if not line.startswith(str(session))]
    assert "word59" in full and all(cell_len(line) <= 100 for line in fitted)


def test_tree_fits_wide_characters_by_their_cells(session: Path) -> None:
    for width in (30, 50, 80):
        lines = run("tree", str(session), "--width", str(width)).stdout.splitlines()
        assert lines and all(cell_len(line) <= width for line in lines), (width, lines)
        leaf = lines[-1]
        assert leaf.endswith("◀ leaf") and "user: 数据" in leaf and "…" in leaf


def test_no_bell_or_backspace_from_a_session_reaches_the_terminal(store: Store) -> None:
    with SessionManager.create("/home/x/app", store.root / "-bell") as session:
        session.append_message({"role": "user", "content": "ring\x07 the\x08 bell", "timestamp": 1})
        session.append_message(assistant(text("Rung.")))  # omp writes the file from the first reply
        path = Path(str(session.get_session_file()))
    for command in ("show", "tree"):
        out = run(command, str(path)).stdout
        assert "ring the bell" in out and "\x07" not in out and "\x08" not in out


def test_a_command_leaves_its_objects_to_the_operating_system_at_exit(session: Path) -> None:
    """The shutdown collection skips what a command loaded (``gc.freeze`` at exit): a hook that
    runs after the command's own finds the objects frozen, and the output is whole."""
    import subprocess
    import sys

    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'frozen={gc.get_freeze_count() > 0}'))\n"
        "from omp_session.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "show", "--no-pager", str(session)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stderr == "frozen=True"
    assert "数据ファイル" in done.stdout and done.stdout.startswith("Session ")
