"""Imported sessions read like sessions (issue 30 #5): bookkeeping entries hidden in ``tree`` and
``show`` unless ``--all-entries``, long ids shown short and unique (and accepted back), Codex
titles without the environment context. Real fixture stores, the real import command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omp_session.cli._cells import cells
from omp_session.tools.resolve import resolve_entry_id, short_entry_ids
from tests.importers.helpers import stage_all

from .conftest import run


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_agent_dir: Path) -> dict[str, Path]:
    """Every fixture session of Claude Code and Codex, imported (lossless) under the sessions root."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    stage_all(tmp_path)
    found: dict[str, Path] = {}
    for source in ("claude", "codex"):
        result = run("import", source, "--all", "--json")
        assert result.exit_code == 0, result.output
        for session in json.loads(result.stdout)["sessions"]:
            found[f"{source}:{Path(session['sourcePath']).name}"] = Path(session["session"])
    return found


def _claude(imported: dict[str, Path]) -> Path:
    """The imported Claude Code chat whose ids are ``claude-c1a0de01-…-message-N``."""
    return next(path for path in imported.values() if b'"id":"claude-c1a0de01-' in path.read_bytes())


@pytest.mark.parametrize("width", [80, 120])
def test_tree_hides_bookkeeping_and_shortens_ids(
    imported: dict[str, Path], width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    for path in imported.values():
        lines = run("tree", str(path)).stdout.splitlines()
        assert lines and max(cells(line) for line in lines) <= width
        text = "\n".join(lines)
        for bookkeeping in ("foreign_session_import", "claude_record", "codex_record"):
            assert bookkeeping not in text, text
        assert sum(line.endswith("◀ leaf") for line in lines) == 1
        every = run("tree", str(path), "--all-entries").stdout
        assert "foreign_session_import  ◀ leaf" in every
    claude = run("tree", str(_claude(imported))).stdout.splitlines()
    assert claude[0] == "…message-1 user: Hello, can you explain what this repo does?"
    assert claude[-1].startswith("…message-4 assistant: The router lives in src/router.ts")
    assert claude[-1].endswith("◀ leaf")


@pytest.mark.parametrize("width", [80, 120])
def test_show_hides_bookkeeping_and_takes_the_short_ids_back(
    imported: dict[str, Path], width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    path = _claude(imported)
    shown = run("show", str(path), "--events").stdout
    assert "foreign_session_import" not in shown
    assert "user · 10:00:09 · …message-3 " in shown
    rules = [line for line in shown.splitlines() if line.endswith("─")]
    assert rules and all(cells(line) == width for line in rules)  # the id no longer overflows them
    assert "foreign_session_import" in run("show", str(path), "--events", "--all-entries").stdout
    cut = run("show", str(path), "--leaf", "…message-3").stdout
    assert cut.rstrip().endswith("The router, please.")
    assert run("show", str(path), "--leaf", "message-3").stdout == cut
    # --json keeps the ids whole, for scripts.
    data = json.loads(run("show", str(path), "--json").stdout)
    ids = [item["entry_id"] for item in data["branches"][0]["items"]]
    assert "claude-c1a0de01-0000-4000-8000-000000000003-message-3" in ids


def test_codex_titles_skip_the_environment_context(imported: dict[str, Path]) -> None:
    listing = run("list", "--all").stdout
    assert "What does main.go do?" in listing
    assert "environment_context" not in listing


def test_short_ids_are_unique_tails() -> None:
    ids = [
        "claude-aaaa1111-0000-4000-8000-000000000001-message-1",
        "claude-aaaa1111-0000-4000-8000-000000000001-model",
        "claude-bbbb2222-0000-4000-8000-000000000002-message-11",
        "claude-cccc3333-0000-4000-8000-000000000003-model",
        "x-message-11",  # short, shown whole, but it shares a tail: the long one must say more
        "0ba744cf",
    ]
    shown = short_entry_ids(ids)
    assert shown == {
        "claude-aaaa1111-0000-4000-8000-000000000001-message-1": "…message-1",
        "claude-aaaa1111-0000-4000-8000-000000000001-model": "…000000000001-model",
        "claude-bbbb2222-0000-4000-8000-000000000002-message-11": "…000000000002-message-11",
        "claude-cccc3333-0000-4000-8000-000000000003-model": "…000000000003-model",
    }
    by_id = dict.fromkeys(ids)
    for entry_id, short in shown.items():
        assert resolve_entry_id(by_id, short) == entry_id
        assert resolve_entry_id(by_id, short.removeprefix("…")) == entry_id
    assert short_entry_ids(["0ba744cf", "6df56738"]) == {}
