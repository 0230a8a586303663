"""Reports never cut a number (issue 27 #5): the real command output at 60, 80, 100 and 120
columns, on the bundled samples and on a generated store with large costs and token counts,
holds every number of the same report's JSON whole, and no line is wider than the terminal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from omp_session.cli._table import money

from .conftest import run

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "sessions"
WIDTHS = (60, 80, 100, 120)
#: Costs the issue saw cut ($9 for $90.70, $855.810 for $855.8109), and a big one.
COSTS = (90.70, 147.44, 887.04, 855.8109, 12_345.678)


def _assistant(entry_id: str, parent: str | None, when: str, cost: float, scale: int, model: str) -> str:
    usage = {
        "input": 1_234 * scale,
        "output": 56_789 * scale,
        "cacheRead": 98_765_432 * scale,
        "cacheWrite": 1_234_567 * scale,
        "totalTokens": (1_234 + 56_789 + 98_765_432 + 1_234_567) * scale,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "provider": "anthropic",
        "model": model,
        "usage": usage,
        "stopReason": "stop",
        "timestamp": 0,
    }
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": when, "message": message}
    return json.dumps(entry)


def _generated(root: Path) -> None:
    """Sessions whose UUIDv7 ids share their first 13 characters, with large numbers."""
    project = root / "-home-dev-a-project-with-a-rather-long-directory-name"
    project.mkdir(parents=True)
    for number, cost in enumerate(COSTS):
        session_id = f"01a22ce1-2073-7{number:03x}-8000-00000000000{number}"
        header = {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": f"2025-0{number + 1}-03T10:00:00.000Z",
            "cwd": "/home/dev/a-project-with-a-rather-long-directory-name",
            "title": f"Session number {number} with a title long enough to need narrowing",
        }
        lines = [json.dumps(header)]
        parent = None
        for turn in range(3):
            entry_id = f"e{number}{turn:07d}"
            when = f"2025-0{number + 1}-03T1{turn}:00:00.000Z"
            model = "claude-sonnet-4-5-20250929" if turn % 2 else "anthropic/claude-sonnet-4-5"
            lines.append(_assistant(entry_id, parent, when, cost / 3, 10 ** (number % 3), model))
            parent = entry_id
        (project / f"2025-0{number + 1}-03T10-00-00-000Z_{session_id}.jsonl").write_text(
            "\n".join(lines) + "\n"
        )


@pytest.fixture(params=["samples", "generated"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    target = tmp_path / "sessions"
    if request.param == "samples":
        shutil.copytree(SAMPLES, target)
    else:
        _generated(target)
    return target


def _tokens(value: float) -> str:
    return f"{int(value):,}"


def _usage_numbers(row: dict[str, Any]) -> list[str]:
    cost = money(row["cost"], estimated=row["costEstimated"])
    keys = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
    return [*(_tokens(row[key]) for key in keys), cost]


def _check(text: str, width: int, numbers: list[str]) -> None:
    for line in text.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
    words = set(text.replace("~", " ~").split())
    for number in numbers:
        assert number in words, f"{number} is not shown whole at {width} columns:\n{text}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("view", ["daily", "weekly", "monthly", "session", "model", "project", "blocks"])
def test_usage_tables_keep_every_number_whole(
    root: Path, width: int, view: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    data = json.loads(run("--dir", str(root), "usage", view, "--all", "--json").stdout)
    table = run("--dir", str(root), "usage", view, "--all")
    assert table.exit_code == 0, table.output
    numbers = [number for row in [*data["rows"], data["total"]] for number in _usage_numbers(row)]
    _check(table.stdout, width, numbers)
    if view in ("daily", "monthly"):
        keys = [row["key"] for row in data["rows"]]
        assert all(key in table.stdout for key in keys)


@pytest.mark.parametrize("width", WIDTHS)
def test_stats_tables_keep_every_number_whole(
    root: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    data = json.loads(run("--dir", str(root), "stats", "--all", "--json").stdout)
    table = run("--dir", str(root), "stats", "--all")
    assert table.exit_code == 0, table.output
    numbers = []
    for totals in [*(session["total"] for session in data["sessions"]), data["total"]]:
        numbers += [f"{totals['entries']:,}", f"{totals['messages']:,}", money(totals["cost"])]
        numbers += [_tokens(totals[key]) for key in ("input", "output", "cacheRead", "cacheWrite")]
    _check("\n".join(table.stdout.splitlines()[:-2]), width, numbers)  # (the Models and Tool lines wrap)


def test_money_is_rounded_to_cents() -> None:
    assert [money(cost) for cost in COSTS] == ["$90.70", "$147.44", "$887.04", "$855.81", "$12,345.68"]
    assert money(0) == "$0.00" and money(0.004) == "<$0.01" and money(0.005) == "$0.01"
    assert money(1.5, estimated=True) == "~$1.50"
