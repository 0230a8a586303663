"""What a big session's export remembers of its entries (issue 30 item 3): each entry classified
once, its own usage summed once, and the answers handed to the tree rows and the renderer. Each
remembered answer belongs to its entry alone and is what a fresh look at that entry gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.model.usage import UsageStatistics
from omp_session.rendering.entry_html import entry_html
from omp_session.rendering.entry_views import ToolCalls, entry_view
from omp_session.rendering.images import inline_images
from omp_session.rendering.windowed import _SUMMED, own_usage
from omp_session.rendering.windowed_open import open_windowed
from omp_session.rendering.windowed_tree import row_text
from omp_session.tools.entry_kinds import classify
from omp_session.tools.summary import entry_summary, one_line

from .support import PAGINATION, SAMPLES

_SESSIONS = sorted((SAMPLES / "sessions").glob("*/*.jsonl"))


def _open(path: Path) -> Any:
    return open_windowed(path, inline_images(SAMPLES / "blobs"))


@pytest.mark.parametrize("path", _SESSIONS, ids=lambda p: p.name)
def test_each_entry_keeps_its_own_class(path: Path) -> None:
    view = _open(path)
    before = [view.kind_at(position) for position in range(len(view.entries))]  # nothing kept yet
    kinds = view.kinds()
    assert kinds == before == [classify(entry) for entry in view.entries]
    assert view.kinds() is kinds  # made once
    for position, (entry, found) in enumerate(zip(view.entries, kinds, strict=True)):
        assert view.kind_at(position) is found
        # The fields are this entry's (or its message's), never another entry's of the same shape.
        assert found.fields is entry or found.fields is entry.get("message")
    assert len({id(found.fields) for found in kinds}) == len(kinds)
    assert len({found.kind for found in kinds}) > 1


def test_two_entries_of_one_shape_are_not_confused() -> None:
    view = _open(SAMPLES / "sessions" / PAGINATION)
    users = [p for p, found in enumerate(view.kinds()) if found.kind.value == "user"]
    assistants = [p for p, found in enumerate(view.kinds()) if found.kind.value == "assistant"]
    assert len(users) >= 2 and assistants
    first, second = users[:2]
    assert view.kind_at(first).fields is not view.kind_at(second).fields
    assert view.kind_at(assistants[0]).kind != view.kind_at(first).kind


@pytest.mark.parametrize("path", _SESSIONS, ids=lambda p: p.name)
def test_rows_usage_and_entries_are_those_of_a_fresh_look(path: Path) -> None:
    kept, fresh = _open(path), _open(path)
    kept.kinds()
    kept.own_usages()
    assert kept.own_usages() == [own_usage(entry) for entry in kept.entries]
    kept_tree, fresh_tree = kept.tree.get(), fresh.tree.get()
    assert kept_tree.slice(0, len(kept_tree.rows)) == fresh_tree.slice(0, len(fresh_tree.rows))
    assert kept._kinds is not None and fresh._kinds is None  # the fresh one classified as it went
    for position, entry in enumerate(kept.entries):
        found = kept.kind_at(position)
        assert row_text(entry, found) == row_text(entry)
        assert entry_summary(entry, 160, classified=found) == entry_summary(entry, 160)
        calls = ToolCalls({})
        key = kept.keys[position]
        given_html = entry_html(entry_view(key, entry, kept.images, calls, found))
        assert given_html == entry_html(entry_view(key, entry, kept.images, ToolCalls({})))
    assert kept.path_usage(kept.path_to(kept.leaf)) == fresh.path_usage(fresh.path_to(fresh.leaf))


def _usage_as_before(entry: dict[str, Any]) -> tuple[float, ...] | None:
    """``own_usage`` as it was before it skipped messages that carry no spend."""
    if entry.get("type") != "message":
        return None
    usage = UsageStatistics()
    usage.add_entry(entry)
    if usage == UsageStatistics():
        return None
    return tuple(float(getattr(usage, name) or 0.0) for name in _SUMMED)


_NUMBERS = st.one_of(st.integers(-5, 10**6), st.floats(0, 1e6), st.booleans(), st.none(), st.text(max_size=2))
_USAGE = st.fixed_dictionaries(
    {},
    optional={
        "input": _NUMBERS,
        "output": _NUMBERS,
        "cacheRead": _NUMBERS,
        "totalTokens": _NUMBERS,
        "premiumRequests": _NUMBERS,
        "cost": st.one_of(_NUMBERS, st.fixed_dictionaries({"total": _NUMBERS})),
    },
)
#: Roles that spend, often; others, and values no role is (a list cannot be hashed), now and then.
_ROLE = st.sampled_from(["assistant", "toolResult", "toolResult", "user", "custom", None, 3, ["toolResult"]])


@settings(max_examples=1000, deadline=None)
@given(
    entry_type=st.sampled_from(["message", "message", "message", "model_usage"]),
    role=_ROLE,
    tool=st.sampled_from(["task", "task", "read", None]),
    usage=_USAGE,
    where=st.sampled_from(["usage", "details", "both"]),
    message_kind=st.sampled_from(["dict", "dict", "dict", "list", "missing"]),
)
def test_own_usage_skips_only_messages_without_spend(
    entry_type: str, role: Any, tool: str | None, usage: dict[str, Any], where: str, message_kind: str
) -> None:
    message: dict[str, Any] = {"role": role}
    if tool is not None:
        message["toolName"] = tool
    if where in ("usage", "both"):
        message["usage"] = usage
    if where in ("details", "both"):
        message["details"] = {"usage": usage}
    entry: dict[str, Any] = {"type": entry_type, "usage": usage}
    if message_kind == "dict":
        entry["message"] = message
    elif message_kind == "list":
        entry["message"] = [message]
    assert own_usage(entry) == _usage_as_before(entry)


@given(st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\u200bab…"), max_size=40))
def test_one_line_collapses_as_the_pattern_did(text: str) -> None:
    assert one_line(text) == re.sub(r"\s+", " ", text).strip()
    flat = re.sub(r"\s+", " ", text).strip()
    assert one_line(text, 5) == (flat[:4].rstrip() + "…" if len(flat) > 5 else flat)
