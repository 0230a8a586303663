"""Each named deviation from omp's importers (docs/importers.md), checked on what it keeps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from omp_session.importers import claude_convert, codex_convert
from omp_session.importers.jsonl import iter_records
from tests.importers import corpus
from tests.importers.helpers import by_id, convert_case, path_ids


def _records(source: str, case: str) -> dict[int, dict]:  # type: ignore[type-arg]
    return dict(iter_records(corpus.FIXTURES / source / f"{case}.jsonl"))


def test_claude_compact_boundary_becomes_a_compaction_entry(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "compact_boundary")
    entries = by_id(converted)
    compaction = entries["claude-c1a0de08-0000-4000-8000-000000000005-compaction"]
    records = _records("claude", "compact_boundary")
    assert compaction["tokensBefore"] == 155000
    assert compaction["summary"] == records[6]["message"]["content"]
    assert compaction["parentId"] == "claude-c1a0de08-0000-4000-8000-000000000004-message-4"  # the old tip
    assert compaction["details"]["boundary"] == {"line": 5, "record": records[5]}
    assert converted.deviations[claude_convert.COMPACTION] == 1
    # one tree (omp splits it into two roots), and the context starts with the summary
    assert [e["id"] for e in converted.entries if e["parentId"] is None] == [converted.entries[0]["id"]]
    messages = converted.context().messages
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == compaction["summary"]
    assert [m["content"] for m in messages[1:] if m["role"] == "user"] == ["Now run the tests."]


def test_claude_split_response_is_one_message_with_usage_counted_once(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "split_blocks_shared_message_id")
    omp = convert_case(tmp_path / "omp", "claude", "split_blocks_shared_message_id", lossless=False)
    records = _records("claude", "split_blocks_shared_message_id")
    assistants = [e["message"] for e in converted.entries if e.get("message", {}).get("role") == "assistant"]
    assert [m["responseId"] for m in assistants] == ["msg_04_A", "msg_04_B", "msg_04_C"]
    first = assistants[0]
    assert [b["type"] for b in first["content"]] == ["thinking", "text", "toolCall"]
    assert first["stopReason"] == "toolUse"
    # usage: each response once, not once per record as omp does
    per_response = {
        r["message"]["id"]: r["message"]["usage"] for r in records.values() if r.get("type") == "assistant"
    }
    assert converted.usage().input == sum(u["input_tokens"] for u in per_response.values())
    assert omp.usage().input > converted.usage().input
    merged = next(e for e in converted.entries if e.get("message") is first)
    assert [s["line"] for s in merged["sourceRecords"]] == [2, 3, 4]


def test_claude_tool_use_result_becomes_tool_result_details(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "tool_roundtrip")
    records = _records("claude", "tool_roundtrip")
    results = [e["message"] for e in converted.entries if e.get("message", {}).get("role") == "toolResult"]
    assert [r["details"] for r in results] == [records[3]["toolUseResult"], records[5]["toolUseResult"]]


def test_claude_dropped_records_are_kept_in_place(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "unknown_records")
    records = _records("claude", "unknown_records")
    kept = {e["data"]["line"]: e for e in converted.entries if e.get("customType") == "claude_record"}
    assert {line: e["data"]["record"] for line, e in kept.items()} == {
        line: records[line] for line in (1, 2, 5, 7, 8, 10, 12, 13, 14, 15)
    }
    # a record of the uuid tree stays in the tree; the others form one chain of their own
    system = kept[7]
    assert system["parentId"] is not None and not system["parentId"].endswith("-record")
    # kept records never enter the context
    assert (
        converted.context().messages
        == convert_case(tmp_path / "omp", "claude", "unknown_records", lossless=False).context().messages
    )


def test_claude_sidechain_and_subagent_transcripts_are_kept(tmp_path: Path) -> None:
    staged, _ = corpus.stage("claude", "sidechain_subagent", tmp_path)
    subagents = staged.with_suffix("") / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a7f3c2e1.jsonl").write_text(
        json.dumps({"type": "user", "uuid": "s1", "message": {"role": "user", "content": "hi"}})
        + "\n"
        + json.dumps({"type": "assistant", "uuid": "s2", "parentUuid": "s1", "message": {"content": []}})
        + "\n"
    )
    converted = convert_case(tmp_path, "claude", "sidechain_subagent")
    sidechain = [e for e in converted.entries if e.get("customType") == "claude_record"]
    assert [e["data"]["line"] for e in sidechain] == [3, 4, 5, 6, 8]
    assert all(e["data"]["record"]["isSidechain"] for e in sidechain[:4])
    assert sidechain[4]["data"]["record"]["isMeta"] is True
    sub = [e for e in converted.entries if e.get("customType") == "claude_subagent_record"]
    assert [(e["data"]["file"], e["data"]["line"]) for e in sub] == [
        ("subagents/agent-a7f3c2e1.jsonl", 1),
        ("subagents/agent-a7f3c2e1.jsonl", 2),
    ]
    assert sub[1]["parentId"] == sub[0]["id"]


def test_claude_unparseable_lines_are_counted(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "malformed_lines")
    assert converted.stats.skipped_lines == [2, 5, 6, 16]


def test_codex_usage_comes_from_token_count(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "codex", "token_counts")
    assistants = [e["message"] for e in converted.entries if e.get("message", {}).get("role") == "assistant"]
    assert [(u["input"], u["cacheRead"], u["output"]) for u in (m["usage"] for m in assistants)] == [
        (952, 2048, 20),
        (28, 3072, 25),
    ]
    usage = converted.usage()
    assert (usage.input, usage.cacheRead, usage.output, usage.totalTokens) == (980, 5120, 45, 6145)
    assert converted.deviations[codex_convert.USAGE] == 2  # the repeated report (line 7) counted once


def test_codex_rollback_keeps_the_abandoned_turns_as_a_branch(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "codex", "rollback")
    entries = by_id(converted)
    texts = {e["id"]: e["message"]["content"][0].get("text") for e in converted.entries if "message" in e}
    on_path = [texts.get(i) for i in path_ids(converted)]
    # the model change and the effort's thinking level change, then the turns that stayed
    assert on_path == [None, None, "After rolling back everything.", "Fresh answer."]
    abandoned = [texts[i] for i in entries if i.startswith("codex-rollback-")]
    assert sorted(t for t in abandoned if t) == sorted(
        [
            "Turn 1.",
            "Answer 1.",
            "Turn 2.",
            "Answer 2.",
            "Turn 3.",
            "Answer 3.",
            "Turn 2 (redo).",
            "Answer 2 (redo).",
        ]
    )
    # "Turn 2 (redo)" branched where "Turn 2" did: from "Answer 1."
    by_text = {texts[i]: entries[i] for i in entries if texts.get(i)}
    assert (
        by_text["Turn 2 (redo)."]["parentId"] == by_text["Turn 2."]["parentId"] == by_text["Answer 1."]["id"]
    )
    positions = {e["id"]: n for n, e in enumerate(converted.entries)}
    assert all(positions[e["parentId"]] < positions[e["id"]] for e in converted.entries if e["parentId"])


def test_codex_compaction_tokens_before_from_the_last_token_count(tmp_path: Path) -> None:
    from omp_session.importers.codex import CodexSessionStore

    usage = {"input_tokens": 90000, "cached_input_tokens": 0, "output_tokens": 500, "total_tokens": 90500}
    records = [
        {
            "timestamp": "2025-10-02T08:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": "/w"},
        },
        {
            "timestamp": "2025-10-02T08:00:01.000Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        },
        {
            "timestamp": "2025-10-02T08:00:02.000Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {"total_token_usage": usage, "last_token_usage": usage},
            },
        },
        {"timestamp": "2025-10-02T08:00:03.000Z", "type": "compacted", "payload": {"message": "summary"}},
    ]
    rollout = tmp_path / ".codex" / "sessions" / "rollout-x.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
    store = CodexSessionStore(tmp_path / ".codex")
    converted = store.convert(store.info_for(str(rollout)))
    omp = store.convert(store.info_for(str(rollout)), lossless=False)
    assert [e["tokensBefore"] for e in converted.entries if e["type"] == "compaction"] == [90500]
    assert [e["tokensBefore"] for e in omp.entries if e["type"] == "compaction"] == [0]


def test_codex_every_dropped_record_is_kept(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "codex", "tools_events_unknown_malformed")
    records = _records("codex", "tools_events_unknown_malformed")
    kept = {
        e["data"]["line"]: e["data"]["record"]
        for e in converted.entries
        if e.get("customType") == "codex_record"
    }
    assert {15, 16, 17} <= set(kept)
    assert all(kept[line] == records[line] for line in kept)


def test_conversion_never_modifies_the_source(tmp_path: Path) -> None:
    for source, case in (("claude", "malformed_lines"), ("codex", "rollback")):
        staged, _ = corpus.stage(source, case, tmp_path / source)
        before = (hashlib.sha256(staged.read_bytes()).hexdigest(), staged.stat().st_mtime_ns)
        convert_case(tmp_path / source, source, case)
        assert (hashlib.sha256(staged.read_bytes()).hexdigest(), staged.stat().st_mtime_ns) == before


def test_claude_unknown_stop_reason_is_kept_as_omp_stop_details(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "api_errors_and_stop_reasons")
    omp = convert_case(tmp_path / "omp", "claude", "api_errors_and_stop_reasons", lossless=False)
    details = [
        (e["message"]["stopReason"], e["message"].get("stopDetails"))
        for e in converted.entries
        if e.get("message", {}).get("role") == "assistant"
    ]
    # omp collapses both to "error"; omp's own Anthropic provider keeps the reason as stopDetails
    assert ("error", {"type": "refusal"}) in details
    assert ("error", {"type": "model_context_window_exceeded"}) in details
    assert [d for _, d in details if d is not None] == [
        {"type": "refusal"},
        {"type": "model_context_window_exceeded"},
    ]
    assert converted.deviations[claude_convert.STOP_DETAILS] == 2
    assert not any("stopDetails" in e.get("message", {}) for e in omp.entries)


def test_claude_redacted_thinking_is_kept_in_place(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "claude", "thinking_signature")
    records = _records("claude", "thinking_signature")
    first = next(e["message"] for e in converted.entries if e.get("message", {}).get("role") == "assistant")
    assert [b["type"] for b in first["content"]] == [
        "thinking",
        "thinking",
        "redactedThinking",
        "thinking",
        "text",
    ]
    assert first["content"][2]["data"] == records[2]["message"]["content"][2]["data"]
    assert converted.deviations[claude_convert.REDACTED_THINKING] == 1


def test_claude_redacted_thinking_in_a_record_of_its_own_joins_its_response(tmp_path: Path) -> None:
    """Claude Code writes one block per record: omp skips a record holding only redacted thinking."""
    from omp_session.importers.claude_convert import convert_claude
    from omp_session.importers.stores import make_store

    def assistant(n: int, parent: str, block: dict, response: str = "msg_r") -> dict:  # type: ignore[type-arg]
        message = {"id": response, "model": "claude-x", "content": [block], "stop_reason": None}
        return {"type": "assistant", "uuid": f"a{n}", "parentUuid": parent, "message": message}

    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "cwd": "/w", "message": {"content": "hi"}},
        assistant(1, "u1", {"type": "redacted_thinking", "data": "ENC1"}),
        assistant(2, "a1", {"type": "text", "text": "answer"}),
        assistant(3, "a2", {"type": "redacted_thinking", "data": "ENC2"}),
        assistant(4, "a3", {"type": "redacted_thinking", "data": "ENC3"}, response="msg_other"),
    ]
    transcript = tmp_path / "projects" / "-w" / "5e551011-0000-4000-8000-00000000f001.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    store = make_store("claude", root=str(tmp_path), env={"HOME": str(tmp_path)})
    info = store.info_for(str(transcript))
    converted = convert_claude(info, mtime_ms=0)
    omp = convert_claude(info, mtime_ms=0, lossless=False)
    [message] = [e["message"] for e in converted.entries if e.get("message", {}).get("role") == "assistant"]
    assert message["content"] == [
        {"type": "redactedThinking", "data": "ENC1"},
        {"type": "text", "text": "answer"},
        {"type": "redactedThinking", "data": "ENC2"},
    ]
    # the ids omp gives are unchanged, and each skipped record is still kept whole
    assert {e["id"] for e in omp.entries} <= {e["id"] for e in converted.entries}
    kept = [e["data"]["record"]["uuid"] for e in converted.entries if e.get("customType") == "claude_record"]
    assert kept == ["a1", "a3", "a4"]


def test_codex_failed_commands_give_error_results(tmp_path: Path) -> None:
    """omp's importer writes ``isError: false`` for every function output; omp's own tools mark a
    failed command as an error: from ``exec_command_end``/``patch_apply_end`` or the output's
    ``metadata.exit_code``."""
    from omp_session.importers.stores import make_store

    def item(payload: dict) -> dict:  # type: ignore[type-arg]
        return {"timestamp": "2025-10-02T08:00:00.000Z", "type": "response_item", "payload": payload}

    def event(payload: dict) -> dict:  # type: ignore[type-arg]
        return {"timestamp": "2025-10-02T08:00:00.000Z", "type": "event_msg", "payload": payload}

    def call(call_id: str) -> dict:  # type: ignore[type-arg]
        return item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": call_id})

    def output(call_id: str, text: str) -> dict:  # type: ignore[type-arg]
        return item({"type": "function_call_output", "call_id": call_id, "output": text})

    meta = {
        "id": "0199c0de-0002-7000-8000-0000000000e1",
        "cwd": "/w",
        "timestamp": "2025-10-02T08:00:00.000Z",
    }
    records = [
        {"timestamp": "2025-10-02T08:00:00.000Z", "type": "session_meta", "payload": meta},
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        call("ok"),
        event({"type": "exec_command_end", "call_id": "ok", "exit_code": 0}),
        output("ok", "fine"),
        call("bad"),
        event({"type": "exec_command_end", "call_id": "bad", "exit_code": 2}),
        output("bad", "boom"),
        call("meta"),
        output("meta", json.dumps({"output": "x", "metadata": {"exit_code": 1}})),
        call("patch"),
        event({"type": "patch_apply_end", "call_id": "patch", "success": False}),
        output("patch", "rejected"),
    ]
    rollout = (
        tmp_path
        / ".codex"
        / "sessions"
        / "rollout-2025-10-02T08-00-00-0199c0de-0002-7000-8000-0000000000e1.jsonl"
    )
    rollout.parent.mkdir(parents=True)
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
    store = make_store("codex", env={"HOME": str(tmp_path)})
    info = store.info_for(str(rollout))

    def errors(lossless: bool) -> dict[str, bool]:
        converted = store.convert(info, lossless=lossless)
        results = [
            e["message"] for e in converted.entries if e.get("message", {}).get("role") == "toolResult"
        ]
        return {m["toolCallId"]: m["isError"] for m in results}

    assert errors(True) == {"ok": False, "bad": True, "meta": True, "patch": True}
    assert errors(False) == {"ok": False, "bad": False, "meta": False, "patch": False}
    assert store.convert(info).deviations[codex_convert.TOOL_ERROR] == 3


def test_codex_effort_changes_become_thinking_level_changes(tmp_path: Path) -> None:
    converted = convert_case(tmp_path, "codex", "model_changes")
    omp = convert_case(tmp_path / "omp", "codex", "model_changes", lossless=False)
    records = _records("codex", "model_changes")
    efforts = [(n, r["payload"].get("effort")) for n, r in records.items() if r.get("type") == "turn_context"]
    changes = [e for e in converted.entries if e["type"] == "thinking_level_change"]
    expected: list[tuple[int, str]] = []
    for line, effort in efforts:  # a repeated effort adds nothing, like a repeated model
        if isinstance(effort, str) and (not expected or expected[-1][1] != effort):
            expected.append((line, effort))
    assert [(int(e["id"].rsplit("-", 1)[1]), e["thinkingLevel"]) for e in changes] == expected
    assert all(e["configured"] is None for e in changes)
    # omp's own ids are all still there, numbered as omp numbers them
    assert [e["id"] for e in omp.entries] == [e["id"] for e in converted.entries if e["id"] in by_id(omp)]
    assert converted.context().thinking_level == expected[-1][1]
    assert converted.deviations[codex_convert.THINKING_LEVEL] == len(expected)
