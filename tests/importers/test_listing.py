"""Discovery and listing details that the corpus does not stage (spec importers §1.1, §2.1)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from omp_session.importers.claude import ClaudeSessionStore, claude_root, decode_project_dir
from omp_session.importers.codex import CodexSessionStore


def test_claude_root_and_project_decoding(tmp_path: Path) -> None:
    assert claude_root({"HOME": "/h"}) == Path("/h/.claude")
    assert claude_root({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}) == Path("/c")
    # omp's lossy rule: every "-" becomes "/" unless a registered project encodes to the name
    assert decode_project_dir("-home-me-my-app", []) == "/home/me/my/app"
    assert decode_project_dir("-home-me-my-app", ["/home/me/my-app"]) == "/home/me/my-app"
    assert decode_project_dir("plain", []) == "plain"


def test_claude_registered_projects_come_from_claude_json(tmp_path: Path) -> None:
    (tmp_path / ".claude.json").write_text(json.dumps({"projects": {"/home/me/my-app": {}, "rel": {}}}))
    project = tmp_path / ".claude" / "projects" / "-home-me-my-app"
    project.mkdir(parents=True)
    (project / "s1.jsonl").write_text('{"type":"summary"}\n')  # no cwd in the transcript
    (project / "notes.txt").write_text("ignored")
    (project / "s1").mkdir()  # a session's sub-agent directory is not listed
    (project / "s1" / "subagents").mkdir()
    (project / "s1" / "subagents" / "agent-x.jsonl").write_text("{}\n")
    infos = ClaudeSessionStore(env={"HOME": str(tmp_path)}).list()
    assert [(i.id, i.cwd) for i in infos] == [("s1", "/home/me/my-app")]


def _rollout(path: Path, cwd: str | None, thread_id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"id": thread_id, "timestamp": "2025-10-02T08:00:00.000Z"}
    if cwd is not None:
        payload["cwd"] = cwd
    path.write_text(json.dumps({"type": "session_meta", "payload": payload}) + "\n")


def test_codex_state_database_is_the_whole_answer(tmp_path: Path) -> None:
    root = tmp_path / ".codex"
    _rollout(root / "sessions" / "2025" / "10" / "02" / "rollout-a.jsonl", "/w", "file-only")
    for version in (2, 5):  # the newest state database is the one read
        with sqlite3.connect(root / f"state_{version}.sqlite") as db:
            db.execute(
                "CREATE TABLE threads (id TEXT, rollout_path TEXT, created_at INTEGER, updated_at INTEGER,"
                " cwd TEXT, title TEXT, first_user_message TEXT)"
            )
            if version == 5:
                db.executemany(
                    "INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        ("t1", "sessions/x.jsonl", 1759392000, 1759395600, "/a", "Older", "hi"),
                        ("t2", "/abs/y.jsonl", None, 1759399200000, "/b", None, None),
                        ("t3", "z.jsonl", 1, 2, "", "no cwd: skipped", None),
                    ],
                )
    infos = CodexSessionStore(root).list()
    assert [(i.id, i.path, i.cwd, i.title, i.first_message) for i in infos] == [
        ("t2", "/abs/y.jsonl", "/b", None, None),
        ("t1", str(root / "sessions" / "x.jsonl"), "/a", "Older", "hi"),
    ]
    assert infos[0].created_ms == infos[0].modified_ms == 1759399200000  # created defaults to modified
    assert infos[1].created_ms == 1759392000 * 1000  # epoch seconds


def test_codex_file_scan_needs_a_first_session_meta_with_cwd(tmp_path: Path) -> None:
    root = tmp_path / ".codex"
    _rollout(root / "sessions" / "a" / "rollout-1.jsonl", "/w", "0199c0de-0001-7000-8000-000000000001")
    _rollout(root / "archived_sessions" / "rollout-2.jsonl", None, "no-cwd")
    _rollout(root / ".sessions" / "deep" / "er" / "rollout-3.jsonl", "/v", "three")
    os.utime(root / ".sessions" / "deep" / "er" / "rollout-3.jsonl", ns=(0, 10**18))
    infos = CodexSessionStore(root).list()
    assert [i.id for i in infos] == ["0199c0de-0001-7000-8000-000000000001", "three"]  # newest first
