"""Full-text search: what is searched, tree awareness, snippets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from omp_session.tools.search import SearchHit, compile_query, search_paths, search_sessions, snippet_of

from .conftest import CORPUS
from .sessions import agent_session

LOAD = CORPUS / "load"


def _by_entry(hits: list[SearchHit]) -> dict[str, SearchHit]:
    return {hit.entry_id: hit for hit in hits}


def test_hits_know_their_branch() -> None:
    hits = _by_entry(search_paths([LOAD / "v3-branch-summaries.jsonl"], "sort"))
    assert set(hits) == {"u0000001", "a0000001", "u0000002", "a0000002", "b0000001", "u0000003", "a0000003"}
    assert not any(hit.on_current_branch for hit in hits.values())
    assert hits["u0000002"].branch_leaf_id == "a0000002"
    assert hits["u0000003"].branch_leaf_id == "a0000003"
    assert hits["a0000001"].matches == 2  # "sort(xs): return sorted(xs)"
    current = search_paths([LOAD / "v3-branch-summaries.jsonl"], "delete")
    assert [(h.entry_id, h.on_current_branch, h.branch_leaf_id) for h in current] == [
        ("u0000005", True, "u0000005")
    ]


@pytest.mark.parametrize(
    ("query", "role"),
    [
        ("built in 3s", "bashExecution"),
        ("print(1+1)", "pythonExecution"),
        ("export const a", "fileMention"),
        ("handoff text", "custom"),
        ("stored branch summary", "branchSummary"),
        ("developer note", "developer"),
    ],
)
def test_every_kind_of_message_text_is_searched(query: str, role: str) -> None:
    hits = search_paths([LOAD / "custom-roles.jsonl"], query)
    assert role in {hit.role for hit in hits}


def test_thinking_tool_calls_and_results_are_searched(tmp_path: Path) -> None:
    path, ids = agent_session(tmp_path)
    assert [h.entry_id for h in search_paths([path], "two things")] == [ids["call"]]
    assert [h.entry_id for h in search_paths([path], "missing.txt")] == [ids["call"], ids["result2"]]
    hit = _by_entry(search_paths([path], "picture is noise"))[ids["answer"]]
    assert not hit.on_current_branch and hit.branch_leaf_id == ids["answer"]


def test_regex_and_case() -> None:
    path = LOAD / "v3-branch-summaries.jsonl"
    assert len(search_paths([path], r"(merge|bubble) sort", regex=True)) == 5
    assert search_paths([path], "(merge") == []  # literal by default: no regex error
    sensitive = compile_query("Merge", case_sensitive=True)
    assert [h.entry_id for h in search_sessions([path], sensitive)] == ["a0000003"]
    with pytest.raises(re.error):
        compile_query("(unclosed", regex=True)


def test_snippets_locate_the_match() -> None:
    text = "first line\n" + "x" * 100 + " the   NEEDLE\tis here " + "y" * 100
    match = re.search("needle", text, re.IGNORECASE)
    assert match is not None
    snippet, start, end = snippet_of(text, match)
    assert snippet[start:end] == "NEEDLE"
    assert snippet.startswith("…") and snippet.endswith("…") and "\n" not in snippet and "\t" not in snippet
    assert " the NEEDLE is here " in snippet
    for hit in search_paths([LOAD / "omp-large-real.jsonl"], "theme"):
        assert hit.snippet[hit.match_start : hit.match_end].lower() == "theme"


def test_broken_files_are_reported_and_progress_is_called(tmp_path: Path) -> None:
    errors: list[tuple[str, str]] = []
    seen: list[tuple[int, int]] = []
    paths = [CORPUS / "deviations" / "corrupt-first-line.jsonl", LOAD / "v3-labels.jsonl"]
    hits = list(
        search_sessions(
            paths, compile_query("branch"), progress=lambda d, t, _p: seen.append((d, t)), errors=errors
        )
    )
    assert {h.entry_id for h in hits} == {"l-u2", "l-u3"}
    assert [Path(p).name for p, _ in errors] == ["corrupt-first-line.jsonl"]
    assert seen == [(1, 2), (2, 2)]
