"""``stats`` without ``--branches`` (issue 27 #6) gives the same current branch as the walk of
every branch, and a summary of the others that agrees with it, on every corpus file (duplicate
ids, parent cycles, dangling parents and damaged lines included)."""

from __future__ import annotations

from pathlib import Path

from omp_session.errors import SessionError
from omp_session.tools.stats import session_stats

CORPORA = Path(__file__).resolve().parents[1]


def test_the_summary_agrees_with_every_branch_walked() -> None:
    files = sorted(
        path
        for folder in ("conformance", "conformance_omp18", "conformance_omp183", "omp1823_recorded")
        for path in (CORPORA / folder).rglob("*.jsonl")
    )
    checked = summarised = 0
    for path in files:
        try:
            exact = session_stats(path, branches=True)
        except (SessionError, OSError):
            continue
        quick = session_stats(path, branches=False)
        assert quick.totals.to_dict() == exact.totals.to_dict(), path
        current = [branch for branch in exact.branches if branch.is_current]
        assert [b.to_dict() for b in quick.branches] == [b.to_dict() for b in current], path
        others = [branch for branch in exact.branches if not branch.is_current]
        summary = quick.other_branches
        if not others:
            assert summary is None, path
        else:
            assert summary is not None and summary.count == len(others), path
            sizes = [branch.totals.entries for branch in others]
            costs = [branch.totals.usage.cost for branch in others]
            assert (summary.min_entries, summary.max_entries) == (min(sizes), max(sizes)), path
            assert abs(summary.min_cost - min(costs)) < 1e-9 and abs(summary.max_cost - max(costs)) < 1e-9
            summarised += 1
        checked += 1
    assert checked > 100 and summarised > 10
