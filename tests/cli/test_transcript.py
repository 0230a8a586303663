"""The display model shared by ``show``, the Markdown export and the HTML view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omp_session.errors import EntryNotFoundError
from omp_session.tools.resolve import AmbiguousEntryError
from omp_session.tools.transcript import build_items, load_transcript

from .conftest import CORPUS
from .sessions import agent_session

LOAD = CORPUS / "load"


def test_every_custom_role_becomes_its_own_kind() -> None:
    transcript = load_transcript(LOAD / "custom-roles.jsonl")
    items = transcript.branches[0].items
    assert [(i.kind, i.entry_id) for i in items] == [
        ("user", "r-u1"),
        ("bash", "r-b1"),
        ("bash", "r-b2"),
        ("python", "r-p1"),
        ("file_mention", "r-f1"),
        ("custom", "r-c1"),
        ("branch_summary", "r-bs"),
        ("compaction", "r-cs"),
        ("developer", "r-d1"),
        ("assistant", "r-a1"),
    ]  # the tool result r-t1 is attached to its call in r-a1
    bash = items[2].execution
    assert bash is not None
    assert (bash.code, bash.exit_code, bash.truncated, bash.excluded_from_context) == (
        "npm test",
        1,
        True,
        True,
    )
    files = items[4].files
    assert [(f.path, f.line_count, f.skipped_reason) for f in files] == [
        ("src/a.ts", 2, None),
        ("big.bin", None, "tooLarge"),
    ]
    assert (items[5].title, items[5].text, items[5].meta) == (
        "handoff",
        "handoff text",
        {"display": True, "attribution": "user"},
    )
    assert items[7].summary == "stored compaction summary message" and items[7].meta["tokensBefore"] == 77
    call = items[9].parts[0].tool_call
    assert call is not None and call.name == "read" and call.arguments == {"path": "src/a.ts"}
    assert call.result is not None and call.result.text == "export const a = 1;" and call.result.pruned


def test_labels_summaries_and_events(tmp_path: Path) -> None:
    transcript = load_transcript(LOAD / "v3-all-entry-types.jsonl")
    assert transcript.leaf_id == "cea680ec" and transcript.cwd == "/Users/alice/src/app"
    by_id = {item.entry_id: item for item in transcript.branches[0].items}
    assert by_id["6b88fc6b"].label == "plan"
    assert "5ded8390" not in by_id  # label entries are not items
    assert (
        by_id["df0bf762"].kind == "compaction" and by_id["df0bf762"].meta["shortSummary"] == "refactor plan"
    )
    assert by_id["2d116b38"].kind == "branch_summary" and by_id["2d116b38"].meta == {"fromId": "df0bf762"}
    assert by_id["7fcf227a"].kind == "event" and by_id["7fcf227a"].title == "model openai/gpt-5-mini (smol)"
    assert by_id["199117c7"].kind == "custom" and by_id["199117c7"].meta["display"] is False


def test_a_session_we_wrote_thinking_images_and_tool_results(tmp_path: Path) -> None:
    path, ids = agent_session(tmp_path)
    transcript = load_transcript(path, leaf_id=ids["answer"])
    user, first, answer = transcript.branches[0].items
    assert user.label == "question"
    image = user.parts[1]
    assert image.kind == "image" and image.mime_type == "image/png" and image.blob is not None
    assert [p.kind for p in first.parts] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_call",
        "tool_call",
    ]
    assert first.title == "anthropic/claude-sonnet-4-5" and first.meta["usage"]["input"] == 100
    ok, failed = (p.tool_call for p in first.parts[3:])
    assert (
        ok is not None
        and ok.result is not None
        and ok.result.text == "a.txt\nb.txt"
        and not ok.result.is_error
    )
    assert failed is not None and failed.result is not None and failed.result.is_error
    assert answer.text == "Two files: a.txt and b.txt. The picture is noise."


def test_the_default_branch_is_the_last_entry_in_the_file(tmp_path: Path) -> None:
    path, ids = agent_session(tmp_path)
    transcript = load_transcript(path)
    assert [i.entry_id for i in transcript.branches[0].items] == [ids["user"], ids["retry"]]


def test_a_result_without_its_call_is_an_item_of_its_own() -> None:
    entries = [
        {
            "type": "message",
            "id": "t1",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "nope",
                "toolName": "bash",
                "content": "x",
                "isError": True,
            },
        }
    ]
    (item,) = build_items(entries)
    assert (item.kind, item.title, item.meta["isError"], item.meta["toolCallId"]) == (
        "tool_result",
        "bash",
        True,
        "nope",
    )


def test_odd_shapes_never_fail() -> None:
    entries: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "m1",
            "message": {"role": "alien", "content": [{"type": "text", "text": "hi"}, 3]},
        },
        {"type": "message", "id": "m2", "message": {"role": "assistant", "content": None}},
        {"type": "future_kind", "id": "f1"},
        {"type": "message", "id": "m3", "message": "not a dict"},
    ]
    kinds = [(i.kind, i.title) for i in build_items(entries)]
    assert kinds == [
        ("other", "message with role 'alien'"),
        ("assistant", None),
        ("event", "future_kind entry"),
        ("event", "message entry"),
    ]


def test_all_branches_show_each_stretch_once() -> None:
    transcript = load_transcript(LOAD / "v3-branch-summaries.jsonl", all_branches=True)
    sections = [
        (b.leaf_id, b.is_current, b.joins_at, [i.entry_id for i in b.items]) for b in transcript.branches
    ]
    assert sections == [
        ("u0000005", True, None, ["b0000002", "u0000004", "a0000004", "b0000003", "u0000005"]),
        ("a0000002", False, None, ["u0000001", "a0000001", "u0000002", "a0000002"]),
        ("a0000003", False, "a0000001", ["b0000001", "u0000003", "a0000003"]),
    ]


def test_a_leaf_may_be_given_by_prefix_and_must_exist() -> None:
    transcript = load_transcript(LOAD / "v3-branch-summaries.jsonl", leaf_id="a0000003")
    assert [i.entry_id for i in transcript.branches[0].items] == [
        "u0000001",
        "a0000001",
        "b0000001",
        "u0000003",
        "a0000003",
    ]
    with pytest.raises(EntryNotFoundError, match="Entry nope not found"):
        load_transcript(LOAD / "v3-branch-summaries.jsonl", leaf_id="nope")
    with pytest.raises(AmbiguousEntryError):
        load_transcript(LOAD / "v3-branch-summaries.jsonl", leaf_id="a000")


def test_to_dict_is_plain_json_data() -> None:
    import json

    data = load_transcript(LOAD / "custom-roles.jsonl").to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["branches"][0]["items"][9]["parts"][0]["tool_call"]["result"]["tool_name"] == "read"
