"""The context-state replay has one list of entry types; the offset index handles exactly those."""

from __future__ import annotations

from typing import Any

import pytest

from omp_session.model.context import CONTEXT_STATE_ENTRY_TYPES, SessionContext, _scan_state
from omp_session.store._indexed import builder
from omp_session.store._indexed.builder import IndexBuilder

# One entry of every type omp writes, with fields that would change the context if the type did.
_SAMPLES: dict[str, dict[str, Any]] = {
    "message": {"message": {"role": "assistant", "provider": "p", "model": "m", "content": []}},
    "thinking_level_change": {"thinkingLevel": "high"},
    "model_change": {"model": "p/m", "role": "smol"},
    "service_tier_change": {"serviceTier": "priority"},
    "compaction": {"summary": "s", "firstKeptEntryId": "x", "tokensBefore": 1},
    "ttsr_injection": {"injectedRules": ["r"]},
    "mcp_tool_selection": {"selectedToolNames": ["t"]},
    "mode_change": {"mode": "plan", "data": {"k": 1}},
    "label": {"targetId": "x", "label": "l"},
    "custom": {"customType": "c", "data": {"model": "p/m"}},
    "custom_message": {"customType": "c", "content": "x", "display": True},
    "branch_summary": {"fromId": "x", "summary": "s"},
    "session_info": {"name": "n"},
    "session_init": {"systemPrompt": "s", "task": "t"},
}


def _changes_state(kind: str) -> bool:
    context = SessionContext()
    compaction = _scan_state([{"type": kind, "id": "e", "parentId": None, **_SAMPLES[kind]}], context)
    return compaction is not None or context != SessionContext()


def test_the_table_lists_exactly_the_types_the_replay_reacts_to() -> None:
    assert {kind for kind in _SAMPLES if _changes_state(kind)} == CONTEXT_STATE_ENTRY_TYPES


def _changes_recorded_state(kind: str) -> bool:
    builder = IndexBuilder()
    builder.add({"type": kind, "id": "e", "parentId": None, **_SAMPLES[kind]}, 0, 1)
    return builder.state_ids[-1] != 0  # 0: the empty state every entry starts from


def test_the_offset_index_records_exactly_the_table() -> None:
    assert {kind for kind in _SAMPLES if _changes_recorded_state(kind)} == CONTEXT_STATE_ENTRY_TYPES


def _table_check_fails(table: frozenset[str]) -> bool:
    """Whether the two checks above fail against ``table`` (as they would if it were the table)."""
    replayed = {kind for kind in _SAMPLES if _changes_state(kind)}
    recorded = {kind for kind in _SAMPLES if _changes_recorded_state(kind)}
    return replayed != table or recorded != table


@pytest.mark.parametrize("kind", sorted(CONTEXT_STATE_ENTRY_TYPES))
def test_removing_any_type_from_the_table_fails_the_checks(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index builder dispatches on the table (``builder._STATEFUL``, derived from it at import);
    # the replay does not read it. Removed from both, one entry of the table makes the table and
    # the replay disagree, and (but for ``message``, whose case the builder inlines) the builder
    # stops recording that type.
    table = CONTEXT_STATE_ENTRY_TYPES - {kind}
    monkeypatch.setattr(builder, "_STATEFUL", (table - {"message"}) | {"label"})
    assert _table_check_fails(table)
    if kind != "message":
        assert not _changes_recorded_state(kind)
