"""omp_session.model.context: build_session_context (spec §5), checklist items 1–14, 38, 54, 59–63."""

from __future__ import annotations

from typing import Any

import pytest

from omp_session import SessionManager
from omp_session.format.ids import iso_to_ms
from omp_session.model.context import (
    UNSET,
    SessionContext,
    context_from_path,
    entry_to_message,
)
from omp_session.model.tree import build_session_context
from tests.helpers import TS, assistant, contents, entry, msg, user

EMPTY = {
    "messages": [],
    "thinkingLevel": "off",
    "models": {},
    "injectedTtsrRules": [],
    "selectedMCPToolNames": [],
    "hasPersistedMCPToolSelection": False,
    "mode": "none",
}


def chain(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    """Link the given entries into one linear chain (ids kept, parentId rewritten)."""
    previous = None
    out = []
    for item in entries:
        out.append({**item, "parentId": previous})
        previous = item["id"]
    return out


def compaction(entry_id: str, kept: str | None, summary: str = "S", **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"summary": summary}
    if kept is not None:
        fields["firstKeptEntryId"] = kept
    fields["tokensBefore"] = 1000
    fields.update(extra)
    return entry(entry_id, None, "compaction", **fields)


def conversation(n: int) -> list[dict[str, Any]]:
    """u1, a1, u2, a2, ... as entries (not yet chained)."""
    out = []
    for i in range(1, n + 1):
        out.append(msg(f"u{i}", None, user(f"u{i}")))
        out.append(msg(f"a{i}", None, assistant(f"a{i}")))
    return out


# -- basics (checklist 1–5, 59) ------------------------------------------------------------------


def test_empty_entries() -> None:
    """Checklist 1."""
    context = build_session_context([])
    assert context.to_dict() == EMPTY
    assert build_session_context([], "anything").to_dict() == EMPTY


def test_single_user_message() -> None:
    """Checklist 2."""
    context = build_session_context(chain(msg("u1", None, user("hello"))))
    assert context.messages == [user("hello")]


def test_simple_conversation_in_order() -> None:
    """Checklist 3 and 59: all messages, thinking off, model from the last assistant."""
    entries = chain(*conversation(2))
    context = build_session_context(entries)
    assert [m["role"] for m in context.messages] == ["user", "assistant", "user", "assistant"]
    assert context.messages[1] is entries[1]["message"]  # the stored object, as-is
    assert context.thinking_level == "off"
    assert context.models == {"default": "anthropic/claude-sonnet-4-5"}


def test_thinking_level_change() -> None:
    """Checklist 4: sets the level, is not a message."""
    entries = chain(msg("u1", None, user()), entry("t", None, "thinking_level_change", thinkingLevel="high"))
    context = build_session_context(entries)
    assert context.thinking_level == "high" and len(context.messages) == 1


def test_thinking_level_null_means_off() -> None:
    entries = chain(
        entry("t1", None, "thinking_level_change", thinkingLevel="high"),
        entry("t2", None, "thinking_level_change", thinkingLevel=None),
    )
    assert build_session_context(entries).thinking_level == "off"


def test_default_model_from_assistant() -> None:
    """Checklist 5."""
    entries = chain(msg("a", None, assistant(provider="openai", model="gpt-5")))
    assert build_session_context(entries).models == {"default": "openai/gpt-5"}


def test_assistant_overrides_an_explicit_default_model() -> None:
    """Checklist 6 and 63 (13.19.0 behaviour): the assistant's model wins; thinking stays."""
    entries = chain(
        entry("m", None, "model_change", model="openai/gpt-5"),
        msg("a", None, assistant(provider="anthropic", model="claude")),
        entry("t", None, "thinking_level_change", thinkingLevel="high"),
    )
    context = build_session_context(entries)
    assert context.models == {"default": "anthropic/claude"} and context.thinking_level == "high"


def test_model_roles() -> None:
    entries = chain(
        entry("m1", None, "model_change", model="p/default-1"),
        entry("m2", None, "model_change", model="p/smol", role="smol"),
        entry("m3", None, "model_change", model="p/slow", role="slow"),
        entry("m4", None, "model_change", model="", role="slow"),  # empty model ignored
        entry("m5", None, "model_change", provider="openai", modelId="gpt-4"),  # legacy v1 ignored
        msg("a", None, assistant(provider="x", model="y")),  # overrides only "default"
        entry("m6", None, "model_change", model="p/default-2", role="default"),
    )
    context = build_session_context(entries)
    assert context.models == {"default": "p/default-2", "smol": "p/smol", "slow": "p/slow"}


def test_assistant_without_provider_uses_js_string_conversion() -> None:
    message = {"role": "assistant", "content": [], "model": "m", "timestamp": 1}
    assert build_session_context(chain(msg("a", None, message))).models == {"default": "undefined/m"}
    explicit_null = {**message, "provider": None, "model": 4.5e-7}  # `${null}/${4.5e-7}` in JavaScript
    assert build_session_context(chain(msg("a", None, explicit_null))).models == {"default": "null/4.5e-7"}


# -- leaf selection (checklist 10, 13, 14) -------------------------------------------------------


def tree_entries() -> list[dict[str, Any]]:
    #        u1 - a1 - u2 - a2        (branch A)
    #                \- u3 - a3       (branch B, appended last)
    return [
        msg("u1", None, user("u1")),
        msg("a1", "u1", assistant("a1")),
        msg("u2", "a1", user("u2")),
        msg("a2", "u2", assistant("a2")),
        msg("u3", "a1", user("u3")),
        msg("a3", "u3", assistant("a3")),
    ]


def test_follows_the_path_to_a_given_leaf() -> None:
    """Checklist 10."""
    entries = tree_entries()
    assert contents(build_session_context(entries, "a2").messages) == ["u1", "A:a1", "u2", "A:a2"]
    assert contents(build_session_context(entries, "a3").messages) == ["u1", "A:a1", "u3", "A:a3"]
    assert contents(build_session_context(entries, "a1").messages) == ["u1", "A:a1"]


@pytest.mark.parametrize("leaf", [UNSET, "", "unknown-id"])
def test_unset_empty_or_unknown_leaf_falls_back_to_the_last_entry(leaf: Any) -> None:
    """Checklist 13."""
    context = build_session_context(tree_entries(), leaf)
    assert contents(context.messages) == ["u1", "A:a1", "u3", "A:a3"]


def test_explicit_none_leaf_gives_the_empty_context() -> None:
    entries = [*tree_entries(), entry("t", "a3", "thinking_level_change", thinkingLevel="high")]
    assert build_session_context(entries, None).to_dict() == EMPTY


def test_orphan_leaf_gives_only_its_chain() -> None:
    """Checklist 14."""
    entries = [*tree_entries(), msg("orphan", "missing-parent", user("alone"))]
    assert contents(build_session_context(entries, "orphan").messages) == ["alone"]
    assert contents(build_session_context(entries).messages) == ["alone"]


def test_duplicate_ids_later_wins_in_the_default_index() -> None:
    entries = [msg("x", None, user("first")), msg("y", None, user("root2")), msg("x", "y", user("second"))]
    assert contents(build_session_context(entries, "x").messages) == ["root2", "second"]


# -- compaction (checklist 7–9, 12, 60–62) -------------------------------------------------------


def test_compaction_summary_then_kept_range_then_later() -> None:
    """Checklist 7 and 60: 5 messages, the first a compactionSummary containing the summary."""
    c = compaction("c", "u2", summary="the summary", shortSummary="short")
    entries = chain(*conversation(2), c, msg("u3", None, user("u3")), msg("a3", None, assistant("a3")))
    context = build_session_context(entries)
    assert len(context.messages) == 5
    first = context.messages[0]
    assert first == {
        "role": "compactionSummary",
        "summary": "the summary",
        "shortSummary": "short",
        "tokensBefore": 1000,
        "timestamp": iso_to_ms(TS),
    }
    assert contents(context.messages[1:]) == ["u2", "A:a2", "u3", "A:a3"]


def test_compaction_keeping_from_the_first_message() -> None:
    """Checklist 8 and 62."""
    entries = chain(*conversation(2), compaction("c", "u1"))
    context = build_session_context(entries)
    assert contents(context.messages) == ["compactionSummary", "u1", "A:a1", "u2", "A:a2"]


def test_only_the_last_compaction_counts() -> None:
    """Checklist 9 and 61."""
    entries = chain(
        *conversation(1),
        compaction("c1", "u1", summary="first"),
        msg("u2", None, user("u2")),
        msg("a2", None, assistant("a2")),
        compaction("c2", "u2", summary="second"),
        msg("u3", None, user("u3")),
    )
    context = build_session_context(entries)
    assert context.messages[0]["summary"] == "second"
    assert contents(context.messages) == ["compactionSummary", "u2", "A:a2", "u3"]


def test_kept_id_before_an_earlier_compaction_reincludes_older_messages() -> None:
    """§5 7.3 [verified]: two-compaction case => [C2, u1, a1, u2, a2, u3]."""
    entries = chain(
        *conversation(1),
        compaction("c1", "u1", summary="one"),
        msg("u2", None, user("u2")),
        msg("a2", None, assistant("a2")),
        compaction("c2", "u1", summary="two"),
        msg("u3", None, user("u3")),
    )
    context = build_session_context(entries)
    assert contents(context.messages) == ["compactionSummary", "u1", "A:a1", "u2", "A:a2", "u3"]
    assert [m.get("summary") for m in context.messages if m["role"] == "compactionSummary"] == ["two"]


@pytest.mark.parametrize("kept", [None, "unknown", "side", "after"])
def test_kept_id_not_before_the_compaction_on_the_path_keeps_nothing(kept: str | None) -> None:
    """Kept id absent, unknown, on another branch ("side") or after the compaction."""
    entries = [
        msg("u1", None, user("u1")),
        msg("a1", "u1", assistant("a1")),
        msg("side", "u1", user("side")),
        {**compaction("c", kept), "parentId": "a1"},
        msg("after", "c", user("after")),
    ]
    context = build_session_context(entries, "after")
    assert contents(context.messages) == ["compactionSummary", "after"]


def test_compaction_message_omits_absent_fields() -> None:
    c = entry("c", None, "compaction", summary="s")
    (message,) = build_session_context([c]).messages
    assert message == {"role": "compactionSummary", "summary": "s", "timestamp": iso_to_ms(TS)}


def test_compaction_on_another_branch_does_not_apply() -> None:
    """Checklist 12: compaction on one branch, branch summary on another, both contexts exact."""
    entries = [
        msg("u1", None, user("u1")),
        msg("a1", "u1", assistant("a1")),
        msg("u2", "a1", user("u2")),
        msg("a2", "u2", assistant("a2")),
        {**compaction("c", "u2", summary="compacted"), "parentId": "a2"},
        msg("u3", "c", user("u3")),
        entry("bs", "a1", "branch_summary", fromId="a2", summary="tried something"),
        msg("u4", "bs", user("u4")),
    ]
    on_compacted = build_session_context(entries, "u3")
    assert contents(on_compacted.messages) == ["compactionSummary", "u2", "A:a2", "u3"]
    on_summary = build_session_context(entries, "u4")
    assert contents(on_summary.messages) == ["u1", "A:a1", "branchSummary", "u4"]
    assert on_summary.messages[2] == {
        "role": "branchSummary",
        "summary": "tried something",
        "fromId": "a2",
        "timestamp": iso_to_ms(TS),
    }


def remote(provider: Any = "openai", history: Any = None) -> dict[str, Any]:
    items = [{"type": "message", "role": "user"}] if history is None else history
    return {"openaiRemoteCompaction": {"provider": provider, "replacementHistory": items}}


def test_remote_replacement_history_replaces_the_kept_range() -> None:
    c = compaction("c", "u1", preserveData=remote())
    entries = chain(*conversation(1), c, msg("u2", None, user("u2")))
    context = build_session_context(entries)
    assert contents(context.messages) == ["compactionSummary", "u2"]
    assert context.messages[0]["providerPayload"] == {
        "type": "openaiResponsesHistory",
        "provider": "openai",
        "items": [{"type": "message", "role": "user"}],
    }


@pytest.mark.parametrize(
    "preserve",
    [
        remote(provider=""),
        remote(provider=5),
        remote(history={"not": "a list"}),
        {"openaiRemoteCompaction": "nope"},
        {"other": 1},
        "not an object",
    ],
)
def test_invalid_remote_history_keeps_the_normal_kept_range(preserve: Any) -> None:
    c = compaction("c", "u1", preserveData=preserve)
    entries = chain(*conversation(1), c)
    context = build_session_context(entries)
    assert contents(context.messages) == ["compactionSummary", "u1", "A:a1"]
    assert "providerPayload" not in context.messages[0]


def test_empty_remote_history_list_is_still_a_replacement() -> None:
    c = compaction("c", "u1", preserveData=remote(history=[]))
    context = build_session_context(chain(*conversation(1), c))
    assert contents(context.messages) == ["compactionSummary"]
    assert context.messages[0]["providerPayload"]["items"] == []


# -- entry kinds that are or are not messages (checklist 11, 38, 42) -----------------------------


def test_branch_summary_with_empty_summary_emits_nothing() -> None:
    """Checklist 11 (and its empty-summary corner)."""
    entries = chain(
        msg("u1", None, user("u1")),
        entry("b1", None, "branch_summary", fromId="root", summary="kept"),
        entry("b2", None, "branch_summary", fromId="root", summary=""),
    )
    assert contents(build_session_context(entries).messages) == ["u1", "branchSummary"]


def test_non_message_entries_never_produce_messages() -> None:
    """Checklist 38 and 42: labels and custom entries are not in the context."""
    entries = chain(
        msg("u1", None, user("u1")),
        entry("l", None, "label", targetId="u1", label="L"),
        entry("cu", None, "custom", customType="x", data={"a": 1}),
        entry("si", None, "session_init", systemPrompt="p", task="t", tools=[]),
        entry("st", None, "service_tier_change", serviceTier="flex"),
        entry("mo", None, "mode_change", mode="plan"),
        entry("mc", None, "mcp_tool_selection", selectedToolNames=["a"]),
        entry("tt", None, "ttsr_injection", injectedRules=["r"]),
        entry("fu", None, "future_type", message=user("hidden")),
        msg("a1", None, assistant("a1")),
    )
    assert contents(build_session_context(entries).messages) == ["u1", "A:a1"]


def test_custom_message_entry_becomes_a_custom_message() -> None:
    e = entry(
        "cm",
        None,
        "custom_message",
        customType="handoff",
        content=[{"type": "text", "text": "t"}],
        display=False,
        details={"d": 1},
        attribution="user",
    )
    assert entry_to_message(e) == {
        "role": "custom",
        "customType": "handoff",
        "content": [{"type": "text", "text": "t"}],
        "display": False,
        "details": {"d": 1},
        "attribution": "user",
        "timestamp": iso_to_ms(TS),
    }
    bare = entry("cm", None, "custom_message", customType="x", content="c", display=True)
    assert entry_to_message(bare) == {
        "role": "custom",
        "customType": "x",
        "content": "c",
        "display": True,
        "timestamp": iso_to_ms(TS),
    }


def test_unparseable_entry_timestamp_gives_none() -> None:
    e = entry("b", None, "branch_summary", timestamp="garbage", fromId="root", summary="s")
    message = entry_to_message(e)
    assert message is not None and message["timestamp"] is None


def test_message_entries_pass_through_any_role() -> None:
    stored = {"role": "compactionSummary", "summary": "x", "timestamp": 1}
    assert entry_to_message(msg("m", None, stored)) is stored
    assert entry_to_message(entry("m", None, "message", message="not a dict")) is None


# -- state scan ----------------------------------------------------------------------------------


def test_ttsr_rules_deduplicated_in_first_seen_order() -> None:
    entries = chain(
        entry("t1", None, "ttsr_injection", injectedRules=["b", "a"]),
        entry("t2", None, "ttsr_injection", injectedRules=["a", "c", "b"]),
        entry("t3", None, "ttsr_injection", injectedRules=["c", "c", "d"]),
    )
    assert build_session_context(entries).injected_ttsr_rules == ["b", "a", "c", "d"]


def test_ttsr_rules_of_another_branch_are_ignored() -> None:
    entries = [
        msg("u", None, user()),
        entry("t1", "u", "ttsr_injection", injectedRules=["side"]),
        entry("t2", "u", "ttsr_injection", injectedRules=["main"]),
    ]
    assert build_session_context(entries).injected_ttsr_rules == ["main"]


def test_service_tier_set_and_cleared() -> None:
    set_tier = chain(entry("s1", None, "service_tier_change", serviceTier="flex"))
    assert build_session_context(set_tier).service_tier == "flex"
    assert build_session_context(set_tier).to_dict()["serviceTier"] == "flex"
    cleared = chain(*set_tier, entry("s2", None, "service_tier_change", serviceTier=None))
    assert build_session_context(cleared).service_tier is None
    assert "serviceTier" not in build_session_context(cleared).to_dict()


def test_mode_and_mode_data() -> None:
    with_data = chain(entry("m1", None, "mode_change", mode="plan", data={"file": "plan.md"}))
    context = build_session_context(with_data)
    assert (context.mode, context.mode_data) == ("plan", {"file": "plan.md"})
    assert context.to_dict()["modeData"] == {"file": "plan.md"}
    # a later mode_change without data clears modeData
    cleared = chain(*with_data, entry("m2", None, "mode_change", mode="plan_paused"))
    context = build_session_context(cleared)
    assert (context.mode, context.mode_data) == ("plan_paused", None)
    assert "modeData" not in context.to_dict()


def test_mcp_tool_selection_replaces_and_marks_persisted() -> None:
    entries = chain(
        entry("m1", None, "mcp_tool_selection", selectedToolNames=["a", "b"]),
        entry("m2", None, "mcp_tool_selection", selectedToolNames=["c"]),
    )
    context = build_session_context(entries)
    assert context.selected_mcp_tool_names == ["c"] and context.has_persisted_mcp_tool_selection
    empty = build_session_context(chain(entry("m", None, "mcp_tool_selection", selectedToolNames=[])))
    assert empty.selected_mcp_tool_names == [] and empty.has_persisted_mcp_tool_selection
    assert entries[1]["selectedToolNames"] is not context.selected_mcp_tool_names  # a copy


def test_state_before_a_compaction_still_applies() -> None:
    entries = chain(
        entry("t", None, "thinking_level_change", thinkingLevel="low"),
        entry("r", None, "ttsr_injection", injectedRules=["x"]),
        *conversation(1),
        compaction("c", None),
    )
    context = build_session_context(entries)
    assert context.thinking_level == "low" and context.injected_ttsr_rules == ["x"]
    assert context.models == {"default": "anthropic/claude-sonnet-4-5"}


def test_to_dict_shape() -> None:
    context = SessionContext(
        messages=[user()],
        thinking_level="high",
        models={"default": "a/b"},
        injected_ttsr_rules=["r"],
        service_tier="priority",
        mode="plan",
        mode_data={"k": 1},
        selected_mcp_tool_names=["t"],
        has_persisted_mcp_tool_selection=True,
    )
    assert context.to_dict() == {
        "messages": [user()],
        "thinkingLevel": "high",
        "models": {"default": "a/b"},
        "injectedTtsrRules": ["r"],
        "selectedMCPToolNames": ["t"],
        "hasPersistedMCPToolSelection": True,
        "mode": "plan",
        "serviceTier": "priority",
        "modeData": {"k": 1},
    }


def test_context_from_path_equals_build_on_a_linear_chain() -> None:
    entries = chain(*conversation(3), compaction("c", "u2"))
    assert context_from_path(entries) == build_session_context(entries)


# -- through the manager (checklist 54) ----------------------------------------------------------


def test_manager_context_follows_only_the_current_branch() -> None:
    """Checklist 54."""
    session = SessionManager.in_memory("/p")
    u1 = session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    session.append_message(user("branch A"))
    session.branch(u1)
    session.append_message(assistant("branch B"))
    assert contents(session.build_session_context().messages) == ["u1", "A:branch B"]
    session.reset_leaf()
    assert session.build_session_context().to_dict() == EMPTY


def test_long_path_is_linear_time() -> None:
    # 50 000 entries deep: a quadratic build (omp prepends per step) would take minutes.
    entries = [msg("e0", None, user("0"))] + [
        msg(f"e{i}", f"e{i - 1}", user(str(i))) for i in range(1, 50_000)
    ]
    context = build_session_context(entries)
    assert len(context.messages) == 50_000 and context.messages[-1]["content"] == "49999"


def test_assistant_model_string_conversion_of_non_strings() -> None:
    message = {"role": "assistant", "content": [], "provider": True, "model": 4, "timestamp": 1}
    assert build_session_context(chain(msg("a", None, message))).models == {"default": "true/4"}
