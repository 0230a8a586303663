"""The context-state replay has one list of entry types; the offset index handles exactly those."""

from __future__ import annotations

from typing import Any

from omp_session.model.context import CONTEXT_STATE_ENTRY_TYPES, SessionContext, _scan_state
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
