"""omp_session.format.migrate: v1 → v2 → v3 (spec §2.2), checklist items 40, 41 and 64."""

from __future__ import annotations

import itertools
import re
from collections.abc import Container
from pathlib import Path
from typing import Any

import pytest

from omp_session.format.ids import new_entry_id
from omp_session.format.migrate import header_version, migrate_records, migrate_v1_to_v2, migrate_v2_to_v3
from omp_session.model.tree import build_session_context
from omp_session.store.loading import load_session
from tests.helpers import jsonl

CORPUS = Path(__file__).parent / "conformance" / "load"
ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")


def counter_ids() -> Any:
    """Deterministic id source: id-0, id-1, ... (skipping used ones, like new_entry_id)."""
    numbers = itertools.count()

    def new_id(used: Container[str]) -> str:
        while True:
            candidate = f"id-{next(numbers)}"
            if candidate not in used:
                return candidate

    return new_id


def v1_file(*entries: dict[str, Any], **header_extra: Any) -> list[dict[str, Any]]:
    header = {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    header.update(header_extra)
    return [header, *(dict(e) for e in entries)]


USER = {
    "type": "message",
    "timestamp": "2025-01-01T00:00:01.000Z",
    "message": {"role": "user", "content": "q"},
}


def compaction(index: Any) -> dict[str, Any]:
    return {"type": "compaction", "summary": "S", "firstKeptEntryIndex": index, "tokensBefore": 10}


# -- header_version ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "version"),
    [
        ({}, 1),
        ({"version": None}, 1),
        ({"version": "3"}, 1),
        ({"version": True}, 1),
        ({"version": 2}, 2),
        ({"version": 3}, 3),
        ({"version": 9}, 9),
        ({"version": 2.0}, 2),
    ],
)
def test_header_version(header: dict[str, Any], version: int) -> None:
    assert header_version(header) == version


# -- v1 → v2 -------------------------------------------------------------------------------------


def test_v1_entries_get_ids_and_a_linear_chain_in_file_order() -> None:
    """Checklist 40: 8-char ids, linear parentIds, header version 3."""
    records = v1_file(USER, USER, USER)
    assert migrate_records(records, new_entry_id) == 1
    header, *entries = records
    assert header["version"] == 3
    assert all(ENTRY_ID.match(e["id"]) for e in entries)
    assert len({e["id"] for e in entries}) == 3
    assert [e["parentId"] for e in entries] == [None, entries[0]["id"], entries[1]["id"]]


def test_new_keys_are_appended_after_existing_keys() -> None:
    records = v1_file(USER)
    migrate_records(records, counter_ids())
    assert list(records[1]) == ["type", "timestamp", "message", "id", "parentId"]
    # the header keeps its keys in order and gets version at the end
    assert list(records[0]) == ["type", "id", "timestamp", "cwd", "version"]


def test_generated_ids_are_checked_against_each_other() -> None:
    # omp never fills the collision set during migration (§9 #11); we do.
    used_sets: list[set[str]] = []

    def colliding(used: Container[str]) -> str:
        assert isinstance(used, set)
        used_sets.append(set(used))
        return new_entry_id(used)

    records = v1_file(USER, USER, USER)
    migrate_v1_to_v2(records, colliding)
    assert [len(s) for s in used_sets] == [0, 1, 2]


def test_v1_header_fields_are_kept_but_not_converted() -> None:
    records = v1_file(
        USER,
        {"type": "model_change", "timestamp": "t", "provider": "openai", "modelId": "gpt-4"},
        provider="anthropic",
        modelId="claude",
        thinkingLevel="high",
        branchedFrom="/x.jsonl",
    )
    migrate_records(records, counter_ids())
    assert records[0]["provider"] == "anthropic" and records[0]["thinkingLevel"] == "high"
    assert records[2]["provider"] == "openai" and "model" not in records[2]
    context = build_session_context(records[1:])
    assert context.models == {} and context.thinking_level == "off"


@pytest.mark.parametrize(
    ("index", "kept"),
    [
        (1, "id-0"),  # the first entry (index 0 is the header)
        (2, "id-1"),
        (3, "id-2"),  # the compaction itself
        (0, None),  # the header
        (4, None),  # after the compaction: no id yet during the walk
        (5, None),  # out of range
        (99, None),
        (-1, None),
        (1.5, None),
        (2.0, "id-1"),
        (True, None),
        ("1", None),
        (None, None),
    ],
)
def test_first_kept_entry_index_edge_cases(index: Any, kept: str | None) -> None:
    records = v1_file(USER, USER, compaction(index), USER)
    migrate_records(records, counter_ids())
    result = records[3]
    assert "firstKeptEntryIndex" not in result
    assert result.get("firstKeptEntryId") == kept
    expected_tail = ["id", "parentId"] if kept is None else ["id", "parentId", "firstKeptEntryId"]
    assert list(result)[-len(expected_tail) :] == expected_tail


def test_kept_index_counts_the_header_on_a_real_v1_file() -> None:
    loaded = load_session(CORPUS / "v1-linear-compaction-index.jsonl")
    assert loaded.migrated_from == 1
    (comp,) = [e for e in loaded.entries if e["type"] == "compaction"]
    # firstKeptEntryIndex 6 = the 6th entry after the header
    assert comp["firstKeptEntryId"] == loaded.entries[5]["id"]


def test_kept_index_is_shifted_by_malformed_lines(tmp_path: Path) -> None:
    # Malformed lines are dropped before migration, so indices move (documented, §2.2 / §9 #11).
    records = v1_file(USER, USER, compaction(2))
    lines = jsonl(records).split(b"\n")
    data = b"\n".join([lines[0], b"garbage", *lines[1:]])
    path = tmp_path / "v1.jsonl"
    path.write_bytes(data)
    loaded = load_session(path)
    comp = loaded.entries[2]
    assert comp["firstKeptEntryId"] == loaded.entries[1]["id"]


# -- v2 → v3 -------------------------------------------------------------------------------------


def test_hook_message_role_becomes_custom_and_nothing_else_changes() -> None:
    hook = {"role": "hookMessage", "customType": "x", "content": "c", "display": True, "timestamp": 1}
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 2, "id": "s"},
        {"type": "message", "id": "a", "parentId": None, "message": dict(hook)},
        {"type": "custom_message", "id": "b", "parentId": "a", "role": "hookMessage"},
        {"type": "message", "id": "c", "parentId": "b", "message": {"role": "user", "content": "u"}},
    ]
    assert migrate_records(records, counter_ids()) == 2
    assert records[0] == {"type": "session", "version": 3, "id": "s"}
    assert records[1]["message"] == {**hook, "role": "custom"}
    assert records[1]["id"] == "a"  # v2 ids are kept
    assert records[2]["role"] == "hookMessage"  # only message entries are migrated
    assert records[3]["message"]["role"] == "user"


def test_v1_goes_through_both_steps() -> None:
    hook = {"type": "message", "message": {"role": "hookMessage", "content": "h"}}
    records = v1_file(hook)
    migrate_records(records, counter_ids())
    assert records[1]["message"]["role"] == "custom" and records[1]["id"] == "id-0"


def test_migrate_v2_to_v3_alone() -> None:
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 2, "id": "s"},
        {"type": "message", "message": None},
    ]
    migrate_v2_to_v3(records)
    assert records[0]["version"] == 3 and records[1] == {"type": "message", "message": None}


# -- idempotence, future versions ----------------------------------------------------------------


def test_v3_is_untouched() -> None:
    """Checklist 41: already-migrated entries keep their ids."""
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s"},
        {"type": "message", "id": "keep", "parentId": None, "message": {"role": "hookMessage"}},
    ]
    before = [dict(r) for r in records]
    assert migrate_records(records, counter_ids()) is None
    assert records == before


def test_v2_ids_survive_a_second_migration_run() -> None:
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 2, "id": "s"},
        {"type": "message", "id": "m", "parentId": None},
    ]
    migrate_records(records, counter_ids())
    snapshot = [dict(r) for r in records]
    assert migrate_records(records, counter_ids()) is None
    assert records == snapshot


@pytest.mark.parametrize("version", [4, 9, 100])
def test_future_versions_load_as_they_are(version: int) -> None:
    records = [{"type": "session", "version": version, "id": "s"}, {"type": "future_thing", "x": 1}]
    assert migrate_records(records, counter_ids()) is None
    assert records[0]["version"] == version and records[1] == {"type": "future_thing", "x": 1}


def test_empty_records() -> None:
    assert migrate_records([], counter_ids()) is None


def test_header_only_v1_file_is_migrated() -> None:
    records = v1_file()
    assert migrate_records(records, counter_ids()) == 1
    assert records == [
        {"type": "session", "id": "old", "timestamp": records[0]["timestamp"], "cwd": "/p", "version": 3}
    ]


# -- the large real v1 fixture (checklist 64) ----------------------------------------------------


def test_large_real_v1_fixture() -> None:
    loaded = load_session(CORPUS / "omp-large-real.jsonl")
    assert loaded.migrated_from == 1
    assert loaded.header["version"] == 3
    assert len(loaded.entries) == 1018
    assert len({e["id"] for e in loaded.entries}) == 1018
    assert sum(e["type"] == "message" for e in loaded.entries) == 914
    assert sum(e["type"] == "thinking_level_change" for e in loaded.entries) == 103
    context = build_session_context(loaded.entries)
    assert len(context.messages) == 914
    assert context.models == {"default": "anthropic/claude-sonnet-4-5"}
    assert context.thinking_level == "off"


def test_v1_ids_are_the_same_on_every_load(tmp_path: Path) -> None:
    """omp draws random ids for a v1 file on each load; ours are derived from the header."""
    from omp_session import SessionManager

    source = Path(__file__).parent / "conformance" / "load" / "v1-linear-compaction-index.jsonl"
    first = [e["id"] for e in SessionManager.open(source, read_only=True).get_entries()]
    second = [e["id"] for e in SessionManager.open(source, read_only=True).get_entries()]
    assert first == second and len(set(first)) == len(first)
    assert all(len(entry_id) == 8 and int(entry_id, 16) >= 0 for entry_id in first)
