"""Snapshot tests: the exact text of ``show``, ``tree`` and ``export --format md`` (width 100, no colour).

A rendering change shows up as a reviewed diff of tests/cli/snapshots/ (UPDATE_SNAPSHOTS=1 rewrites).
"""

from __future__ import annotations

import pytest

from .conftest import Store, assert_snapshot, run

CASES = ["custom-roles", "v3-all-entry-types", "v3-branch-summaries", "v3-labels", "v3-multi-compaction"]


@pytest.mark.parametrize("case", CASES)
def test_show(store: Store, case: str) -> None:
    path = store.add(case)
    result = run("show", str(path))
    assert result.exit_code == 0, result.output
    assert_snapshot(f"show-{case}.txt", store.display(result.stdout))


def test_show_everything(store: Store) -> None:
    path = store.add("v3-all-entry-types")
    result = run("show", str(path), "--events", "--thinking", "--full")
    assert result.exit_code == 0, result.output
    assert_snapshot("show-v3-all-entry-types-events.txt", store.display(result.stdout))


def test_show_all_branches(store: Store) -> None:
    path = store.add("v3-branch-summaries")
    result = run("show", str(path), "--all-branches")
    assert result.exit_code == 0, result.output
    assert_snapshot("show-v3-branch-summaries-all.txt", store.display(result.stdout))


@pytest.mark.parametrize("case", [*CASES, "v3-orphans", "v3-duplicate-ids", "v3-compaction-kept-offpath"])
def test_tree(store: Store, case: str) -> None:
    result = run("tree", str(store.add(case)))
    assert result.exit_code == 0, result.output
    assert_snapshot(f"tree-{case}.txt", result.stdout)


def test_tree_full(store: Store) -> None:
    result = run("tree", str(store.add("v3-all-entry-types")), "--full")
    assert result.exit_code == 0, result.output
    assert_snapshot("tree-v3-all-entry-types-full.txt", result.stdout)


@pytest.mark.parametrize("case", CASES)
def test_export_markdown(store: Store, case: str) -> None:
    result = run("export", str(store.add(case)), "--format", "md")
    assert result.exit_code == 0, result.output
    assert_snapshot(f"export-{case}.md.txt", result.stdout)  # .txt: ruff formats .md files
