"""SessionManager appends, labels, usage and agent-level flows (spec §6.3–§6.5; checklist 32–48,
55 in memory, 66–68 through direct manager calls)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session import EntryNotFoundError, SessionError, SessionManager, UsageStatistics
from omp_session.format.ids import iso_to_ms
from tests.helpers import assistant, contents, ids, read_lines, usage, user

ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
BASE = ["type", "id", "parentId", "timestamp"]


@pytest.fixture
def session() -> SessionManager:
    return SessionManager.in_memory("/proj")


def last(session: SessionManager) -> dict[str, Any]:
    leaf = session.get_leaf_entry()
    assert leaf is not None
    return leaf


# -- the chain (checklist 43, 48) ----------------------------------------------------------------


def test_append_message_chain(session: SessionManager) -> None:
    """Checklist 43 and 48: ids returned, first parent null, leaf follows every append."""
    assert session.get_leaf_id() is None
    returned = []
    for i in range(4):
        returned.append(session.append_message(user(str(i)) if i % 2 == 0 else assistant(str(i))))
        assert session.get_leaf_id() == returned[-1]
    entries = session.get_entries()
    assert ids(entries) == returned
    assert [e["parentId"] for e in entries] == [None, *returned[:-1]]
    assert all(ENTRY_ID.match(i) for i in returned) and len(set(returned)) == 4
    assert all(ISO.match(e["timestamp"]) for e in entries)
    assert list(entries[0]) == [*BASE, "message"]


def test_message_is_stored_by_reference(session: SessionManager) -> None:
    message = user("live")
    entry_id = session.append_message(message)
    assert session.get_entry(entry_id)["message"] is message  # type: ignore[index]


def test_get_entries_returns_a_new_list_of_live_entries(session: SessionManager) -> None:
    session.append_message(user())
    first = session.get_entries()
    assert isinstance(first, list)  # a session in memory: a list of its own
    first.clear()
    assert len(session.get_entries()) == 1
    assert session.get_entries()[0] is session.get_entries()[0]


# -- every entry type with its key order (checklist 44–47) ---------------------------------------


def test_thinking_level_change(session: SessionManager) -> None:
    """Checklist 44."""
    session.append_thinking_level_change("high")
    assert list(last(session)) == [*BASE, "thinkingLevel"] and last(session)["thinkingLevel"] == "high"
    session.append_thinking_level_change()
    assert last(session)["thinkingLevel"] is None  # written as null, not omitted


def test_model_change(session: SessionManager) -> None:
    """Checklist 45."""
    session.append_model_change("anthropic/claude")
    assert list(last(session)) == [*BASE, "model"] and last(session)["model"] == "anthropic/claude"
    session.append_model_change("openai/gpt", "smol")
    assert list(last(session)) == [*BASE, "model", "role"] and last(session)["role"] == "smol"


def test_compaction(session: SessionManager) -> None:
    """Checklist 46."""
    u1 = session.append_message(user())
    session.append_compaction("summary", None, u1, 1234)
    assert list(last(session)) == [*BASE, "summary", "firstKeptEntryId", "tokensBefore"]
    assert (last(session)["summary"], last(session)["firstKeptEntryId"], last(session)["tokensBefore"]) == (
        "summary",
        u1,
        1234,
    )
    session.append_compaction("s", "short", "not-validated", 1, {"d": 1}, True, {"p": 2})
    assert list(last(session)) == [
        *BASE,
        "summary",
        "shortSummary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "fromExtension",
        "preserveData",
    ]
    assert last(session)["firstKeptEntryId"] == "not-validated"


def test_custom_entry(session: SessionManager) -> None:
    """Checklist 47 (and 42: in the chain, in get_branch, not in the context)."""
    u1 = session.append_message(user("u1"))
    custom_id = session.append_custom_entry("my-ext", {"k": [1]})
    entry = last(session)
    assert list(entry) == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert (entry["customType"], entry["data"], entry["parentId"]) == ("my-ext", {"k": [1]}, u1)
    assert ids(session.get_branch()) == [u1, custom_id]
    assert contents(session.build_session_context().messages) == ["u1"]
    session.append_custom_entry("no-data")
    assert list(last(session)) == ["type", "customType", "id", "parentId", "timestamp"]


def test_custom_message_entry(session: SessionManager) -> None:
    session.append_custom_message_entry("handoff", "text", True)
    assert list(last(session)) == [
        "type",
        "customType",
        "content",
        "display",
        "attribution",
        "id",
        "parentId",
        "timestamp",
    ]
    assert last(session)["attribution"] == "agent"
    content = [{"type": "text", "text": "t"}]
    session.append_custom_message_entry("x", content, False, {"d": 1}, "user")
    entry = last(session)
    assert list(entry)[:6] == ["type", "customType", "content", "display", "details", "attribution"]
    assert (entry["content"], entry["display"], entry["details"], entry["attribution"]) == (
        content,
        False,
        {"d": 1},
        "user",
    )
    (_, second) = session.build_session_context().messages
    assert second["role"] == "custom" and second["attribution"] == "user"


def test_service_tier_mode_session_init(session: SessionManager) -> None:
    session.append_service_tier_change("flex")
    assert list(last(session)) == [*BASE, "serviceTier"] and last(session)["serviceTier"] == "flex"
    session.append_service_tier_change(None)
    assert last(session)["serviceTier"] is None
    session.append_mode_change("plan", {"f": 1})
    assert list(last(session)) == [*BASE, "mode", "data"]
    session.append_mode_change("none")
    assert list(last(session)) == [*BASE, "mode"]
    tools = ["read", "bash"]
    session.append_session_init("sys", "task", tools, {"type": "object"})
    assert list(last(session)) == [*BASE, "systemPrompt", "task", "tools", "outputSchema"]
    assert last(session)["tools"] == tools and last(session)["tools"] is not tools
    session.append_session_init("sys", "task", ())
    assert list(last(session)) == [*BASE, "systemPrompt", "task", "tools"] and last(session)["tools"] == []


def test_ttsr_and_mcp_selection(session: SessionManager) -> None:
    rules = ["a", "a", "b"]
    session.append_ttsr_injection(rules)
    assert list(last(session)) == [*BASE, "injectedRules"]
    assert last(session)["injectedRules"] == ["a", "a", "b"]  # stored as given, not deduplicated
    names = ["t1"]
    session.append_mcp_tool_selection(names)
    names.append("mutated")
    assert list(last(session)) == [*BASE, "selectedToolNames"] and last(session)["selectedToolNames"] == [
        "t1"
    ]
    context = session.build_session_context()
    assert context.injected_ttsr_rules == ["a", "b"] and context.selected_mcp_tool_names == ["t1"]


def test_branch_with_summary_none_creates_a_new_root(session: SessionManager) -> None:
    session.append_message(user("u1"))
    summary_id = session.branch_with_summary(None, "from the start")
    entry = last(session)
    assert entry["id"] == summary_id and entry["parentId"] is None and entry["fromId"] == "root"
    assert list(entry) == [*BASE, "fromId", "summary"]
    assert [r.entry["id"] for r in session.get_tree()][-1] == summary_id
    (message,) = session.build_session_context().messages
    assert message["role"] == "branchSummary" and message["fromId"] == "root"


def test_reset_leaf_then_append_starts_a_new_root(session: SessionManager) -> None:
    session.append_message(user("u1"))
    session.reset_leaf()
    assert session.get_leaf_id() is None and session.get_leaf_entry() is None
    new = session.append_message(user("u2"))
    assert session.get_entry(new)["parentId"] is None  # type: ignore[index]
    assert len(session.get_tree()) == 2


# -- labels (checklist 32–35, 39) ----------------------------------------------------------------


def test_set_label(session: SessionManager) -> None:
    """Checklist 32."""
    u1 = session.append_message(user())
    label_id = session.append_label_change(u1, "checkpoint")
    assert session.get_label(u1) == "checkpoint"
    entry = session.get_entry(label_id)
    assert entry is not None and list(entry) == [*BASE, "targetId", "label"]
    assert (entry["targetId"], entry["label"], entry["parentId"]) == (u1, "checkpoint", u1)
    assert session.get_leaf_id() == label_id  # the label joins the chain


@pytest.mark.parametrize("clear", [None, ""])
def test_clear_label(session: SessionManager, clear: str | None) -> None:
    """Checklist 33 (``undefined`` and ``""`` both clear)."""
    u1 = session.append_message(user())
    session.append_label_change(u1, "x")
    session.append_label_change(u1, clear)
    assert session.get_label(u1) is None
    entry = last(session)
    if clear is None:
        assert list(entry) == [*BASE, "targetId"]
    else:
        assert entry["label"] == ""


def test_last_label_wins(session: SessionManager) -> None:
    """Checklist 34."""
    u1 = session.append_message(user())
    for text in ("one", "two", "three"):
        session.append_label_change(u1, text)
    assert session.get_label(u1) == "three"


def test_labels_on_tree_nodes(session: SessionManager) -> None:
    """Checklist 35."""
    u1 = session.append_message(user())
    a1 = session.append_message(assistant())
    session.append_label_change(u1, "first")
    session.append_label_change(a1, "second")
    labels = {node.entry["id"]: node.label for root in session.get_tree() for node, _ in root.walk()}
    assert labels[u1] == "first" and labels[a1] == "second"


def test_label_on_unknown_entry_raises(session: SessionManager) -> None:
    """Checklist 39."""
    session.append_message(user())
    before = session.get_entries()
    with pytest.raises(EntryNotFoundError, match=r"^Entry non-existent not found$"):
        session.append_label_change("non-existent", "x")
    assert session.get_entries() == before


def test_label_of_an_entry_on_another_branch(session: SessionManager) -> None:
    u1 = session.append_message(user("u1"))
    a1 = session.append_message(assistant("a1"))
    session.branch(u1)
    session.append_message(assistant("other"))
    session.append_label_change(a1, "off-branch")
    assert session.get_label(a1) == "off-branch"


def test_labels_never_reach_the_context(session: SessionManager) -> None:
    """Checklist 38."""
    u1 = session.append_message(user("u1"))
    session.append_label_change(u1, "L")
    assert contents(session.build_session_context().messages) == ["u1"]


# -- create_branched_session in memory (checklist 36, 37, 55) ------------------------------------


def test_branched_session_in_memory_keeps_path_and_its_labels(session: SessionManager) -> None:
    u1 = session.append_message(user("u1"))
    a1 = session.append_message(assistant("a1"))
    u2 = session.append_message(user("u2"))
    session.branch(u1)
    side = session.append_message(assistant("side"))
    session.append_label_change(u1, "on path")
    session.append_label_change(side, "off path")
    session.append_label_change(a1, "also on path")
    old_id = session.get_session_id()

    assert session.create_branched_session(u2) is None
    assert session.get_session_file() is None and session.get_session_id() != old_id
    entries = session.get_entries()
    assert ids(entries[:3]) == [u1, a1, u2]
    labels = entries[3:]
    assert [e["type"] for e in labels] == ["label", "label"]  # checklist 36: two label entries
    assert [(e["targetId"], e["label"]) for e in labels] == [(u1, "on path"), (a1, "also on path")]
    assert [e["parentId"] for e in labels] == [u2, labels[0]["id"]]
    assert session.get_label(side) is None  # checklist 37
    assert session.get_leaf_id() == labels[1]["id"]
    assert contents(session.build_session_context().messages) == ["u1", "A:a1", "u2"]


def test_branched_session_unknown_id_raises(session: SessionManager) -> None:
    session.append_message(user())
    with pytest.raises(EntryNotFoundError, match="Entry ghost not found"):
        session.create_branched_session("ghost")


def test_branched_session_drops_label_entries_on_the_path_and_relinks(session: SessionManager) -> None:
    u1 = session.append_message(user("u1"))
    session.append_label_change(u1, "L")
    a1 = session.append_message(assistant("a1"))
    session.create_branched_session(a1)
    entries = session.get_entries()
    assert [e["type"] for e in entries] == ["message", "message", "label"]
    assert entries[1]["parentId"] == u1  # re-linked past the dropped label (omp orphans it)
    assert session.get_label(u1) == "L"


# -- usage statistics ----------------------------------------------------------------------------


def test_usage_over_all_branches_with_task_results(session: SessionManager) -> None:
    u1 = session.append_message(user())
    session.append_message(assistant(usage=usage(100, 10, cost=0.5, premium=1)))
    session.branch(u1)
    session.append_message(assistant(usage=usage(200, 20, cost=0.25)))
    task = {
        "role": "toolResult",
        "toolCallId": "t",
        "toolName": "task",
        "content": [],
        "isError": False,
        "details": {"usage": usage(7, 3, cost=0.125, premium=2)},
        "timestamp": 3,
    }
    session.append_message(task)
    session.append_message({**task, "toolName": "bash"})  # not a task: ignored
    session.append_message({**task, "details": {"usage": "junk"}})
    stats = session.get_usage_statistics()
    assert stats.to_dict() == {
        "input": 307,
        "output": 33,
        "cacheRead": 0,
        "cacheWrite": 0,
        "premiumRequests": 3,
        "cost": 0.875,
    }


def test_usage_missing_usage_or_cost_counts_as_zero(session: SessionManager) -> None:
    session.append_message(assistant())  # no usage at all
    session.append_message(assistant(usage=usage(5, 6)))  # no cost
    session.append_message(assistant(usage={"input": "many", "output": None, "cost": {"total": True}}))
    assert session.get_usage_statistics().to_dict() == {
        "input": 5,
        "output": 6,
        "cacheRead": 0,
        "cacheWrite": 0,
        "premiumRequests": 0,
        "cost": 0,
    }


def test_usage_statistics_are_a_copy(session: SessionManager) -> None:
    session.append_message(assistant(usage=usage(1, 1, cost=1.0)))
    stats = session.get_usage_statistics()
    stats.input += 1000
    assert session.get_usage_statistics().input == 1
    assert isinstance(stats, UsageStatistics)


def test_usage_statistics_of_entries() -> None:
    entries: list[dict[str, Any]] = [
        {"type": "message", "message": assistant(usage=usage(1, 2, cost=0.5))},
        {"type": "custom", "message": assistant(usage=usage(100, 100))},
        {"type": "message", "message": "not a dict"},
    ]
    assert UsageStatistics.of(entries).to_dict()["input"] == 1


# -- ids -----------------------------------------------------------------------------------------


def test_entry_ids_avoid_every_existing_id(session: SessionManager, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.format import ids

    first = session.append_message(user())
    values = iter([first, first, "abcdef12"])  # the first two draws collide with the first id
    monkeypatch.setattr(ids, "random_entry_suffix", lambda: next(values))
    second = session.append_message(user())
    assert second == "abcdef12" != first


# -- agent-level flows through the manager (checklist 66–68) -------------------------------------


def test_branching_from_the_first_message_starts_a_new_session_file(tmp_path: Path) -> None:
    """Checklist 66: /branch on the root user message = new_session(parent_session=old file)."""
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user("first"))
    session.append_message(assistant("answer"))
    old_file = session.get_session_file()
    assert old_file is not None and Path(old_file).exists()
    new_file = session.new_session(parent_session=old_file)
    assert new_file is not None and session.get_session_file() == new_file
    assert session.build_session_context().messages == []
    assert session.get_header()["parentSession"] == old_file
    assert Path(old_file).exists()
    session.close()


def test_branching_in_memory_has_no_session_file() -> None:
    """Checklist 66: in-memory mode keeps the session file undefined."""
    session = SessionManager.in_memory("/proj")
    session.append_message(user("first"))
    assert session.new_session() is None
    assert session.get_session_file() is None and session.build_session_context().messages == []


def test_branching_from_the_second_user_message_keeps_the_first_exchange(tmp_path: Path) -> None:
    """Checklist 66: /branch on u2 = create_branched_session(u2.parentId)."""
    session = SessionManager.create("/proj", tmp_path)
    session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    u2 = session.append_message(user("u2"))
    session.append_message(assistant("a2"))
    parent = session.get_entry(u2)["parentId"]  # type: ignore[index]
    new_file = session.create_branched_session(parent)
    assert new_file is not None and Path(new_file).exists()
    assert contents(session.build_session_context().messages) == ["u1", "A:a1"]
    session.close()


def test_tree_navigation_flows(session: SessionManager) -> None:
    """Checklist 67, session-relevant assertions."""
    u1 = session.append_message(user("u1"))
    a1 = session.append_message(assistant("a1"))
    u2 = session.append_message(user("u2"))
    a2 = session.append_message(assistant("a2"))

    # selecting the root user message: leaf = its parent = none
    session.reset_leaf()
    assert session.get_leaf_id() is None
    # selecting an assistant: leaf = it
    session.branch(a1)
    assert session.get_leaf_id() == a1
    # with summarize at the root: branch_summary parent is null, leaf = the summary
    root_summary = session.branch_with_summary(None, "abandoned everything")
    assert session.get_entry(root_summary)["parentId"] is None  # type: ignore[index]
    assert session.get_leaf_id() == root_summary
    # a nested user message: the summary is a sibling of that user message
    nested = session.branch_with_summary(a1, "abandoned u2")
    assert session.get_entry(nested)["parentId"] == session.get_entry(u2)["parentId"] == a1  # type: ignore[index]
    assert set(ids(session.get_children(a1))) == {u2, nested}
    # same-position navigation is a no-op
    before = session.get_entries()
    session.branch(nested)
    assert session.get_leaf_id() == nested and session.get_entries() == before
    assert session.get_entry(a2) is not None and session.get_entry(u1) is not None


@pytest.mark.parametrize("persistent", [True, False])
def test_compaction_entry_flow(tmp_path: Path, persistent: bool) -> None:
    """Checklist 68 (and 65): the compaction is persisted and gives a shorter context."""
    session = SessionManager.create("/proj", tmp_path) if persistent else SessionManager.in_memory("/proj")
    for i in range(3):
        session.append_message(user(f"u{i}"))
        session.append_message(assistant(f"a{i}"))
    kept = session.get_entries()[4]["id"]
    before = len(session.build_session_context().messages)
    comp_id = session.append_compaction("what happened so far", "short", kept, 12345)
    context = session.build_session_context()
    assert context.messages[0]["role"] == "compactionSummary"
    assert context.messages[0]["summary"] == "what happened so far"
    assert len(context.messages) < before + 1 and len(context.messages) == 3
    if persistent:
        file = session.get_session_file()
        assert file is not None
        (stored,) = [line for line in read_lines(Path(file)) if line.get("id") == comp_id]
        assert (
            stored["summary"] and isinstance(stored["firstKeptEntryId"], str) and stored["tokensBefore"] > 0
        )
        assert iso_to_ms(stored["timestamp"]) is not None
    session.close()


def test_every_error_is_a_session_error(session: SessionManager) -> None:
    calls: list[Callable[[], object]] = [
        lambda: session.branch("x"),
        lambda: session.append_label_change("x", "l"),
        lambda: session.branch_with_summary("x", "s"),
        lambda: session.create_branched_session("x"),
    ]
    for call in calls:
        with pytest.raises(SessionError, match="Entry x not found"):
            call()
