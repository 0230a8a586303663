"""``show --all-branches`` walks each further tip only up to the branches already shown (issue 30:
it walked every tip's whole branch). The reference below is the definition, one ``get_branch`` per
tip; the transcript must give the same branches, items and join points on trees of every shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.generate import Shape, generate

from omp_session.tools.reading import read_session
from omp_session.tools.transcript import build_items, leaf_ids, session_transcript

from .conftest import CORPUS, run

CASES = ["v3-branch-summaries", "v3-labels", "v3-duplicate-ids", "v3-orphans", "v3-compaction-kept-offpath"]


def _reference(path: Path) -> list[tuple[str | None, str | None, list[str | None]]]:
    with read_session(path) as session:
        current = session.get_leaf_id()
        labels = session.get_labels()
        order = ([current] if current else []) + [leaf for leaf in leaf_ids(session) if leaf != current]
        shown: set[str] = set()
        found: list[tuple[str | None, str | None, list[str | None]]] = []
        for leaf in order:
            branch = session.get_branch(leaf)
            start = next((i for i, e in enumerate(branch) if e.get("id") not in shown), len(branch))
            fresh = branch[start:]
            shown.update(str(e.get("id")) for e in fresh)
            joins = branch[start - 1].get("id") if start else None
            found.append((leaf, joins, [item.entry_id for item in build_items(fresh, labels)]))
    return found


def _transcript(path: Path) -> list[tuple[str | None, str | None, list[str | None]]]:
    with read_session(path) as session:
        transcript = session_transcript(session, all_branches=True)
    return [(b.leaf_id, b.joins_at, [item.entry_id for item in b.items]) for b in transcript.branches]


@pytest.mark.parametrize("case", CASES)
def test_all_branches_as_defined_on_the_corpus(case: str) -> None:
    path = CORPUS / "load" / f"{case}.jsonl"
    assert _transcript(path) == _reference(path)


def test_all_branches_as_defined_on_a_generated_session(tmp_path: Path) -> None:
    path = tmp_path / "branched.jsonl"
    generate(path, Shape(0, target_messages=3000, branch_every=60, seed=7))
    expected = _reference(path)
    assert len(expected) > 20  # many tips
    assert _transcript(path) == expected


@pytest.mark.parametrize("width", [80, 120])
def test_show_all_branches_names_each_join(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    out = run("show", str(CORPUS / "load" / "v3-branch-summaries.jsonl"), "--all-branches").stdout
    rules = [line for line in out.splitlines() if "branch to" in line]
    assert [line.split(" ─")[0].strip("─ ") for line in rules] == [
        "branch to u0000005 (current), from the root",
        "branch to a0000002, from the root",  # the other root's tree
        "branch to a0000003, continuing after a0000001",
    ]
    assert all(len(line) == width for line in rules)
