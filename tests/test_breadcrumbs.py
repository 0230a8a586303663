"""Terminal breadcrumbs (spec §7.8): continue_recent resumes this terminal's session first."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from omp_session import SessionManager
from omp_session.store.breadcrumbs import read_breadcrumb, terminal_id, write_breadcrumb


def test_terminal_id_from_the_environment() -> None:
    assert terminal_id({"TMUX_PANE": "%3"}, io.StringIO()) == "tmux-%3"
    assert terminal_id({"KITTY_WINDOW_ID": "7", "TMUX_PANE": "%3"}, io.StringIO()) == "kitty-7"
    assert terminal_id({"TERM_SESSION_ID": "w0t0p0:AB/CD"}, io.StringIO()) == "apple-w0t0p0:AB-CD"
    assert terminal_id({}, io.StringIO()) is None


def _session(directory: Path, text: str) -> str:
    with SessionManager.create("/work/app", directory) as session:
        session.append_message({"role": "user", "content": text, "timestamp": 1})
        session.ensure_on_disk()
        return str(session.get_session_file())


def test_continue_recent_prefers_this_terminals_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX_PANE", "%1")
    mine = _session(tmp_path, "mine")
    monkeypatch.setenv("TMUX_PANE", "%2")
    newer = _session(tmp_path, "the other terminal's, newer")
    os.utime(mine, (1, 1))
    monkeypatch.setenv("TMUX_PANE", "%1")
    with SessionManager.continue_recent("/work/app", tmp_path) as resumed:
        assert resumed.get_session_file() == mine
    monkeypatch.delenv("TMUX_PANE")
    with SessionManager.continue_recent("/work/app", tmp_path) as resumed:
        assert resumed.get_session_file() == newer  # no terminal: newest by mtime, as before


def test_breadcrumbs_outside_the_session_dir_or_cwd_are_ignored(tmp_path: Path) -> None:
    inside = tmp_path / "sessions"
    inside.mkdir()
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("{}\n")
    write_breadcrumb("/work/app", str(outside), terminal="pts-9")
    assert read_breadcrumb("/work/app", inside, terminal="pts-9") is None
    target = inside / "s.jsonl"
    target.write_text("{}\n")
    write_breadcrumb("/work/app", str(target), terminal="pts-9")
    assert read_breadcrumb("/work/app", inside, terminal="pts-9") == target
    assert read_breadcrumb("/work/other", inside, terminal="pts-9") is None
    write_breadcrumb("/work/app", str(target), terminal="../escape")  # refused name: nothing written
    assert read_breadcrumb("/work/app", inside, terminal="../escape") is None
