"""The wording rows of issue 30, each as the command line prints it at 80 and 120 columns: skipped
files reported once and summarized (``--quiet`` hides them), the same error for the same mistake
in every command, a search that says when ``--limit`` stopped it, ``check`` naming a title line
that is not a slot, the command lists of ``--help`` and the README, the bench generator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from omp_session.cli._cells import cells

from .conftest import Store, assert_one_line_error, run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def width_env(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> int:
    width: int = request.param
    monkeypatch.setenv("COLUMNS", str(width))
    return width


def _with_bad_files(store: Store, count: int = 7) -> None:
    store.add("v3-labels")
    for number in range(count):
        (store.root / "-src-app" / f"bad{number}.jsonl").write_text('{"type":"message"}\n')


@pytest.mark.parametrize("width_env", [80, 120], indirect=True)
@pytest.mark.parametrize("command", [["search", "reply", "--all"], ["stats", "--all"], ["usage", "--all"]])
def test_skipped_files_are_reported_once_summarized(store: Store, width_env: int, command: list[str]) -> None:
    _with_bad_files(store)
    result = run("--dir", str(store.root), *command)
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("omp-session: ")]
    assert notes == [
        "omp-session: skipped 7 files (the first line is not a session header "
        '({"type":"session","id":"…"}); file left untouched): bad0.jsonl, bad1.jsonl, bad2.jsonl and 4 more',
        "omp-session: (--quiet hides these notes; check --all gives every file's problem)",
    ]
    quiet = run("--quiet", "--dir", str(store.root), *command)
    assert quiet.stdout == result.stdout
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("omp-session: ")]
    assert run("-q", "--dir", str(store.root), *command).stderr == quiet.stderr


@pytest.mark.parametrize("width_env", [80, 120], indirect=True)
def test_a_directory_is_a_directory_for_every_command(store: Store, tmp_path: Path, width_env: int) -> None:
    directory = tmp_path / "adir.jsonl"
    directory.mkdir()
    for command in (["show"], ["tree"], ["fork"], ["label", "--clear"]):
        args = [command[0], str(directory), *(["x"] if command[0] == "label" else []), *command[1:]]
        assert_one_line_error(run(*args), f"{directory}: is a directory, not a session file")
    assert list(directory.iterdir()) == []  # nothing written into it


@pytest.mark.parametrize("width_env", [80, 120], indirect=True)
def test_search_says_when_the_limit_stopped_it(store: Store, width_env: int) -> None:
    store.add("v3-labels")
    store.add("v3-branch-summaries", session_id="other0001")
    stopped = run("--dir", str(store.root), "search", "e", "--all", "--limit", "2")
    assert stopped.stderr.splitlines()[-1] == (
        "the first 2 hits in 2 session files: --limit 2 stopped the search, more may follow"
    )
    everything = run("--dir", str(store.root), "search", "merge sort", "--all", "--limit", "50")
    assert everything.stderr.splitlines()[-1] == "2 hits in 2 session files"  # all there are


@pytest.mark.parametrize("width_env", [80, 120], indirect=True)
def test_check_names_a_title_line_that_is_not_a_slot(tmp_path: Path, width_env: int) -> None:
    slot = {"type": "title", "v": 1, "title": "T", "source": "robot", "updatedAt": "2025-01-01T00:00:00.000Z"}
    header = {
        "type": "session",
        "version": 3,
        "id": "x1",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/",
    }
    path = tmp_path / "slot.jsonl"
    path.write_text(json.dumps({**slot, "pad": ""}) + "\n" + json.dumps(header) + "\n")
    result = run("check", str(path))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == (
        f"{path}:1: header: line 1 is a title line that is not an omp 18 title slot (its source 'robot' "
        "is not one of 'auto', 'user'), so the file does not start with a session header"
    )
    path.write_text(json.dumps({"type": "title", "title": "T"}) + "\n" + json.dumps(header) + "\n")
    assert "it lacks a slot's fields" in run("check", str(path)).stdout


@pytest.mark.parametrize("width_env", [80, 120], indirect=True)
def test_help_and_readme_name_every_command(width_env: int) -> None:
    from omp_session.cli import main

    help_text = run("--help").stdout
    assert max(cells(line) for line in help_text.splitlines()) <= max(width_env, 100)
    examples = help_text.split("Examples:", 1)[1]
    readme = (ROOT / "README.md").read_text()
    listed = readme.split("`list`, `pick`", 1)[1].split("\n\n", 1)[0]
    for name in main.list_commands(click.Context(main)):
        assert f"`{name}`" in "`list`, `pick`" + listed, name
    for name in ("usage", "pick", "push"):
        assert f"omp-session {name}" in examples or f"postgresql://h/db {name}" in examples, name


def test_the_bench_generator_runs_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "g.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "bench.generate", str(out), "--messages", "300", "--seed", "4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith(f"{out}: ") and " entries, " in done.stdout
    assert run("check", str(out)).exit_code == 0
    assert "python -m bench.generate" in (ROOT / "README.md").read_text()
