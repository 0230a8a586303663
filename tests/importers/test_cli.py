"""``omp-session import`` on fixture stores of all three agents (real files, the real command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session import SessionManager
from omp_session.cli import main
from tests.importers import corpus
from tests.importers.helpers import stage_all


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    stage_all(tmp_path)
    return tmp_path


def _run(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(main, ["import", *args, "--json"])
    return result.exit_code, json.loads(result.output) if result.output.strip().startswith("{") else {}


@pytest.mark.parametrize(("source", "count"), [("claude", 3), ("codex", 2), ("pi", 1)])
def test_import_all_then_again_creates_nothing_new(
    home: Path, isolated_agent_dir: Path, source: str, count: int
) -> None:
    code, first = _run(source, "--all")
    assert code == 0
    assert [s["status"] for s in first["sessions"]] == ["imported"] * count
    files = sorted((isolated_agent_dir / "sessions").rglob("*.jsonl"))
    assert len(files) == count
    contents = [f.read_bytes() for f in files]
    code, again = _run(source, "--all")
    assert code == 0 and [s["status"] for s in again["sessions"]] == ["unchanged"] * count
    assert sorted((isolated_agent_dir / "sessions").rglob("*.jsonl")) == files
    assert [f.read_bytes() for f in files] == contents
    for path in files:
        with SessionManager.open(path) as session:
            assert session.get_entries()[-1]["customType"] == "foreign_session_import"


def test_dry_run_writes_nothing(home: Path, isolated_agent_dir: Path) -> None:
    code, report = _run("codex", "--all", "--dry-run")
    assert code == 0 and all(s["dryRun"] and s["status"] == "imported" for s in report["sessions"])
    assert not list((isolated_agent_dir / "sessions").rglob("*.jsonl"))


def test_since_skips_older_sessions(home: Path) -> None:
    code, report = _run("claude", "--all", "--since", "2026-06-01")
    assert code == 0 and report["sessions"] == []
    assert len(report["skipped"]) == 3 and {s["reason"] for s in report["skipped"]} == {"older than --since"}
    code, report = _run("claude", "--all", "--since", "2025-12-31")
    assert len(report["sessions"]) == 3  # staged with mtime 2026-01-01


def test_one_path_and_a_bad_file(home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "broken.jsonl"
    bad.write_bytes(b"not json\n{also not\n")
    good = next((home / ".claude" / "projects").rglob("*.jsonl"))
    code, report = _run("claude", str(good), str(bad))
    assert code == 1
    by_path = {s["sourcePath"]: s for s in report["sessions"]}
    assert by_path[str(good)]["status"] == "imported"
    assert by_path[str(bad)]["status"] == "failed"
    assert "contains no readable records" in by_path[str(bad)]["reason"]


def test_unreadable_lines_are_reported(home: Path) -> None:
    staged, _ = corpus.stage("claude", "malformed_lines", home)
    code, report = _run("claude", str(staged))
    assert code == 0 and report["sessions"][0]["skippedLines"] == [2, 5, 6, 16]


def test_usage_errors(home: Path) -> None:
    result = CliRunner().invoke(main, ["import", "claude"])
    assert result.exit_code == 2 and "give PATH ... or --all" in result.output
    result = CliRunner().invoke(main, ["import", "claude", "--all", "--since", "yesterday"])
    assert result.exit_code == 2 and "--since" in result.output


def test_text_summary_in_a_real_process(home: Path, isolated_agent_dir: Path) -> None:
    env = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(isolated_agent_dir), "COLUMNS": "200"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "omp-session"), "import", "claude", "--all"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 imported" in done.stdout and "Traceback" not in done.stderr
    assert "kept_record" not in done.stdout  # jargon of the conversion, not for the reader


@pytest.mark.parametrize("width", [80, 120])
def test_summary_is_one_line_per_session_with_what_was_left_out(
    home: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    rollouts = home / ".codex" / "sessions" / "2025" / "11"
    rollouts.mkdir(parents=True)
    (rollouts / "rollout-bad.jsonl").write_text("not json\n")
    (rollouts / "rollout-empty.jsonl").write_text("")
    result = CliRunner().invoke(main, ["import", "codex", "--all"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= width for line in lines)
    sessions = [line for line in lines if line.startswith("imported ")]
    assert len(sessions) == 2
    listed = {os.path.basename(str(p)): p for p in (isolated_agent_dir / "sessions").rglob("*.jsonl")}
    with SessionManager.open(next(iter(listed.values())), read_only=True) as first:
        assert any(first.get_session_id() in line for line in sessions)
    # Titles skip Codex's <environment_context> message, as titles skip slash commands.
    assert any(line.endswith("  What does main.go do?") for line in sessions), sessions
    assert not any("environment_context" in line for line in lines)
    assert lines[2] == "Not imported (2 files):"
    bad = "  ~/.codex/sessions/2025/11/rollout-bad.jsonl: holds no record of a Codex rollout"
    if width >= len(bad):
        assert lines[3:-1] == [bad, "  ~/.codex/sessions/2025/11/rollout-empty.jsonl: is empty"]
    else:  # the reason goes on a line of its own rather than being cut
        assert lines[3:-1] == [
            "  ~/.codex/sessions/2025/11/rollout-bad.jsonl:",
            "    holds no record of a Codex rollout",
            "  ~/.codex/sessions/2025/11/rollout-empty.jsonl: is empty",
        ]
    assert lines[-1] == "Codex → omp: 2 imported, 2 not imported"


def test_an_empty_store_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PI_CODING_AGENT_DIR_PI", raising=False)
    result = CliRunner().invoke(main, ["import", "pi", "--all"])
    assert result.exit_code == 0
    assert result.stdout == f"No pi sessions found in {tmp_path}/.pi/agent: nothing to import.\n"


@pytest.mark.parametrize("width", [80, 120])
def test_a_rollout_the_state_database_does_not_list_is_named_with_why(
    home: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    import sqlite3

    monkeypatch.setenv("COLUMNS", str(width))
    codex = home / ".codex"
    rollouts = sorted((codex / "sessions").rglob("*.jsonl"))
    assert len(rollouts) == 2
    with sqlite3.connect(codex / "state_5.sqlite") as db:
        db.execute(
            "CREATE TABLE threads (id TEXT, rollout_path TEXT, created_at INTEGER, updated_at INTEGER,"
            " cwd TEXT, title TEXT, first_user_message TEXT)"
        )
        db.execute(
            "INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("t1", str(rollouts[0]), 1, 2, "/w", "A", "hi"),
        )
    result = CliRunner().invoke(main, ["import", "codex", "--all", "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= width for line in lines)
    assert lines[1] == "Not imported (1 file):"
    shown = "~" + str(rollouts[1])[len(str(home)) :]
    # The path, when cut, is cut in its middle: the end of the file name stays; the reason is
    # wrapped, never cut.
    assert lines[2] == f"  {shown}:" or (
        lines[2].startswith("  ~/.codex/")
        and "…" in lines[2]
        and lines[2].endswith(rollouts[1].name[-40:] + ":")
    )
    reason = " ".join(line.strip() for line in lines[3:-1])
    assert reason == (
        "a Codex rollout that Codex's state database does not list (nor does omp); "
        "import it by path: omp-session import codex PATH"
    )
    assert lines[-1] == "Codex → omp: 1 imported, 1 not imported (dry run: nothing written)"
