"""Regression tests for what the viewer fuzzing (tests/web/fuzz_viewer.py) found, each through a
real server as the fuzzing met it."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from omp_session.cli import main as cli_main
from omp_session.importers.stores import make_store
from omp_session.web import create_app

from .support import running_viewer, serving, snapshot, write_session

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def _claude_transcript(home: Path, cwd: str) -> Path:
    """A two-line Claude Code transcript recorded in ``cwd``."""
    common = {"isSidechain": False, "cwd": cwd, "sessionId": "s1", "version": "2.0.14"}
    lines = [
        {
            **common,
            "parentUuid": None,
            "type": "user",
            "uuid": "u1",
            "timestamp": "2025-09-01T10:00:03.021Z",
            "message": {"role": "user", "content": "a question from a very deep directory"},
        },
        {
            **common,
            "parentUuid": "u1",
            "type": "assistant",
            "uuid": "u2",
            "timestamp": "2025-09-01T10:00:06.042Z",
            "message": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "an answer"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
    ]
    path = home / ".claude" / "projects" / "-deep" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read().decode("utf-8")


def test_a_foreign_session_whose_cwd_is_too_long_for_a_directory_name_is_listed_and_shown(
    tmp_path: Path,
) -> None:
    # Found by the fuzzing: the mirror named its project directory after the cwd, and a cwd longer
    # than a file name may be (255 bytes) made every index request answer HTTP 500.
    home = tmp_path / "home"
    _claude_transcript(home, "/" + "x" * 5000)
    root = tmp_path / "sessions"
    root.mkdir()
    before = snapshot(home)
    with running_viewer(root, foreign_stores=[make_store("claude", env={"HOME": str(home)})]) as url:
        status, index = _get(url + "/")
        assert status == 200
        assert "a question from a very deep directory" in index
        ref = index.split('href="/session/%40claude/')[1].split('"')[0]
        status, page = _get(url + "/session/%40claude/" + ref)
        assert status == 200 and "an answer" in page
    assert snapshot(home) == before


def _assistant_turn(
    entry_id: str, parent: str | None, timestamp: str, cost: float, tokens: float = 10
) -> dict[str, object]:
    usage = {"input": tokens, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "api": "x",
            "provider": "p",
            "model": "m",
            "usage": {**usage, "cost": {"total": cost}},
            "stopReason": "stop",
            "timestamp": 1,
        },
    }


def test_the_usage_page_counts_around_a_turn_dated_beyond_year_9999(tmp_path: Path) -> None:
    # Found by the fuzzing: "20202T14:01:45.000Z" is a valid JavaScript date (year 20202), which
    # Python's dates cannot hold; the usage page answered HTTP 500 (ValueError).
    root = tmp_path / "sessions"
    write_session(
        root / "-p" / "far.jsonl",
        [
            HEADER,
            _assistant_turn("a1", None, "2025-01-02T00:00:00.000Z", 1.25),
            _assistant_turn("a2", "a1", "20202T14:01:45.000Z", 2.5),
        ],
    )
    with running_viewer(root) as url:
        for query in ("", "?since=2025-01-01&until=2025-12-31"):
            status, page = _get(url + "/usage" + query)
            assert status == 200
            assert "$1.25" in page  # the dated turn is still counted, by its day
    # The same day function serves `omp-session usage`, which said "internal error".
    result = CliRunner().invoke(cli_main, ["--dir", str(root), "usage", "--all", "daily", "--json"])
    assert result.exit_code == 0 and "internal error" not in result.output, result.output
    assert "2025-01-02" in result.output


def test_the_usage_page_shows_a_token_sum_past_a_float_s_range(tmp_path: Path) -> None:
    # Found by the fuzzing: two turns of 1e308 input tokens sum to infinity, which the by-model
    # table's integer formatting could not show (OverflowError, HTTP 500).
    root = tmp_path / "sessions"
    write_session(
        root / "-p" / "huge.jsonl",
        [
            HEADER,
            _assistant_turn("a1", None, "2025-01-02T00:00:00.000Z", 1.25, tokens=1e308),
            _assistant_turn("a2", "a1", "2025-01-02T00:01:00.000Z", 1.25, tokens=1e308),
        ],
    )
    with running_viewer(root) as url:
        status, page = _get(url + "/usage")
    assert status == 200
    by_model = page.split('<th class="n">Cost</th>')[1]
    assert '<td class="n">∞</td>' in by_model and '<td class="n">10</td>' in by_model  # output: 5 + 5


def test_the_windowed_view_sums_a_usage_number_past_a_float_s_range(tmp_path: Path) -> None:
    # Found by the fuzzing: a 400-digit token count (valid JSON) on a path made the windowed
    # view's usage sums raise OverflowError (int + float): HTTP 500 from the window and rows APIs
    # and the lazy export, and a failed background build of the tree.
    root = tmp_path / "sessions"
    write_session(
        root / "-p" / "digits.jsonl",
        [
            HEADER,
            _assistant_turn("a1", None, "2025-01-02T00:00:00.000Z", 1.25),
            _assistant_turn("a2", "a1", "2025-01-02T00:01:00.000Z", 1.25, tokens=int("9" * 400)),
        ],
    )
    with serving(create_app(root)) as url:
        for route in ("/session/", "/api/window/", "/api/rows/", "/export/"):
            query = "?near=" if route == "/api/rows/" else ""
            status, _page = _get(url + route + "-p/digits.jsonl" + query)
            assert status == 200, route
        window = json.loads(_get(url + "/api/window/-p/digits.jsonl?at=a2")[1])
        assert "∞" in window["usage"] or "inf" in window["usage"].lower(), window["usage"]


def test_the_usage_page_marks_an_estimated_cost(tmp_path: Path) -> None:
    # Issue 27: an imported turn records cost 0 for its tokens; the page shows its estimate as such.
    root = tmp_path / "sessions"
    turn = _assistant_turn("a1", None, "2025-01-02T00:00:00.000Z", 0, tokens=2_000_000)
    turn["message"]["model"] = "claude-sonnet-4-5-20250929"  # type: ignore[index]
    write_session(root / "-p" / "imported.jsonl", [HEADER, turn])
    with running_viewer(root) as url:
        status, page = _get(url + "/usage")
    assert status == 200
    assert "<strong>~$6.00</strong>" in page and "estimated from list prices of" in page
