"""Issue 27's ID, $0 and date defects: session ids shown as their shortest unique prefix (which
resolves back), imported Claude Code and Codex sessions priced from their tokens and dated by
their conversation, at 60, 80, 100 and 120 columns."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from omp_session.tools.resolve import resolve_session
from omp_session.tools.short_ids import unique_prefixes

from .conftest import run

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
CLAUDE = ("plain_chat", "model_switch", "tool_roundtrip", "thinking_signature")
CODEX = ("basic_chat", "function_calls", "token_counts")
WIDTHS = (60, 80, 100, 120)


def test_unique_prefixes_are_as_short_as_git_would_show_them() -> None:
    ids = [
        "01a22ce1-2073-7b7b-b531-e73f9cbad04d",
        "01a22ce1-2073-7c01-8000-000000000001",
        "01a22ce1-9999-7000-8000-000000000002",
        "15d0c6a0e2b44001",
        "15d0c6a0e2b44002",
        "d703a1a9-1b7b-4f00-8000-000000000003",
    ]
    shown = unique_prefixes(ids)
    assert shown == {
        "01a22ce1-2073-7b7b-b531-e73f9cbad04d": "01a22ce1-2073-7b",
        "01a22ce1-2073-7c01-8000-000000000001": "01a22ce1-2073-7c",
        "01a22ce1-9999-7000-8000-000000000002": "01a22ce1-9",  # never ends on a hyphen
        "15d0c6a0e2b44001": "15d0c6a0e2b44001",
        "15d0c6a0e2b44002": "15d0c6a0e2b44002",
        "d703a1a9-1b7b-4f00-8000-000000000003": "d703a1a9",
    }
    for full, prefix in shown.items():
        others = [other for other in ids if other != full]
        assert not any(other.lower().startswith(prefix.lower()) for other in others)
    assert unique_prefixes(["ABCDEF0123", "abcdef0123"]) == {
        "ABCDEF0123": "ABCDEF0123",
        "abcdef0123": "abcdef0123",
    }


def _import(root: Path) -> None:
    for case in CLAUDE:
        result = run("--dir", str(root), "import", "claude", str(FIXTURES / "claude" / f"{case}.jsonl"))
        assert result.exit_code == 0, result.output
    for case in CODEX:
        result = run("--dir", str(root), "import", "codex", str(FIXTURES / "codex" / f"{case}.jsonl"))
        assert result.exit_code == 0, result.output


@pytest.fixture
def imported(isolated_agent_dir: Path) -> Path:
    root = isolated_agent_dir / "sessions"
    root.mkdir(parents=True, exist_ok=True)
    _import(root)
    return root


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_imported_sessions_are_dated_by_their_conversation(imported: Path) -> None:
    started = datetime.now(timezone.utc)
    rows = json.loads(run("--dir", str(imported), "list", "--all", "--json").stdout)
    assert len(rows) == len(CLAUDE) + len(CODEX)
    for row in rows:
        created, last = _iso(row["created"]), _iso(row["lastActivity"])
        # The fixtures are 2025 conversations; the import ran just now.
        assert created.year == 2025 and last.year == 2025, row
        assert created <= last < started and _iso(row["modified"]) > last
    lasts = [row["lastActivity"] for row in rows]
    assert lasts == sorted(lasts, reverse=True)  # most recent activity first


def test_imported_sessions_cost_what_their_tokens_cost_marked_as_estimated(imported: Path) -> None:
    report = json.loads(run("--dir", str(imported), "usage", "session", "--all", "--json").stdout)
    assert report["rows"]
    for row in report["rows"]:
        if row["totalTokens"]:
            assert row["cost"] > 0 and row["costEstimated"], row
    assert report["total"]["estimatedCost"] == report["total"]["cost"] > 0
    assert report["pricesSourceDate"]
    by_model = json.loads(run("--dir", str(imported), "usage", "model", "--all", "--json").stdout)
    # Claude Code writes dated names (claude-sonnet-4-5-20250929): merged with the plain one.
    assert not any(re.search(r"-\d{8}$", row["key"]) for row in by_model["rows"])


@pytest.mark.parametrize("width", WIDTHS)
def test_ids_shown_resolve_back_and_estimates_are_marked_at_every_width(
    imported: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    rows = json.loads(run("--dir", str(imported), "list", "--all", "--json").stdout)
    ids = [row["id"] for row in rows]
    # omp 18's ids made within the same second share their first 8 characters and more.
    assert len({session_id[:8] for session_id in ids}) < len(ids)
    expected = unique_prefixes(ids)
    for command in (["list", "--all"], ["usage", "session", "--all"], ["stats", "--all"]):
        result = run("--dir", str(imported), *command)
        assert result.exit_code == 0, result.output
        words = set(result.stdout.split())
        shown = [prefix for full, prefix in expected.items() if prefix in words]
        assert shown, f"{command} at {width}: no id shown\n{result.stdout}"
        assert all(len(line) <= width for line in result.stdout.splitlines()[:-2])
        for prefix in shown:
            full = next(full for full, short in expected.items() if short == prefix)
            assert (
                json.loads(run("--dir", str(imported), "stats", prefix, "--json").stdout)["sessions"][0]["id"]
                == full
            )
            assert resolve_session(prefix, imported).name.endswith(f"{full}.jsonl")
    table = run("--dir", str(imported), "usage", "--all").stdout
    assert "~$" in table or "~<$0.01" in table
    assert "estimated from list prices of" in table
