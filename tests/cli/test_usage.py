"""``omp-session usage`` (issue 13 #6): views, date ranges, JSON and CSV, forks counted once."""

from __future__ import annotations

import csv
import io
import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from omp_session.tools.usage_report import usage_report

from .conftest import run

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "sessions"
FORK = SAMPLES / "-projects-shop-api" / "2025-06-08T09-32-01-050Z_132b05d14f000064.jsonl"
PARENT = SAMPLES / "-projects-shop-api" / "2025-06-02T09-32-00-700Z_13234c46f7800002.jsonl"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "sessions"
    shutil.copytree(SAMPLES, target)
    return target


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def test_every_view_adds_up_to_the_same_total(root: Path) -> None:
    totals = set()
    for view in ("daily", "weekly", "monthly", "session", "model", "project", "blocks"):
        report = usage_report(_files(root), view)
        assert report.rows
        assert round(sum(row.cost for row in report.rows), 9) == round(report.total.cost, 9)
        assert sum(row.turns for row in report.rows) == report.total.turns
        totals.add((round(report.total.cost, 9), report.total.output))
    assert len(totals) == 1
    daily = usage_report(_files(root), "daily")
    assert [row.key for row in daily.rows] == sorted(row.key for row in daily.rows)
    assert {row.key for row in usage_report(_files(root), "monthly").rows} == {"2025-06"}


def test_a_fork_is_paid_for_once(root: Path) -> None:
    together = usage_report([PARENT, FORK], "session")
    parent_alone = usage_report([PARENT], "session").total
    fork_alone = usage_report([FORK], "session").total
    assert together.copied_entries > 0
    # The fork holds a copy of the parent's turns: alone it counts them, together they count once.
    assert fork_alone.turns > 0 and together.total.turns < parent_alone.turns + fork_alone.turns
    assert together.total.turns == parent_alone.turns + (fork_alone.turns - _copied_turns())


def _copied_turns() -> int:
    fork_ids = {json.loads(line).get("id") for line in FORK.read_text().splitlines()[1:]}
    copied = 0
    for line in PARENT.read_text().splitlines()[1:]:
        entry = json.loads(line)
        message = entry.get("message") or {}
        if entry.get("id") in fork_ids and message.get("role") == "assistant" and message.get("usage"):
            copied += 1
    return copied


def test_date_range_is_inclusive(root: Path) -> None:
    report = usage_report(_files(root), "daily", since=date(2025, 6, 3), until=date(2025, 6, 5))
    assert [row.key for row in report.rows] == ["2025-06-03", "2025-06-04", "2025-06-05"]


def test_command_line_views_and_formats(root: Path) -> None:
    table = run("--dir", str(root), "usage", "--all")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["Date", "Models", "Input"] and lines[-1].startswith(
        "Total"
    )  # 100 columns
    data = json.loads(run("--dir", str(root), "usage", "model", "--all", "--json").stdout)
    assert data["view"] == "model" and data["rows"][0]["key"] == "claude-sonnet-4-5"
    assert data["copiedEntries"] > 0
    rows = list(csv.reader(io.StringIO(run("--dir", str(root), "usage", "project", "--all", "--csv").stdout)))
    assert rows[0] == [
        "project",
        "label",
        "input",
        "output",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "cacheHitRate",
        "cost",
        "costEstimated",
        "estimatedCost",
        "unpricedTurns",
        "turns",
    ]
    assert rows[-1][0] == "total" and len(rows) == 2 + len({r[0] for r in rows[1:-1]})
    ranged = json.loads(
        run(
            "--dir", str(root), "usage", "--all", "--since", "2025-06-04", "--until", "20250604", "--json"
        ).stdout
    )
    assert [row["key"] for row in ranged["rows"]] == ["2025-06-04"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["usage", "--since", "June"], "is not a date"),
        (["usage", "--since", "2025-06-05", "--until", "2025-06-01"], "--since is after --until"),
        (["usage", "--json", "--csv"], "not both"),
        (["usage", "hourly"], "hourly"),
        (["usage", "--timezone", "Mars/Olympus"], "is not a time zone"),
    ],
)
def test_bad_usage_arguments(root: Path, argv: list[str], message: str) -> None:
    result = run("--dir", str(root), *argv)
    assert result.exit_code == 2 and message in result.stderr
