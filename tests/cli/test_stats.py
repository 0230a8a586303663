"""Usage statistics per branch, per session and across sessions (fork copies counted once)."""

from __future__ import annotations

import json
from pathlib import Path

from omp_session import SessionManager
from omp_session.tools.stats import collect_stats, session_stats

from .conftest import CORPUS
from .sessions import USAGE, agent_session, assistant, text

LOAD = CORPUS / "load"


def test_per_branch_and_whole_session_totals() -> None:
    stats = session_stats(LOAD / "v3-branch-summaries.jsonl")
    branches = {b.leaf_id: (b.is_current, b.totals.usage.input, b.totals.messages) for b in stats.branches}
    assert branches == {
        "a0000002": (False, 200, 4),
        "a0000003": (False, 200, 4),
        "u0000005": (True, 100, 3),
    }
    assert (stats.totals.usage.input, stats.totals.usage.output, stats.totals.entries) == (400, 80, 12)
    assert round(stats.totals.usage.cost, 6) == 0.012


def test_models_and_tool_calls_of_a_real_omp_session() -> None:
    totals = session_stats(LOAD / "omp-large-real.jsonl").totals
    assert dict(totals.tool_calls) == {"bash": 192, "edit": 146, "read": 50, "write": 3}
    assert dict(totals.models) == {"anthropic/claude-sonnet-4-5": 452, "openai/gpt-5.1-codex": 1}
    assert totals.messages == 914 and totals.roles["toolResult"] == 373
    assert totals.usage.cacheRead == 43229469


def test_a_branched_copy_is_counted_once(tmp_path: Path) -> None:
    source, ids = agent_session(tmp_path)
    with SessionManager.open(source) as session:
        branched = Path(str(session.create_branched_session(ids["answer"])))
    alone = session_stats(source).totals
    report = collect_stats([source, branched])
    assert report.total.usage.input == alone.usage.input == 3 * USAGE["input"]
    assert report.total.tool_calls == alone.tool_calls
    assert report.copied_entries == 5  # user, call, two results, answer (the label is new)
    assert [s.totals.usage.input for s in report.sessions] == [300, 200]


def test_a_full_fork_with_an_id_as_parent_is_counted_once(tmp_path: Path) -> None:
    source, _ids = agent_session(tmp_path)
    forked = SessionManager.fork_from(source, "/work/demo", tmp_path / "forks")
    with forked:
        forked.append_message(assistant(text("only in the fork")))
        fork_path = Path(str(forked.get_session_file()))
    report = collect_stats([fork_path, source])
    assert report.total.usage.input == 4 * USAGE["input"]  # three in the source, one new in the fork


def test_parent_session_links_copies_even_with_new_timestamps(tmp_path: Path) -> None:
    parent = tmp_path / "parent.jsonl"
    child = tmp_path / "child.jsonl"
    message = {"type": "message", "id": "a1", "parentId": None, "message": assistant(text("x"))}
    lines = [
        {"type": "session", "version": 3, "id": "P", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
    ]
    parent.write_text(
        "\n".join(json.dumps(x) for x in [*lines, {**message, "timestamp": "2025-01-01T00:00:01.000Z"}])
        + "\n"
    )
    header = {
        "type": "session",
        "version": 3,
        "id": "C",
        "timestamp": "2025-01-02T00:00:00.000Z",
        "cwd": "/",
        "parentSession": str(parent),
    }
    child.write_text(
        "\n".join(json.dumps(x) for x in [header, {**message, "timestamp": "2025-01-02T00:00:01.000Z"}])
        + "\n"
    )
    report = collect_stats([child, parent])
    assert report.total.usage.input == USAGE["input"] and report.copied_entries == 1
    unrelated = collect_stats([child, LOAD / "v3-labels.jsonl"])
    assert unrelated.copied_entries == 0


def test_unreadable_files_are_reported_not_fatal(tmp_path: Path) -> None:
    report = collect_stats(
        [
            CORPUS / "deviations" / "corrupt-first-line.jsonl",
            tmp_path / "gone.jsonl",
            LOAD / "v3-labels.jsonl",
        ]
    )
    assert len(report.sessions) == 1
    assert [Path(p).name for p, _reason in report.skipped] == ["corrupt-first-line.jsonl", "gone.jsonl"]
    data = report.to_dict()
    assert data["total"]["messages"] == 5 and len(data["skipped"]) == 2
