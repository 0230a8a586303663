"""The entry checks of ``check`` (``tools/check_stream.EntryCollector``) against independent
references: the tree index's own rules for links and cycles, and the tool calls and results of
every root-to-leaf path, enumerated one by one, for tool pairing."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format.codec import decode_lines
from omp_session.model.tree import SessionIndex, SessionTreeNode
from omp_session.tools.check_stream import EntryCollector
from omp_session.tools.columns import ColumnStore

from .durability.fuzz_campaign import mutate

Entry = dict[str, Any]
CORPORA = [Path(__file__).resolve().parent / name / "load" for name in ("conformance", "conformance_omp18")]
CALL_IDS = ["c0", "c1", "c2", "c3"]


def _collected(entries: list[Entry], spill: bool = False) -> EntryCollector:
    # The id tables grow and probe past collisions; spilled, the columns are temporary files.
    collector = EntryCollector(table_slots=2, store=ColumnStore(spill=spill))
    for line, entry in enumerate(entries, start=2):
        collector.add(entry, line)
    return collector


@st.composite
def sessions(draw: st.DrawFn) -> list[Entry]:
    """A small tree of unique ids (some parents missing, some links looping back), with tool calls
    and results that pair up on some branches and not on others."""
    entries: list[Entry] = []
    for number in range(draw(st.integers(1, 12))):
        parent_kind = draw(st.integers(0, 9))
        parent: Any = None
        if number and parent_kind < 7:
            parent = f"e{draw(st.integers(0, number - 1))}"
        elif parent_kind == 7:
            parent = "gone"
        elif parent_kind == 8:
            parent = f"e{draw(st.integers(0, 11))}"  # may be later: a loop or an orphan
        role = draw(st.sampled_from(["user", "assistant", "toolResult"]))
        message: Entry = {"role": role, "content": []}
        if role == "assistant":
            calls = draw(st.lists(st.sampled_from(CALL_IDS), max_size=2))
            message["content"] = [
                {"type": "toolCall", "id": c, "name": "bash", "arguments": {}} for c in calls
            ]
        elif role == "toolResult":
            message["toolCallId"] = draw(st.sampled_from(CALL_IDS))
            message["toolName"] = "bash"
        stamp = f"2026-01-01T00:00:{draw(st.integers(0, 59)):02d}.000Z"
        entries.append(
            {
                "type": "message",
                "id": f"e{number}",
                "parentId": parent,
                "timestamp": stamp,
                "message": message,
            }
        )
    return entries


def _every_path(roots: list[SessionTreeNode]) -> list[list[Entry]]:
    paths: list[list[Entry]] = []
    stack = [(root, [root.entry]) for root in roots]
    while stack:
        node, path = stack.pop()
        if not node.children:
            paths.append(path)
        stack.extend((child, [*path, child.entry]) for child in node.children)
    return paths


def _unpaired_by_paths(entries: list[Entry]) -> set[tuple[Any, str, str]]:
    found: set[tuple[Any, str, str]] = set()
    for path in _every_path(SessionIndex(entries).get_tree()):
        opened: dict[str, Any] = {}
        answered: set[str] = set()
        for entry in path:
            message = entry["message"]
            for block in message["content"] if message["role"] == "assistant" else ():
                opened.setdefault(block["id"], entry["id"])
            if message["role"] == "toolResult":
                if message["toolCallId"] not in opened:
                    found.add((entry["id"], message["toolCallId"], "result-without-call"))
                answered.add(message["toolCallId"])
        found |= {
            (where, call, "call-without-result") for call, where in opened.items() if call not in answered
        }
    return found


@pytest.mark.parametrize("spill", [False, True])
@settings(max_examples=300, deadline=None)
@given(sessions())
def test_tool_pairing_equals_walking_every_path(spill: bool, entries: list[Entry]) -> None:
    collector = _collected(entries, spill)
    with collector.store:
        issues = collector.tool_issues(collector.cycle_roots())
    assert {(i.entry_id, i.tool_call_id, i.kind) for i in issues} == _unpaired_by_paths(entries)


def _reference_links(entries: list[Entry]) -> tuple[set[str], set[int]]:
    """Cycle roots and orphan positions by the tree index's rules."""
    index = SessionIndex(entries)
    orphans = {
        position
        for position, entry in enumerate(entries)
        if isinstance(entry.get("parentId"), str)
        and entry["parentId"]
        and entry["parentId"] != entry.get("id")
        and entry["parentId"] not in index.by_id
    }
    return index.cycle_roots(), orphans


def _collected_links(entries: list[Entry], spill: bool = False) -> tuple[set[str], set[int]]:
    collector = _collected(entries, spill)
    with collector.store:
        roots = collector.cycle_roots()
        names = {collector.id_of_number(number) for number in roots}
        orphans = {line - 2 for kind, line, _id, _what in collector.link_problems(roots) if kind == "orphan"}
    return names, orphans


@pytest.mark.parametrize("spill", [False, True])
@given(sessions())
@settings(max_examples=200, deadline=None)
def test_cycles_and_orphans_follow_the_tree_index(spill: bool, entries: list[Entry]) -> None:
    assert _collected_links(entries, spill) == _reference_links(entries)


def test_cycles_and_orphans_of_damaged_files_follow_the_tree_index() -> None:
    rng = random.Random(11)
    sources = [path.read_bytes() for corpus in CORPORA for path in sorted(corpus.glob("*.jsonl"))]
    for data in sources + [mutate(rng.choice(sources), rng) for _ in range(300)]:
        entries = decode_lines(data).records[1:]
        assert _collected_links(entries) == _reference_links(entries)
