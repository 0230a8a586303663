"""Issue 25's table, the file rows: each test is one row, and each failed on the code before it.

(The database rows are in ``tests/postgres/test_round_three_postgres.py``.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from omp_session import SessionManager
from omp_session.cli import main
from tests.helpers import HEADER, assistant, msg, user, write_session

CODEX_FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures" / "codex"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every regular file under ``directory``: its bytes and mtime (ns)."""
    found: dict[str, tuple[bytes, int]] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(directory))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found


def a_session(path: Path, cwd: str = "/work/proj") -> Path:
    return write_session(
        path,
        [msg("u1", None, user("hello")), msg("a1", "u1", assistant("hi there"))],
        header={**HEADER, "cwd": cwd},
    )


# -- row 1: fork of an empty file wrote a header into it ----------------------------------------


def test_fork_of_an_empty_file_leaves_it_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    before = snapshot(tmp_path)
    result = CliRunner().invoke(main, ["fork", str(empty)])
    assert result.exit_code == 2
    assert "no entries to fork" in result.output or "empty" in result.output
    assert snapshot(tmp_path) == before  # 0 bytes, and no new file either


def test_fork_of_a_whitespace_only_or_slot_only_file_leaves_it_alone(tmp_path: Path) -> None:
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n  \n")
    before = snapshot(tmp_path)
    result = CliRunner().invoke(main, ["fork", str(blank)])
    assert result.exit_code == 2
    assert snapshot(tmp_path) == before


# -- row 2: a FIFO named *.jsonl in the session directory hung create() and fork -----------------


def _in_child(code: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (a blocking open cannot be interrupted in a thread)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize("dialect", ["auto", "omp13", "omp18"])
def test_create_beside_a_fifo_does_not_hang(tmp_path: Path, dialect: str) -> None:
    directory = tmp_path / "sessions" / "-work-proj"
    directory.mkdir(parents=True)
    os.mkfifo(directory / "zz-a-fifo.jsonl")
    choice = "None" if dialect == "auto" else repr(dialect)
    code = (
        "from omp_session import SessionManager\n"
        f"s = SessionManager.create('/work/proj', session_dir={str(directory)!r}, dialect={choice})\n"
        "s.ensure_on_disk(); print(s.get_session_file()); s.close()\n"
    )
    done = _in_child(code)  # raises TimeoutExpired if the probe blocks on the FIFO
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_file()


@pytest.mark.parametrize("source_kind", ["empty", "session"])
def test_fork_beside_a_fifo_does_not_hang(tmp_path: Path, source_kind: str) -> None:
    if source_kind == "empty":  # an empty source made fork start a new session: the dialect probe
        source = tmp_path / "proj" / "empty.jsonl"
        source.parent.mkdir()
        source.write_bytes(b"")
    else:
        source = a_session(tmp_path / "proj" / "source.jsonl")
    os.mkfifo(tmp_path / "proj" / "zz-a-fifo.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "omp_session", "fork", str(source)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if source_kind == "empty":
        assert done.returncode == 2, done.stderr
        assert source.read_bytes() == b""
    else:
        assert done.returncode == 0, done.stderr
        assert Path(done.stdout.strip()).is_file()


# -- row 3: repair turned anything into a 103-byte "session" -------------------------------------


@pytest.mark.parametrize("kind", ["binary", "text", "random", "json-not-session"])
def test_repair_refuses_what_is_not_a_session(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "thing.jsonl"
    if kind == "binary":
        shutil.copyfile("/bin/ls", target)
    elif kind == "text":
        target.write_text("Dear diary,\nToday I wrote a README.\n\nThe end.\n")
    elif kind == "random":
        target.write_bytes(os.urandom(4096))
    else:
        target.write_bytes(b'{"name":"package","version":"1.0.0"}\n{"a":[1,2,3]}\n')
    before = snapshot(tmp_path)
    result = CliRunner().invoke(main, ["repair", str(target)])
    assert result.exit_code == 2, result.output
    assert "not a session" in result.output and "--force" in result.output
    assert snapshot(tmp_path) == before  # no rewrite, no .rejected, no .repair.bak


def test_repair_of_an_empty_file_refuses_and_never_claims_a_sidecar(tmp_path: Path) -> None:
    target = tmp_path / "empty.jsonl"
    target.write_bytes(b"")
    before = snapshot(tmp_path)
    refused = CliRunner().invoke(main, ["repair", str(target)])
    assert refused.exit_code == 2 and "--force" in refused.output
    assert snapshot(tmp_path) == before
    forced = CliRunner().invoke(main, ["repair", "--force", str(target)])
    assert forced.exit_code == 0, forced.output
    assert "sidecar" not in forced.output  # nothing was moved to one: none exists
    assert not (tmp_path / "empty.jsonl.rejected").exists()
    assert json.loads(target.read_bytes().split(b"\n")[0])["type"] == "session"


def test_repair_force_rebuilds_a_header_and_keeps_the_dropped_lines(tmp_path: Path) -> None:
    target = tmp_path / "text.jsonl"
    target.write_text("not json at all\n")
    forced = CliRunner().invoke(main, ["repair", "--force", "--json", str(target)])
    assert forced.exit_code == 0, forced.output
    report = json.loads(forced.output)
    assert report["sidecar"] == str(tmp_path / "text.jsonl.rejected")
    assert (tmp_path / "text.jsonl.rejected").read_bytes() == b"not json at all\n"


def test_repair_still_repairs_a_session_whose_header_is_damaged(tmp_path: Path) -> None:
    target = a_session(tmp_path / "s.jsonl")
    lines = target.read_bytes().split(b"\n", 1)
    target.write_bytes(b'{"type":"sess' + b"\n" + lines[1])  # the header torn, the entries intact
    result = CliRunner().invoke(main, ["repair", str(target)])
    assert result.exit_code == 0, result.output
    assert "missing or corrupt header" in result.output


# -- row 4: import claude of a Codex rollout "imported" 12 custom entries -----------------------


def test_import_claude_of_a_codex_rollout_is_refused_naming_codex(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout-2025-10-02T08-00-00-0199c0de-0007-7000-8000-000000000007.jsonl"
    shutil.copyfile(CODEX_FIXTURES / "rollback.jsonl", rollout)
    root = tmp_path / "sessions"
    root.mkdir()
    before = snapshot(tmp_path)
    result = CliRunner().invoke(main, ["--dir", str(root), "import", "claude", str(rollout)])
    assert result.exit_code == 1, result.output
    # One line per session, its status first: none says "imported", and the total says why.
    assert "1 failed" in result.output
    assert not any(line.startswith("imported") for line in result.output.splitlines())
    as_json = CliRunner().invoke(main, ["--dir", str(root), "import", "claude", "--json", str(rollout)])
    (outcome,) = json.loads(as_json.output)["sessions"]
    assert outcome["status"] == "failed"
    assert "looks like a Codex rollout" in outcome["reason"]
    assert "omp-session import codex" in outcome["reason"]  # the hint names the right importer
    assert snapshot(tmp_path) == before  # nothing imported, the source untouched


@pytest.mark.parametrize(
    ("source", "fixture", "named"),
    [
        ("codex", "claude/plain_chat.jsonl", "Claude Code transcript"),
        ("pi", "claude/plain_chat.jsonl", "Claude Code transcript"),
        ("claude", "../../conformance/load/v3-labels.jsonl", "pi or omp session"),
    ],
)
def test_each_importer_names_the_format_its_input_looks_like(
    tmp_path: Path, source: str, fixture: str, named: str
) -> None:
    given = tmp_path / "given.jsonl"
    shutil.copyfile(CODEX_FIXTURES.parent / fixture, given)
    root = tmp_path / "sessions"
    result = CliRunner().invoke(main, ["--dir", str(root), "import", source, "--json", str(given)])
    assert result.exit_code == 1, result.output
    (outcome,) = json.loads(result.output)["sessions"]
    assert outcome["status"] == "failed" and named in outcome["reason"], outcome
    assert not root.exists() or not any(root.rglob("*.jsonl"))


# -- row 10: fork's header took the process cwd ---------------------------------------------------


@pytest.mark.parametrize("dialect", ["omp13", "omp18"])
def test_fork_keeps_the_recorded_cwd_of_a_project_that_is_gone(tmp_path: Path, dialect: str) -> None:
    gone = tmp_path / "a-project-that-was-removed"
    gone.mkdir()
    session = SessionManager.create(str(gone), session_dir=tmp_path / "sessions", dialect=dialect)
    session.append_message(user("hello"))
    session.append_message(assistant("hi"))
    source = Path(str(session.get_session_file()))
    session.close()
    gone.rmdir()
    result = run("fork", str(source))
    assert result.exit_code == 0, result.output
    forked = Path(result.output.strip())
    header = next(
        json.loads(line) for line in forked.read_bytes().split(b"\n") if b'"type":"session"' in line
    )
    assert header["cwd"] == str(gone)
    assert forked.parent == source.parent


# -- item 3: import --all lists the files it could not import, and why ----------------------------


def test_import_all_lists_what_it_could_not_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "claude"
    project = claude / "projects" / "-work-proj"
    project.mkdir(parents=True)
    good = CODEX_FIXTURES.parent / "claude" / "plain_chat.jsonl"
    shutil.copyfile(good, project / "5e551011-0000-4000-8000-000000000001.jsonl")
    shutil.copyfile(CODEX_FIXTURES / "rollback.jsonl", project / "a-codex-rollout.jsonl")
    (project / "notes.jsonl").write_text("just some notes\n")
    os.mkfifo(project / "a-fifo.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    root = tmp_path / "sessions"
    result = CliRunner().invoke(main, ["--dir", str(root), "import", "claude", "--all", "--json"])
    report = json.loads(result.output)
    reasons = {Path(item["sourcePath"]).name: item["reason"] for item in report["skipped"]}
    statuses = {Path(item["sourcePath"]).name: item["status"] for item in report["sessions"]}
    assert statuses.get("5e551011-0000-4000-8000-000000000001.jsonl") == "imported", report
    assert "a-fifo.jsonl" in reasons and "FIFO" in reasons["a-fifo.jsonl"]
    failed = {Path(i["sourcePath"]).name: i["reason"] for i in report["sessions"] if i["status"] == "failed"}
    assert "looks like a Codex rollout" in {**reasons, **failed}["a-codex-rollout.jsonl"]
    assert "no readable" in {**reasons, **failed}["notes.jsonl"]
    assert result.exit_code == 1  # something failed
    text = CliRunner().invoke(main, ["--dir", str(root), "import", "claude", "--all"])
    assert "1 unchanged, 2 failed, 1 not imported" in text.output  # (imported by the run above)
